#include "dtype.h"

size_t fe_dtype_size(aclDataType dtype) {
    switch (dtype) {
    case ACL_FLOAT: return 4;
    case ACL_FLOAT16: return 2;
    case ACL_INT8: return 1;
    case ACL_INT32: return 4;
    case ACL_UINT8: return 1;
    case ACL_INT16: return 2;
    case ACL_UINT16: return 2;
    case ACL_UINT32: return 4;
    case ACL_INT64: return 8;
    case ACL_UINT64: return 8;
    case ACL_DOUBLE: return 8;
    case ACL_BOOL: return 1;
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    case ACL_BF16: return 2;
    case ACL_COMPLEX32: return 4;
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0: return 1;
    /* no whole-byte element: */
    case ACL_DT_UNDEFINED:
    case ACL_STRING:
    case ACL_INT4:
    case ACL_UINT1:
    case ACL_FLOAT6_E3M2:
    case ACL_FLOAT6_E2M3:
    case ACL_FLOAT4_E2M1:
    case ACL_FLOAT4_E1M2: return 0;
    }
    return 0;
}

size_t aclDataTypeSize(aclDataType dataType) { return fe_dtype_size(dataType); }

const char *fe_dtype_name(aclDataType dtype) {
    switch (dtype) {
    case ACL_DT_UNDEFINED: return "ACL_DT_UNDEFINED";
    case ACL_FLOAT: return "ACL_FLOAT";
    case ACL_FLOAT16: return "ACL_FLOAT16";
    case ACL_INT8: return "ACL_INT8";
    case ACL_INT32: return "ACL_INT32";
    case ACL_UINT8: return "ACL_UINT8";
    case ACL_INT16: return "ACL_INT16";
    case ACL_UINT16: return "ACL_UINT16";
    case ACL_UINT32: return "ACL_UINT32";
    case ACL_INT64: return "ACL_INT64";
    case ACL_UINT64: return "ACL_UINT64";
    case ACL_DOUBLE: return "ACL_DOUBLE";
    case ACL_BOOL: return "ACL_BOOL";
    case ACL_STRING: return "ACL_STRING";
    case ACL_COMPLEX64: return "ACL_COMPLEX64";
    case ACL_COMPLEX128: return "ACL_COMPLEX128";
    case ACL_BF16: return "ACL_BF16";
    case ACL_INT4: return "ACL_INT4";
    case ACL_UINT1: return "ACL_UINT1";
    case ACL_COMPLEX32: return "ACL_COMPLEX32";
    case ACL_HIFLOAT8: return "ACL_HIFLOAT8";
    case ACL_FLOAT8_E5M2: return "ACL_FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN: return "ACL_FLOAT8_E4M3FN";
    case ACL_FLOAT8_E8M0: return "ACL_FLOAT8_E8M0";
    case ACL_FLOAT6_E3M2: return "ACL_FLOAT6_E3M2";
    case ACL_FLOAT6_E2M3: return "ACL_FLOAT6_E2M3";
    case ACL_FLOAT4_E2M1: return "ACL_FLOAT4_E2M1";
    case ACL_FLOAT4_E1M2: return "ACL_FLOAT4_E1M2";
    }
    return "an unknown aclDataType";
}

bool fe_dtype_to_lig(aclDataType dtype, lig_dtype *out) {
    switch (dtype) {
    case ACL_FLOAT: *out = LIG_FLOAT32; return true;
    case ACL_FLOAT16: *out = LIG_FLOAT16; return true;
    case ACL_BF16: *out = LIG_BFLOAT16; return true;
    case ACL_INT32: *out = LIG_INT32; return true;
    case ACL_INT64: *out = LIG_INT64; return true;
    case ACL_INT8: *out = LIG_INT8; return true;                   /* the quantized forward's codes */
    case ACL_FLOAT8_E4M3FN: *out = LIG_FLOAT8_E4M3FN; return true; /* both OCP E4M3 without infinities */
    case ACL_FLOAT4_E2M1: *out = LIG_FLOAT4_E2M1X2; return true;   /* MXFP4 codes, viewed two a byte */
    case ACL_FLOAT8_E8M0: *out = LIG_UINT8; return true;           /* MX block scales: lig reads the bytes */
    default: return false;
    }
}

const char *fe_format_name(aclFormat format) {
    switch (format) {
    case ACL_FORMAT_UNDEFINED: return "ACL_FORMAT_UNDEFINED";
    case ACL_FORMAT_NCHW: return "ACL_FORMAT_NCHW";
    case ACL_FORMAT_NHWC: return "ACL_FORMAT_NHWC";
    case ACL_FORMAT_ND: return "ACL_FORMAT_ND";
    case ACL_FORMAT_NC1HWC0: return "ACL_FORMAT_NC1HWC0";
    case ACL_FORMAT_FRACTAL_Z: return "ACL_FORMAT_FRACTAL_Z";
    case ACL_FORMAT_NC1HWC0_C04: return "ACL_FORMAT_NC1HWC0_C04";
    case ACL_FORMAT_HWCN: return "ACL_FORMAT_HWCN";
    case ACL_FORMAT_NDHWC: return "ACL_FORMAT_NDHWC";
    case ACL_FORMAT_FRACTAL_NZ: return "ACL_FORMAT_FRACTAL_NZ";
    case ACL_FORMAT_NCDHW: return "ACL_FORMAT_NCDHW";
    case ACL_FORMAT_NDC1HWC0: return "ACL_FORMAT_NDC1HWC0";
    case ACL_FRACTAL_Z_3D: return "ACL_FRACTAL_Z_3D";
    case ACL_FORMAT_NC: return "ACL_FORMAT_NC";
    case ACL_FORMAT_NCL: return "ACL_FORMAT_NCL";
    }
    return "an unknown aclFormat";
}

bool fe_format_is_plain(aclFormat format) {
    switch (format) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL: return true;
    default: return false;
    }
}
