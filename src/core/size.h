/* Sizes computed from user shapes and strides (element counts, byte sizes, workspace regions)
 * saturate instead of wrapping: a product or sum that passes 2^64 - 1 stays at LIG_SIZE_HUGE,
 * and so does everything computed from it, so that one check at the end of a computation
 * catches an overflow anywhere in it. Whatever exceeds LIG_SIZE_LIMIT does not fit: offsets
 * are int64_t throughout. */
#ifndef LIG_CORE_SIZE_H
#define LIG_CORE_SIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"

#define LIG_SIZE_HUGE UINT64_MAX
#define LIG_SIZE_LIMIT ((uint64_t)INT64_MAX)

static inline uint64_t lig_size_mul(uint64_t a, uint64_t b) {
    return a != 0 && b > LIG_SIZE_HUGE / a ? LIG_SIZE_HUGE : a * b;
}

static inline uint64_t lig_size_mul3(uint64_t a, uint64_t b, uint64_t c) { return lig_size_mul(lig_size_mul(a, b), c); }

static inline uint64_t lig_size_add(uint64_t a, uint64_t b) {
    return a > LIG_SIZE_HUGE - b ? LIG_SIZE_HUGE : a + b;
}

/* x rounded up to a multiple of the power of two `align`. */
static inline uint64_t lig_size_align(uint64_t x, uint64_t align) {
    return x > LIG_SIZE_HUGE - (align - 1) ? LIG_SIZE_HUGE : (x + align - 1) & ~(align - 1);
}

/* x rounded up like lig_size_align, as an int64_t extent: saturates at INT64_MAX, an extent
 * whose byte count (at least two bytes an element) then saturates too. */
static inline int64_t lig_size_round_up(uint64_t x, uint64_t align) {
    const uint64_t r = lig_size_align(x, align);
    return r > LIG_SIZE_LIMIT ? INT64_MAX : (int64_t)r;
}

static inline bool lig_size_fits(uint64_t x) { return x <= LIG_SIZE_LIMIT; }

/* LIG_SUCCESS when `size` fits; otherwise LIG_ERR_PARAM_INVALID with the message
 * "<operand>: expected <what> below 2^63, got <size or an overflow> (<detail>)". */
lig_status lig_size_check(uint64_t size, const char *operand, const char *what, const char *detail);

#endif
