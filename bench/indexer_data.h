#ifndef LIG_BENCH_INDEXER_DATA_H
#define LIG_BENCH_INDEXER_DATA_H

/* The quantized-forward benchmarks' data (lig-quant-bench, lig-decode-bench): realistic indexer
 * inputs in bf16, their DeepSeek act_quant quantization to FP8 e4m3 / INT8, the float64 reference
 * of one row's scores, the check of a row's selection against it, and the recall of one selection
 * against another. bench/indexer_data.c explains the data. */
#include <stddef.h>
#include <stdint.h>

#include "lig.h"

typedef struct bench_rng {
    uint64_t s;
} bench_rng;

double bench_uniform(bench_rng *r);  /* [0, 1) */
double bench_gaussian(bench_rng *r); /* N(0, 1) */

/* The keys' shared direction: a unit vector of D values, the same for every seed's data. */
void bench_key_direction(double *dir, int64_t D);
/* n key rows of D bf16 values: noise + a shared component along dir. */
void bench_make_keys(uint16_t *k, int64_t n, int64_t D, const double *dir, bench_rng *r);
/* One query row (N1 heads of D bf16 values) that sees the first vis rows of keys: noise, a share of
 * dir, and for each head the sum of a few of the row's focus keys (drawn among the visible ones). */
void bench_make_query_row(uint16_t *q, int64_t N1, int64_t D, const uint16_t *keys, int64_t vis, const double *dir,
                          bench_rng *r);
/* One row's N1 head weights, fp32. */
void bench_make_weights(float *w, int64_t N1, int64_t D, bench_rng *r);

/* DeepSeek's act_quant of n bf16 values (one block: a token's head): the scale amax / 448 (FP8) or
 * amax / 127 (INT8), amax clamped to 1e-4, and the codes of x / scale (FP8 round to nearest even,
 * saturating; INT8 round to nearest, clamped to +-127). Returns the scale. */
float bench_act_quant(lig_dtype qk, const uint16_t *x, int64_t n, uint8_t *codes);
/* The value of a code (INT8 or FLOAT8_E4M3FN) or of a bf16 value (LIG_BFLOAT16, `code` its bits). */
double bench_value(lig_dtype dt, uint16_t code);

/* The float64 scores of one row against keys [0, vis): I[s] = sum_h w[h] ReLU(sk[s] q_h . k_s), q and
 * k of dtype dt (bf16 values or codes), sk NULL for 1; and each score's bound, 2 (D + N1 + 4) 2^-24
 * sum_h |w sk q_h . k_s|_abs (fp32 accumulation, contract 2.4). */
void bench_ref_scores(lig_dtype dt, const void *q, const float *w, const void *keys, const float *sk, int64_t vis,
                      int64_t N1, int64_t D, double *ref, double *bound);
/* One row's output (idx[K], val[K]) against the reference of its vis keys: indices distinct and
 * visible, values descending and within their bound, -1 / -inf padding past min(K, vis), and no key
 * left out scoring above the lowest kept one by more than both bounds. 1 when it passes, else 0 and a
 * message. */
int bench_check_row(const int32_t *idx, const float *val, int64_t K, const double *ref, const double *bound,
                    int64_t vis, char *msg, size_t cap);
/* The share of the keys `want` selected (its entries >= 0, at most K) that `got` selected too; 1 when
 * want is empty. */
double bench_recall(const int32_t *got, const int32_t *want, int64_t K);

#endif
