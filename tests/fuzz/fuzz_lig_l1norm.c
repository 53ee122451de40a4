/*
 * libFuzzer target: the main attention's head-mean softmax target over compressed keys
 * (lig_sparse_flash_mla_softmax_l1_norm, docs/contract.md 2.10) through the public C API.
 *
 * An input decodes to: threads and kernel set; the flags (TND, BSND lengths, residuals, mask 3,
 * INT64 lengths, magnitude 1 or 4, sparse, the short forms); B 0..3 (TND 1..3), S1 0..12 (up to 300
 * now and then, so that ratio 128 sees whole blocks), S2 0..12 (up to 150 now and then: several
 * of the teacher's blocks), N1 0..9, D 0..40, the slots K 0..20 (sparse) or extra columns 0..3
 * (dense); the dtype (FLOAT32, FLOAT16, BFLOAT16) and the indices' (INT32, INT64); cmp_ratio 1..128
 * (small ones and 128 favoured); the strides (contiguous, padded, permuted); then a seed for the
 * data (tests/harness/l1_norm_case.h: slots mix visible entries, -1, masked entries and
 * duplicates). With a defect byte, one argument is broken (mask_mode 1/2/-1, cmp_ratio 0 or 129, a
 * residual at cmp_ratio or -1, a slot index below -1 or past its batch in a valid row, softmax_scale
 * NaN), and the call must fail with PARAM_INVALID, a message naming it, and nothing written.
 * Success must match the float64 reference in every element, bytes past the view untouched.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "fuzz_case.h"
#include "fuzz_compressed.h"
#include "fuzz_input.h"
#include "l1_norm_case.h"

enum { DEF_INDEX = FZ_CMP_OWN, DEF_SCALE, DEF_KINDS };

static void decode_desc(fz_in *in, l1n_desc *d) {
    memset(d, 0, sizeof *d);
    d->label = "fuzz";
    const uint8_t f = fz_u8(in);
    fz_cmp_common c;
    fz_cmp_decode_common(in, f, &c);
    d->tnd = c.tnd;
    d->lengths = c.lengths;
    d->mask_mode = c.mask_mode;
    d->len_dtype = c.len_dtype;
    d->B = c.B;
    d->S1 = c.S1;
    d->magnitude = f & 32 ? 4 : 1;
    const bool sparse = (f & 64) != 0;
    d->short_form = (f & 128) != 0;
    d->S2 = fz_chance(in, 16) ? fz_range(in, 40, 150) : fz_range(in, 0, 12);
    d->N1 = fz_range(in, 0, 9);
    d->D = fz_range(in, 0, 40);
    if (sparse) d->K = fz_range(in, 1, 20);
    else d->extra_cols = fz_range(in, 0, 3);
    d->dtype = fz_cmp_float_dtype(in);
    d->idx_dtype = fz_u8(in) & 1 ? LIG_INT64 : LIG_INT32;
    d->ratio = fz_cmp_ratio(fz_u8(in));
    d->residual = c.residual && d->ratio > 1;
    d->strides = fz_cmp_strides(in);
    d->scale = 1.0 / sqrt((double)(d->D > 0 ? d->D : 1));
}

/* A bad slot index in a valid row with slots; false when the case has none. */
static bool break_index(l1n_case *c, uint8_t how) {
    const l1n_desc *d = &c->d;
    for (int64_t b = 0; b < d->B; b++)
        if (c->len.lq[b] > 0 && d->K > 0) {
            const int64_t row = d->tnd ? c->len.q0[b] : b * d->S1;
            tbuf_write_int(&c->idx, row * d->K + how % d->K, how & 1 ? -2 : c->len.lk[b]);
            return true;
        }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_in in;
    const int before = fz_begin(&in, data, size);
    char env[96], label[512];
    fz_decode_env(&in, env, sizeof env);
    l1n_desc d;
    decode_desc(&in, &d);
    const uint8_t defect_byte = fz_u8(&in);
    const int defect = fz_cmp_defect_kind(defect_byte, DEF_KINDS);
    const uint64_t seed = fz_u32(&in);
    l1n_case c;
    l1n_case_make(&c, &d, seed);
    const char *names = fz_cmp_break(defect, defect_byte, &c.d.mask_mode, &c.d.ratio, &c.len, d.len_dtype);
    if (defect == DEF_INDEX && break_index(&c, defect_byte)) {
        names = "sparse_indices";
    } else if (defect == DEF_SCALE) {
        c.d.scale = NAN;
        names = "softmax_scale";
    }
    snprintf(label, sizeof label,
             "l1norm %s B=%lld S1=%lld S2=%lld N1=%lld D=%lld K=%lld W=%lld %s idx=%s mask=%lld r=%lld%s%s%s %s defect=%s",
             d.tnd ? "TND" : d.lengths ? "BSND+lengths" : "BSND", (long long)d.B, (long long)d.S1, (long long)d.S2,
             (long long)d.N1, (long long)d.D, (long long)d.K, (long long)c.W, th_dtype_name(d.dtype),
             th_dtype_name(d.idx_dtype), (long long)c.d.mask_mode, (long long)c.d.ratio, d.residual ? " +res" : "",
             d.magnitude > 1 ? " x4" : "", d.short_form ? " short" : "", env, names ? names : "none");
    const lig_status st = l1n_case_call(&c);
    if (fz_cmp_verdict(label, st, names, &c.out, "softmax_l1_norm")) {
        if (fz_perturb() && tbuf_numel(&c.out) > 0) { /* the check below must notice one changed element */
            const double v = tbuf_read(&c.out, 0);
            tbuf_write(&c.out, 0, v + 1.0);
        }
        l1n_case_check(&c, label);
    }
    l1n_case_free(&c);
    fz_reset_env();
    fz_verdict(before, label);
    return 0;
}
