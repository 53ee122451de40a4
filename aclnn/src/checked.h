/* int64 arithmetic that reports overflow instead of wrapping (shapes and strides come from users). */
#ifndef LIG_ACLNN_CHECKED_H
#define LIG_ACLNN_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

static inline bool fe_mul_ok(int64_t a, int64_t b, int64_t *r) {
    if (a == 0 || b == 0) {
        *r = 0;
        return true;
    }
    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a) : (b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b))
        return false;
    *r = a * b;
    return true;
}

static inline bool fe_add_ok(int64_t a, int64_t b, int64_t *r) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return false;
    *r = a + b;
    return true;
}

#endif /* LIG_ACLNN_CHECKED_H */
