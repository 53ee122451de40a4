#include "fuzz_quant_spec.h"

void fz_qspec_flags(qspec *s, uint8_t a)
{
    s->qk = a & 1 ? LIG_INT8 : LIG_FLOAT8_E4M3FN;
    s->layout = a & 2 ? REF_TND : REF_BSND;
    s->paged = (a & 4) != 0;
    s->has_sq = (a & 8) != 0;
    s->with_values = (a & 16) != 0;
    s->lengths = (a & 32) != 0;
    s->pad = (a & 64) != 0;
    s->short_form = (a & 128) != 0;
}

void fz_qspec_extents(fz_in *in, qspec *s, int64_t max_s1, int64_t max_s2, int64_t max_n2, int64_t max_block)
{
    s->B = fz_range(in, 1, 3);
    s->S1 = fz_range(in, 0, max_s1);
    s->S2 = fz_range(in, 0, max_s2);
    s->N2 = fz_range(in, 1, max_n2);
    s->G = fz_range(in, 1, 9);
    s->D = fz_range(in, 0, 140);
    s->K = fz_range(in, 1, 45);
    s->block_size = fz_range(in, 1, max_block);
}

void fz_qspec_fp4(qspec *s, uint8_t bits)
{
    s->qk = LIG_FLOAT4_E2M1X2;
    s->has_sq = 1;
    s->sq_dtype = bits & 1 ? LIG_INT32 : LIG_UINT8;
    s->sk_dtype = bits & 2 ? LIG_INT32 : LIG_UINT8;
    s->int8_extreme = 0;
    s->D &= ~(int64_t)1;
}

uint32_t fz_decode_qspec(fz_in *in, qspec *s, int mxfp4)
{
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    qspec_default(s);
    const uint8_t a = fz_u8(in), b = fz_u8(in), d = fz_u8(in);
    fz_qspec_flags(s, a);
    s->w_dtype = floats[b % 3];
    s->sq_dtype = (b / 3) % 2 ? LIG_FLOAT16 : LIG_FLOAT32;
    s->sk_dtype = (b / 6) % 2 ? LIG_FLOAT16 : LIG_FLOAT32;
    s->val_dtype = floats[(b / 12) % 3];
    s->idx_dtype = (b / 36) % 2 ? LIG_INT64 : LIG_INT32;
    s->sparse_mode = d & 1 ? 3 : 0;
    s->pre_tokens = d & 2 ? fz_range(in, 0, 8) : INT64_MAX;
    s->next_tokens = d & 4 ? fz_range(in, 0, 8) : INT64_MAX;
    s->int8_extreme = (d >> 3) % 4 == 3 ? 1 + (d >> 5) % 2 : 0;
    s->p_nan_code = d & 64 ? 0.05 : 0.0;
    s->p_dup_key = d & 128 ? 0.3 : 0.05;
    fz_qspec_extents(in, s, 9, 40, 3, 5);
    if (mxfp4 && b / 72 == 3) {
        fz_qspec_fp4(s, b);
    }
    return fz_u32(in);
}
