/* The compressed-key fuzz targets' shared defects and verdict (fuzz_compressed.h). */
#include "fuzz_compressed.h"

#include <string.h>

#include "framework.h"
#include "fuzz_case.h"

void fz_cmp_decode_common(fz_in *in, uint8_t flags, fz_cmp_common *c) {
    c->tnd = flags & 1;
    c->lengths = (flags & 2) != 0;
    c->residual = (flags & 4) != 0;
    c->mask_mode = flags & 8 ? 3 : 0;
    c->len_dtype = flags & 16 ? LIG_INT64 : LIG_INT32;
    c->B = fz_range(in, c->tnd ? 1 : 0, 3);
    c->S1 = fz_chance(in, 16) ? fz_range(in, 100, 300) : fz_range(in, 0, 12);
}

int64_t fz_cmp_ratio(uint8_t byte) {
    static const int64_t ratios[8] = {1, 2, 3, 4, 5, 8, 16, 128};
    return byte < 192 ? ratios[byte % 8] : 1 + byte % 128;
}

tc_strides fz_cmp_strides(fz_in *in) {
    static const tc_strides strides[3] = {TC_CONTIGUOUS, TC_PADDED, TC_PERMUTED};
    return strides[fz_range(in, 0, 2)];
}

lig_dtype fz_cmp_float_dtype(fz_in *in) {
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    return floats[fz_range(in, 0, 2)];
}

int fz_cmp_defect_kind(uint8_t byte, int kinds) { return byte < 200 ? FZ_CMP_NONE : 1 + byte % (kinds - 1); }

const char *fz_cmp_break(int kind, uint8_t byte, int64_t *mask_mode, int64_t *ratio, cmp_lengths *len,
                         lig_dtype len_dtype) {
    if (kind == FZ_CMP_MASK) {
        static const int64_t bad[3] = {1, 2, -1};
        *mask_mode = bad[byte % 3];
        return "mask_mode";
    }
    if (kind == FZ_CMP_RATIO) {
        *ratio = byte & 1 ? 0 : 129;
        return "cmp_ratio";
    }
    if (kind == FZ_CMP_RESIDUAL && len->B > 0) {
        cmp_lengths_break_residual(len, len_dtype, byte & 1 ? -1 : *ratio);
        return "cmp_residual_k";
    }
    return NULL;
}

bool fz_cmp_verdict(const char *label, lig_status st, const char *names, const tbuf *out, const char *out_name) {
    fuzz_stats *stats = fz_stats();
    stats->iterations++;
    if (names) {
        stats->invalid1++;
        CHECK(st == LIG_ERR_PARAM_INVALID, "%s: status %d, want PARAM_INVALID (%s)", label, (int)st, lig_get_last_error());
        CHECK(strstr(lig_get_last_error(), names) != NULL, "%s: the message does not name %s: %s", label, names,
              lig_get_last_error());
        CHECK(tbuf_unchanged(out), "%s: %s written on failure", label, out_name);
        return false;
    }
    if (!CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) return false;
    stats->successes++;
    return true;
}
