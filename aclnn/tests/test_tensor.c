/* aclCreateTensor's checks, the tensor getters, int arrays, element sizes and the fp16 conversions. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <acl/acl.h>
#include <aclnn/aclnn_base.h>

#include "check.h"

static void test_fp16(void) {
    static const struct {
        float f;
        uint16_t h;
    } cases[] = {
        {1.0f, 0x3C00},
        {-2.0f, 0xC000},
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {65504.0f, 0x7BFF},                  /* largest finite half */
        {65519.99f, 0x7BFF},                 /* just below the rounding point to infinity */
        {65520.0f, 0x7C00},                  /* the tie rounds to even: infinity */
        {1e9f, 0x7C00},
        {0.1f, 0x2E66},
        {5.9604644775390625e-8f, 0x0001},    /* 2^-24, the smallest subnormal */
        {2.98023223876953125e-8f, 0x0000},   /* 2^-25: a tie, to the even zero */
        {4.470348358154297e-8f, 0x0001},     /* 1.5 * 2^-25 rounds up */
        {8.940696716308594e-8f, 0x0002},     /* 1.5 * 2^-24: a tie, to the even 2 */
        {6.103515625e-5f, 0x0400},           /* 2^-14, the smallest normal */
        {1.00048828125f, 0x3C00},            /* 1 + 2^-11: a tie, to the even 1 */
        {1.00146484375f, 0x3C02},            /* 1 + 3 * 2^-11: a tie, to the even 1 + 2^-9 */
        {INFINITY, 0x7C00},
        {-INFINITY, 0xFC00},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(aclFloatToFloat16(cases[i].f), cases[i].h);
    }
    CHECK(isnan(aclFloat16ToFloat(aclFloatToFloat16(NAN))));
    /* every half survives the round trip through float (NaNs stay NaN) */
    int mismatches = 0;
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        float f = aclFloat16ToFloat((aclFloat16)h);
        bool nan_half = (h & 0x7C00) == 0x7C00 && (h & 0x03FF);
        if (nan_half ? !isnan(f) : aclFloatToFloat16(f) != h) mismatches++;
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK(aclFloat16ToFloat(0x0001) == ldexpf(1.0f, -24));
    CHECK(aclFloat16ToFloat(0x3555) == 0.333251953125f);
    /* aclFloat16 is a bit pattern, as on CANN: converting 1.0 to it gives the integer 1 */
    aclFloat16 one_bits = (aclFloat16)1.0;
    CHECK_EQ_INT(one_bits, 1);
}

static void test_dtype_sizes(void) {
    CHECK_EQ_INT(aclDataTypeSize(ACL_FLOAT), 4);
    CHECK_EQ_INT(aclDataTypeSize(ACL_FLOAT16), 2);
    CHECK_EQ_INT(aclDataTypeSize(ACL_BF16), 2);
    CHECK_EQ_INT(aclDataTypeSize(ACL_INT32), 4);
    CHECK_EQ_INT(aclDataTypeSize(ACL_INT64), 8);
    CHECK_EQ_INT(aclDataTypeSize(ACL_BOOL), 1);
    CHECK_EQ_INT(aclDataTypeSize(ACL_STRING), 0);
    CHECK_EQ_INT(aclDataTypeSize(ACL_DT_UNDEFINED), 0);
    /* the enumerator values of CANN's acl_base.h */
    CHECK_EQ_INT(ACL_BF16, 27);
    CHECK_EQ_INT(ACL_INT64, 9);
    CHECK_EQ_INT(ACL_FORMAT_ND, 2);
    CHECK_EQ_INT(ACL_MEMCPY_DEVICE_TO_HOST, 2);
    CHECK_EQ_INT(ACL_MEM_MALLOC_NORMAL_ONLY, 2);
    CHECK_EQ_INT(ACLNN_ERR_PARAM_NULLPTR, 161001);
    CHECK_EQ_INT(ACLNN_ERR_PARAM_INVALID, 161002);
    CHECK_EQ_INT(ACLNN_ERR_RUNTIME_ERROR, 361001);
    CHECK_EQ_INT(ACLNN_ERR_INNER, 561000);
}

static void test_create(void) {
    void *mem = NULL;
    CHECK_EQ_INT(aclrtMalloc(&mem, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    int64_t shape[3] = {2, 3, 4}, storage[1] = {40}, strides[3] = {12, 4, 1};
    aclTensor *t = aclCreateTensor(shape, 3, ACL_FLOAT16, strides, 8, ACL_FORMAT_ND, storage, 1, mem);
    CHECK(t != NULL);
    int64_t off = -1;
    aclDataType dt = ACL_DT_UNDEFINED;
    aclFormat fmt = ACL_FORMAT_UNDEFINED;
    CHECK_EQ_INT(aclGetViewOffset(t, &off), ACLNN_SUCCESS);
    CHECK_EQ_INT(off, 8);
    CHECK_EQ_INT(aclGetDataType(t, &dt), ACLNN_SUCCESS);
    CHECK_EQ_INT(dt, ACL_FLOAT16);
    CHECK_EQ_INT(aclGetFormat(t, &fmt), ACLNN_SUCCESS);
    CHECK_EQ_INT(fmt, ACL_FORMAT_ND);
    CHECK_EQ_INT(aclGetViewOffset(t, NULL), ACLNN_ERR_PARAM_NULLPTR);

    /* offset 8 + 23 elements = 31 < 40 fits; offset 17 reaches element 40, outside the storage */
    CHECK(aclCreateTensor(shape, 3, ACL_FLOAT16, strides, 17, ACL_FORMAT_ND, storage, 1, mem) == NULL);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "reaches outside its storage (storageDims [40]");
    int64_t neg[3] = {-12, 4, 1};
    CHECK(aclCreateTensor(shape, 3, ACL_FLOAT16, neg, 0, ACL_FORMAT_ND, storage, 1, mem) == NULL);
    aclTensor *reversed = aclCreateTensor(shape, 3, ACL_FLOAT16, neg, 12, ACL_FORMAT_ND, storage, 1, mem);
    CHECK(reversed != NULL); /* a negative stride inside the storage is a valid view */
    int64_t bad_dim[2] = {2, -1};
    CHECK(aclCreateTensor(bad_dim, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, bad_dim, 2, mem) == NULL);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "viewDims[1]: expected a size >= 0, got -1");
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(aclCreateTensor(nine, 9, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, nine, 1, mem) == NULL);
    CHECK(aclCreateTensor(NULL, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 2, mem) == NULL);
    CHECK(aclCreateTensor(shape, 2, ACL_STRING, NULL, 0, ACL_FORMAT_ND, shape, 2, mem) == NULL);
    /* sub-byte types: ACL_FLOAT4_E2M1 counts elements, two a byte (the MXFP4 codes); E1M2 is refused */
    int64_t fp4_shape[2] = {3, 8}, fp4_storage[1] = {24};
    aclTensor *fp4 = aclCreateTensor(fp4_shape, 2, ACL_FLOAT4_E2M1, NULL, 0, ACL_FORMAT_ND, fp4_storage, 1, mem);
    CHECK(fp4 != NULL);
    CHECK_EQ_INT(aclDestroyTensor(fp4), ACLNN_SUCCESS);
    CHECK(aclCreateTensor(fp4_shape, 2, ACL_FLOAT4_E2M1, NULL, 1, ACL_FORMAT_ND, fp4_storage, 1, mem) == NULL);
    CHECK(aclCreateTensor(fp4_shape, 2, ACL_FLOAT4_E1M2, NULL, 0, ACL_FORMAT_ND, fp4_storage, 1, mem) == NULL);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "whole-byte elements (or ACL_FLOAT4_E2M1), got ACL_FLOAT4_E1M2");
    CHECK(aclCreateTensor(shape, 2, ACL_FLOAT, NULL, -1, ACL_FORMAT_ND, shape, 2, mem) == NULL);
    int64_t huge[3] = {INT64_MAX / 2, 4, 1};
    CHECK(aclCreateTensor(huge, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, huge, 3, mem) == NULL);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "overflow");
    int64_t empty[2] = {0, 5};
    aclTensor *e = aclCreateTensor(empty, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, empty, 2, NULL);
    CHECK(e != NULL); /* no elements: no data needed */
    int64_t scalar_storage[1] = {1};
    aclTensor *scalar = aclCreateTensor(NULL, 0, ACL_INT64, NULL, 0, ACL_FORMAT_ND, scalar_storage, 1, mem);
    CHECK(scalar != NULL);

    CHECK_EQ_INT(aclDestroyTensor(t), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID); /* no double free */
    CHECK_EQ_INT(aclGetViewOffset(t, &off), ACLNN_ERR_PARAM_INVALID);
    CHECK_EQ_INT(aclDestroyTensor(NULL), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyTensor((const aclTensor *)storage), ACLNN_ERR_PARAM_INVALID);
    CHECK_EQ_INT(aclDestroyTensor(reversed), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyTensor(e), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyTensor(scalar), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtFree(mem), ACL_SUCCESS);
}

static void test_int_arrays(void) {
    int64_t v[3] = {7, 8, 9};
    uint64_t n = 0;
    aclIntArray *a = aclCreateIntArray(v, 3);
    CHECK(a != NULL);
    CHECK_EQ_INT(aclGetIntArraySize(a, &n), ACLNN_SUCCESS);
    CHECK_EQ_INT(n, 3);
    CHECK(aclCreateIntArray(NULL, 2) == NULL);
    aclIntArray *none = aclCreateIntArray(NULL, 0);
    CHECK(none != NULL);
    CHECK_EQ_INT(aclDestroyIntArray(a), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyIntArray(a), ACLNN_ERR_PARAM_INVALID);
    CHECK_EQ_INT(aclGetIntArraySize(a, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_EQ_INT(aclDestroyIntArray(none), ACLNN_SUCCESS);
}

int main(void) {
    CHECK_EQ_INT(aclInit(NULL), ACL_SUCCESS);
    test_fp16();
    test_dtype_sizes();
    test_create();
    test_int_arrays();
    CHECK_EQ_INT(aclFinalize(), ACL_SUCCESS);
    return check_report("aclnn-tensor");
}
