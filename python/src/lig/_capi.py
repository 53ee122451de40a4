"""lig's C API as ctypes sees it: the library, loaded once; every function the package calls, bound
with its signature; every constant of include/lig.h the package uses.

Nothing else in the package loads the library, binds a function or copies a constant: the other
modules take them from here. python/tests/test_capi.py parses lig.h and checks this module against
it (each constant's value, whole enums; each function's existence, parameter count, parameter and
return types), so a change to lig.h that is not mirrored here fails the tests instead of passing
wrong values through ctypes. This module needs neither torch nor numpy.

ctypes spelling of lig.h's C types, as used below:
    lig_tensor *, lig_executor *, void *    c_void_p (opaque handles and raw addresses)
    lig_executor **                          POINTER(c_void_p)
    lig_status and the other enums           c_int (a C enum is an int)
    int64_t, uint64_t, int, bool, double     c_int64, c_uint64, c_int, c_bool, c_double
    const char *                             c_char_p
    uint64_t *, const int64_t *              POINTER(c_uint64), POINTER(c_int64)
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import sys

# ---- constants: lig.h's enums, each mirrored whole, and its numeric #defines ------------------

# lig_status
LIG_SUCCESS = 0
LIG_ERR_PARAM_NULLPTR = 161001
LIG_ERR_PARAM_INVALID = 161002
LIG_ERR_RUNTIME = 361001
LIG_ERR_INNER = 561000

# lig_dtype
LIG_FLOAT32 = 0
LIG_FLOAT16 = 1
LIG_BFLOAT16 = 2
LIG_INT32 = 3
LIG_INT64 = 4
LIG_FLOAT8_E4M3FN = 5
LIG_INT8 = 6
LIG_UINT8 = 7
LIG_FLOAT4_E2M1X2 = 8

# lig_device
LIG_DEVICE_HOST = 0
LIG_DEVICE_CUDA = 1
LIG_DEVICE_ROCM = 2
LIG_DEVICE_ASCEND = 3

# lig_kl_target
LIG_KL_TARGET_HEAD_MEAN = 0
LIG_KL_TARGET_L1 = 1
LIG_KL_TARGET_CANN = 2

# lig_mxfp4_recipe
LIG_MXFP4_RECIPE_ENGINE = 0
LIG_MXFP4_RECIPE_DEEPGEMM_TEST = 1

LIG_MAX_DIMS = 8  # a tensor's most dimensions
LIG_WORKSPACE_STATUS_BYTES = 192  # the head of a device workspace that holds its status

# stdint.h's INT64_MAX: pre_tokens / next_tokens meaning "no band"
INT64_MAX = 2**63 - 1

# The KL targets of lig.sparse_indexer_kl_loss, by the names its `target` argument takes (the
# package does not offer LIG_KL_TARGET_CANN).
KL_TARGETS = {"head_mean": LIG_KL_TARGET_HEAD_MEAN, "l1": LIG_KL_TARGET_L1}


# ---- the library, loaded once -------------------------------------------------------------------


def _package_dirs() -> list:
    """The directories the `lig` package is spread over, this file's first.

    A regular install has one. An editable install (``pip install -e ./python``) has two: the
    sources (python/src/lig, where this file is) and site-packages/lig, where the build put the
    library; the package's ``__path__`` lists both.
    """
    here = pathlib.Path(__file__).resolve().parent
    package = sys.modules.get(__package__ or "lig")
    dirs = [here] + [pathlib.Path(d) for d in getattr(package, "__path__", [])]
    return list(dict.fromkeys(dirs))


def _library_path() -> str:
    env = os.environ.get("LIG_LIBRARY")
    if env:
        return env
    names = {"darwin": ["liblig.dylib"], "win32": ["lig.dll", "liblig.dll"]}.get(sys.platform, ["liblig.so"])
    dirs = _package_dirs()
    for d in dirs:
        for name in names:
            if (d / name).is_file():
                return str(d / name)
    searched = ", ".join(str(d) for d in dirs)
    raise ImportError(
        f"lig: the C library ({names[0]}) is in none of the package's directories ({searched}); install "
        "the package with `pip install ./python` from the repository, or point LIG_LIBRARY at a built liblig"
    )


lib = ctypes.CDLL(_library_path())


# ---- the functions, in lig.h's order, each with lig.h's parameters ----------------------------

_handle = ctypes.c_void_p  # const lig_tensor *, lig_executor * (opaque)
_address = ctypes.c_void_p  # void *: data, workspace, stream, copy
_enum = ctypes.c_int  # lig_status, lig_dtype, lig_device, lig_kl_target, lig_mxfp4_recipe
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_text = ctypes.c_char_p  # const char *
_size_out = ctypes.POINTER(ctypes.c_uint64)  # uint64_t *workspace_size
_executor_out = ctypes.POINTER(ctypes.c_void_p)  # lig_executor **executor
_dims = ctypes.POINTER(ctypes.c_int64)  # const int64_t *shape, *strides
_PHASE2 = (_address, _u64, _handle, _address)  # workspace, workspace_size, executor, stream


def _bind(name: str, restype, *argtypes):
    function = getattr(lib, name)
    function.restype = restype
    function.argtypes = list(argtypes)
    return function


lig_create_tensor = _bind("lig_create_tensor", _handle, _address, _enum, _i64, _dims, _dims)
lig_create_tensor_on = _bind("lig_create_tensor_on", _handle, _address, _enum, _i64, _dims, _dims, _enum,
                             ctypes.c_int)
lig_destroy_tensor = _bind("lig_destroy_tensor", None, _handle)

lig_indexer_grad_get_workspace_size = _bind(
    "lig_indexer_grad_get_workspace_size", _enum,
    *[_handle] * 7,  # query, key, dy, sparse_indices, weights, actual_seq_lengths_query / _key
    _i64, _text, _i64, _i64, _i64, ctypes.c_bool,  # head_num, layout, sparse_mode, pre/next_tokens, deterministic
    *[_handle] * 3,  # d_query, d_key, d_weights
    _size_out, _executor_out)
lig_indexer_grad = _bind("lig_indexer_grad", _enum, *_PHASE2)

lig_indexer_get_workspace_size = _bind(
    "lig_indexer_get_workspace_size", _enum,
    *[_handle] * 5,  # query, key, weights, actual_seq_lengths_query / _key
    _text, _i64, _i64, _i64, _i64,  # layout, sparse_count, sparse_mode, pre/next_tokens
    *[_handle] * 2,  # sparse_indices, sparse_values
    _size_out, _executor_out)
lig_indexer_paged_get_workspace_size = _bind(
    "lig_indexer_paged_get_workspace_size", _enum,
    *[_handle] * 6,  # query, key_cache, block_table, weights, actual_seq_lengths_query / _key
    _text, _i64, _i64, _i64, _i64,  # layout, sparse_count, sparse_mode, pre/next_tokens
    *[_handle] * 2,  # sparse_indices, sparse_values
    _size_out, _executor_out)
lig_indexer = _bind("lig_indexer", _enum, *_PHASE2)

lig_quant_indexer_get_workspace_size = _bind(
    "lig_quant_indexer_get_workspace_size", _enum,
    # query, key, weights, query/key_dequant_scale, actual_seq_lengths_query / _key, block_table
    *[_handle] * 8,
    _i64, _i64, _text, _text,  # query/key_quant_mode, layout_query, layout_key
    _i64, _i64, _i64, _i64,  # sparse_count, sparse_mode, pre/next_tokens
    *[_handle] * 2,  # sparse_indices, sparse_values
    _size_out, _executor_out)
lig_quant_indexer = _bind("lig_quant_indexer", _enum, *_PHASE2)

lig_quant_logits_get_workspace_size = _bind(
    "lig_quant_logits_get_workspace_size", _enum,
    # query, key, weights, query/key_dequant_scale, block_table, key_start, key_end
    *[_handle] * 8,
    _text, _text, ctypes.c_bool, ctypes.c_bool,  # layout_query, layout_key, clean_logits, compressed
    _handle, _i64,  # logits, sparse_count
    *[_handle] * 3,  # sparse_indices, sparse_values, schedule
    _size_out, _executor_out)
lig_quant_logits = _bind("lig_quant_logits", _enum, *_PHASE2)
lig_quant_logits_schedule = _bind("lig_quant_logits_schedule", _enum, _handle, _i64, _i64, _handle)

lig_sparse_logits_get_workspace_size = _bind(
    "lig_sparse_logits_get_workspace_size", _enum,
    # query, key, weights, query/key_dequant_scale, block_table, key_start, key_end
    *[_handle] * 8,
    _text, _text,  # layout_query, layout_key
    _handle, _i64, ctypes.c_bool,  # sparse_kv_block_indices, sparse_block_kv, use_unaligned_ks
    _handle,  # sparse_logits
    _size_out, _executor_out)
lig_sparse_logits = _bind("lig_sparse_logits", _enum, *_PHASE2)

lig_kl_loss_and_dy_get_workspace_size = _bind(
    "lig_kl_loss_and_dy_get_workspace_size", _enum,
    *[_handle] * 5,  # sparse_values, sparse_indices, target, loss, dy
    _size_out, _executor_out)
lig_kl_loss_and_dy = _bind("lig_kl_loss_and_dy", _enum, *_PHASE2)

lig_sparse_indexer_grad_kl_loss_get_workspace_size = _bind(
    "lig_sparse_indexer_grad_kl_loss_get_workspace_size", _enum,
    # query, key, query_index, key_index, weights, sparse_indices, softmax_max / _sum / _lse,
    # query_rope, key_rope, actual_seq_lengths_query / _key
    *[_handle] * 13,
    ctypes.c_double, _text, _i64, _i64, _i64,  # scale, layout, sparse_mode, pre/next_tokens
    _enum, ctypes.c_bool,  # target (lig_kl_target), deterministic
    *[_handle] * 4,  # d_query_index, d_key_index, d_weights, loss
    _size_out, _executor_out)
lig_sparse_indexer_grad_kl_loss = _bind("lig_sparse_indexer_grad_kl_loss", _enum, *_PHASE2)

lig_workspace_status_from_copy = _bind("lig_workspace_status_from_copy", _enum, _enum, _address, _address)
lig_destroy_executor = _bind("lig_destroy_executor", _enum, _handle)

lig_set_num_threads = _bind("lig_set_num_threads", None, ctypes.c_int)
lig_get_num_threads = _bind("lig_get_num_threads", ctypes.c_int)

lig_kernel_sets = _bind("lig_kernel_sets", _text)
lig_set_kernel_set = _bind("lig_set_kernel_set", _enum, _text)
lig_get_kernel_set = _bind("lig_get_kernel_set", _text)
lig_executor_kernel_set = _bind("lig_executor_kernel_set", _text, _handle)

lig_mxfp4_quantize = _bind("lig_mxfp4_quantize", _enum, _handle, _enum, _handle, _handle)  # x, recipe, codes, scales
lig_mxfp4_cache_write = _bind("lig_mxfp4_cache_write", _enum, _handle, _handle, _enum, _handle)  # k, slots, recipe, cache

lig_get_last_error = _bind("lig_get_last_error", _text)
lig_status_string = _bind("lig_status_string", _text, _enum)
lig_version = _bind("lig_version", _text)
