/*
 * libFuzzer target: the indexer's dense softmax log-sum-exp over compressed keys
 * (lig_dense_indexer_softmax_lse, docs/contract.md 2.7) through the public C API.
 *
 * An input decodes to: threads and kernel set; the layout (BSND with or without lengths, TND
 * cumulative ends with rows past the last end); B 0..3 (TND 1..3), S1 0..12 (up to 300 now and
 * then, so that ratio 128 sees whole blocks), S2 0..12, N2 1..2, N1 = N2 x 0..3, D 0..17; the
 * dtype (FLOAT32, FLOAT16, BFLOAT16), the weights' (the query's or FLOAT32) and the lengths'
 * (INT32, INT64); mask_mode 0 or 3; cmp_ratio 1..128 (small ones and 128 favoured), residuals or
 * none; the strides (contiguous, padded, permuted); the magnitude (1 or 30, where the running max
 * matters); then a seed for the data (tests/harness/dense_lse_case.h). With a defect byte, one
 * argument is broken (mask_mode 1/2/-1, cmp_ratio 0 or 129, a residual at cmp_ratio or -1), and
 * phase 1 must refuse it with PARAM_INVALID, a message naming it, and nothing written. Success
 * must match the float64 reference in every element, bytes past the view untouched.
 *
 * A last byte (absent: 0) with its low bit set runs the dense KL gradient on the lse just computed,
 * as DeepSeek-V4's pipeline does (lig_dense_indexer_kl_loss_grad, contract 2.9,
 * tests/harness/dense_kl_case.h): its other bits choose the non-deterministic mode, no loss,
 * FLOAT32 d_weights and 0..3 extra target columns; every output must match the float64 reference.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dense_kl_case.h"
#include "float_formats.h"
#include "fuzz_case.h"
#include "fuzz_compressed.h"
#include "fuzz_input.h"
#include "framework.h"

static void decode_desc(fz_in *in, lse_desc *d) {
    memset(d, 0, sizeof *d);
    d->label = "fuzz";
    const uint8_t f = fz_u8(in);
    fz_cmp_common c;
    fz_cmp_decode_common(in, f, &c);
    d->tnd = c.tnd;
    d->lengths = c.lengths;
    d->residual = c.residual;
    d->mask_mode = c.mask_mode;
    d->len_dtype = c.len_dtype;
    d->B = c.B;
    d->S1 = c.S1;
    d->scale = f & 32 ? 30 : 1;
    d->S2 = fz_range(in, 0, 12);
    d->N2 = fz_range(in, 1, 2);
    d->N1 = d->N2 * fz_range(in, 0, 3);
    d->D = fz_range(in, 0, 17);
    d->dtype = fz_cmp_float_dtype(in);
    d->w_dtype = fz_u8(in) & 1 ? LIG_FLOAT32 : d->dtype;
    d->ratio = fz_cmp_ratio(fz_u8(in));
    d->strides = fz_cmp_strides(in);
}

/* The lse, then the KL gradient on it: both checked against the float64 references. */
static int run_kl_grad(const lse_desc *d, uint64_t seed, uint8_t mode, const char *env, int before) {
    char label[512];
    kl_case c;
    lig_status st;
    kl_case_make(&c, d, seed, (mode >> 4) & 3, (mode & 8) != 0, &st);
    c.deterministic = (mode & 2) == 0;
    c.with_loss = (mode & 4) == 0;
    snprintf(label, sizeof label, "kl grad %s B=%lld S1=%lld S2=%lld N1=%lld N2=%lld D=%lld %s w=%s mask=%lld r=%lld%s%s %s mode=%d",
             d->tnd ? "TND" : d->lengths ? "BSND+lengths" : "BSND", (long long)d->B, (long long)d->S1, (long long)d->S2,
             (long long)d->N1, (long long)d->N2, (long long)d->D, th_dtype_name(d->dtype), th_dtype_name(d->w_dtype),
             (long long)d->mask_mode, (long long)d->ratio, d->residual ? " +res" : "", d->scale > 1 ? " x30" : "", env,
             (int)mode);
    fuzz_stats *stats = fz_stats();
    stats->iterations++;
    if (CHECK(st == LIG_SUCCESS, "%s: lse status %d (%s)", label, (int)st, lig_get_last_error())) {
        lse_case_check(&c.in, label);
        st = kl_case_call(&c);
        if (CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) {
            stats->successes++;
            if (fz_perturb() && tbuf_numel(&c.sm) > 0) /* the check below must notice one changed element */
                tbuf_write(&c.sm, 0, tbuf_read(&c.sm, 0) + 1.0);
            kl_case_check(&c, label);
        }
    }
    kl_case_free(&c);
    fz_reset_env();
    fz_verdict(before, label);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in;
    const int before = fz_begin(&in, data, size);
    char env[96], label[512];
    fz_decode_env(&in, env, sizeof env);
    lse_desc d;
    decode_desc(&in, &d);
    const uint8_t defect_byte = fz_u8(&in);
    const int defect = fz_cmp_defect_kind(defect_byte, FZ_CMP_OWN);
    const uint64_t seed = fz_u32(&in);
    const uint8_t kl = fz_u8(&in);
    if (defect == FZ_CMP_NONE && (kl & 1)) return run_kl_grad(&d, seed, kl, env, before);
    lse_case c;
    lse_case_make(&c, &d, seed);
    const char *names = fz_cmp_break(defect, defect_byte, &c.d.mask_mode, &c.d.ratio, &c.len, d.len_dtype);
    snprintf(label, sizeof label, "lse %s B=%lld S1=%lld S2=%lld N1=%lld N2=%lld D=%lld %s w=%s mask=%lld r=%lld%s%s %s defect=%s",
             d.tnd ? "TND" : d.lengths ? "BSND+lengths" : "BSND", (long long)d.B, (long long)d.S1, (long long)d.S2,
             (long long)d.N1, (long long)d.N2, (long long)d.D, th_dtype_name(d.dtype), th_dtype_name(d.w_dtype),
             (long long)c.d.mask_mode, (long long)c.d.ratio, d.residual ? " +res" : "", d.scale > 1 ? " x30" : "", env,
             names ? names : "none");
    const lig_status st = lse_case_call(&c);
    if (fz_cmp_verdict(label, st, names, &c.lse, "softmax_lse")) {
        if (fz_perturb() && tbuf_numel(&c.lse) > 0) { /* the check below must notice one changed element */
            const double v = tbuf_read(&c.lse, 0);
            tbuf_write(&c.lse, 0, isinf(v) ? 0.0 : v + 1.0);
        }
        lse_case_check(&c, label);
    }
    lse_case_free(&c);
    fz_reset_env();
    fz_verdict(before, label);
    return 0;
}
