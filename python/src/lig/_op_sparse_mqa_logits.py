"""DeepGEMM 2.8's sparse ("candidate") MQA logits under DeepGEMM's names, on lig's CPU operator
lig_sparse_logits (docs/contract.md 2.8): lig::get_sparse_mqa_logits_metadata,
lig::get_paged_sparse_mqa_logits_metadata, lig::fp8_fp4_sparse_mqa_logits and
lig::fp8_fp4_paged_sparse_mqa_logits, their fake rules, and the public functions of the same names,
with DeepGEMM's signatures, so that an engine serving DeepSeek-V4.1's candidate indexer can swap
``import deep_gemm`` for lig.

DeepGEMM's logits calls receive the row ranges, block table and block lists only through the
metadata its metadata functions build; lig's metadata is therefore a uint8 tensor holding copies
of them behind a small versioned header (int64 words, little-endian):

    word 0  magic 0x5352415053474c49 ("LIGSPARS" read as bytes), word 1 the layout version (1),
    word 2  the kind: 0 contiguous (get_sparse_mqa_logits_metadata), 1 paged,
    word 3  rows M, word 4 num_max_sparse_blocks, word 5 sparse_block_kv, word 6 use_unaligned_ks,
    word 7  the q/k format: 1 MXFP4 (int8 / uint8 packed codes), 2 MXFP8 (float8_e4m3fn codes),
    word 8  num_kv_tokens (contiguous) or page_kv (paged), word 9 the block table's columns (paged),
    words 10-15 zero; then, as int64 words:
    contiguous: cu_seq_len_k_start [M], cu_seq_len_k_end [M], sparse_kv_block_indices [M, blocks];
    paged:      context_lens [M], indices [M], block_table [M, columns], sparse_kv_block_indices [M, blocks].

The logits are bf16 ``[M, num_max_sparse_blocks * sparse_block_kv]``, as DeepGEMM returns them:
each scored column lig_quant_logits' fp32 logit of that row and key rounded once (RNE); lig writes
``-inf`` in the columns DeepGEMM leaves unwritten. MXFP4 queries and keys only: MXFP8 (e4m3 codes
with e8m0 block scales) raises ``LigValueError`` naming it. Not differentiable.
"""
from __future__ import annotations

import ctypes
from typing import List, Tuple

import torch
from torch import Tensor

from . import _args, _capi, _registry
from ._fused_cache import cache_views
from ._lib import Descriptors, LigValueError
from ._registry import op

MAGIC = 0x5352415053474C49
VERSION = 1
HEADER_WORDS = 16
KIND_CONTIGUOUS, KIND_PAGED = 0, 1
FORMAT_MXFP4, FORMAT_MXFP8 = 1, 2
FP4_CODE_DTYPES = (torch.int8, torch.uint8)


def _format_of(qk_dtype: torch.dtype, name: str) -> int:
    if qk_dtype in FP4_CODE_DTYPES:
        return FORMAT_MXFP4
    if qk_dtype == torch.float8_e4m3fn:
        return FORMAT_MXFP8
    raise _args.invalid(f"{name}: expected torch.int8 (MXFP4 packed codes, DeepGEMM's kPackedFP4), torch.uint8 or "
                        f"torch.float8_e4m3fn (MXFP8), got {qk_dtype}")


def _refuse_mxfp8(fmt: int, name: str) -> None:
    if fmt == FORMAT_MXFP8:
        raise _args.invalid(f"{name}: expected MXFP4 codes (torch.int8 / torch.uint8), got torch.float8_e4m3fn: MXFP8 "
                            f"(e4m3 codes with e8m0 block scales) is not supported by lig yet")


def _int_tensor(t: Tensor, name: str, dims: Tuple[int, ...]) -> None:
    _args.tensor(t, name, (torch.int32, torch.int64))
    if t.device.type != "cpu":
        raise _args.invalid(f"{name}: expected a CPU tensor (lig's sparse-logits metadata lives on the host), got one on "
                            f"{t.device}")
    if t.dim() not in dims:
        raise _args.invalid(f"{name}: expected {' or '.join(f'{d}-D' for d in dims)}, got {_args._shape(t)}")


def _metadata_words(rows: int, blocks: int, payload: int) -> int:
    return HEADER_WORDS + payload + rows * blocks


def _pack(header: List[int], parts: List[Tensor]) -> Tensor:
    head = torch.zeros(HEADER_WORDS, dtype=torch.int64)
    head[:len(header)] = torch.tensor(header, dtype=torch.int64)
    flat = [p.reshape(-1).to(device="cpu", dtype=torch.int64) for p in parts]
    return torch.cat([head] + flat).view(torch.uint8)


def _unpack(metadata: Tensor, kind: int, rows: int, blocks: int, block_kv: int, unaligned: bool) -> List[Tensor]:
    """The metadata's header checked against the logits call, and its arrays (int64 views)."""
    what = "get_paged_sparse_mqa_logits_metadata" if kind == KIND_PAGED else "get_sparse_mqa_logits_metadata"
    if metadata.dtype != torch.uint8 or metadata.dim() != 1 or metadata.numel() < 8 * HEADER_WORDS or \
            metadata.numel() % 8:
        raise _args.invalid(f"metadata: expected the uint8 tensor {what} returns, got {metadata.dtype} "
                            f"{_args._shape(metadata)}")
    words = metadata.cpu().contiguous().view(torch.int64)
    h = words[:HEADER_WORDS].tolist()
    want = {0: (MAGIC, "lig's sparse-logits metadata"), 1: (VERSION, "layout version"), 2: (kind, "kind"),
            3: (rows, "rows (q's)"), 4: (blocks, "num_max_sparse_blocks"), 5: (block_kv, "sparse_block_kv"),
            6: (int(unaligned), "use_unaligned_ks")}
    for i, (v, label) in want.items():
        if h[i] != v:
            raise _args.invalid(f"metadata: expected {label} {v} (this call's), got {h[i]} in header word {i} (not "
                                f"{what}'s metadata for this call)")
    if kind == KIND_CONTIGUOUS:
        sizes = [rows, rows, rows * blocks]
    else:
        sizes = [rows, rows, rows * h[9], rows * blocks]
    if words.numel() != HEADER_WORDS + sum(sizes):
        raise _args.invalid(f"metadata: expected {8 * (HEADER_WORDS + sum(sizes))} bytes for its header, got "
                            f"{metadata.numel()}")
    out, at = [], HEADER_WORDS
    for n in sizes:
        out.append(words[at:at + n])
        at += n
    return out + [h]


def _fp4(desc: Descriptors, t: Tensor, name: str) -> int:
    """A descriptor of packed MXFP4 codes (int8 / uint8 bytes) as FLOAT4_E2M1X2."""
    _args.tensor(t, name, FP4_CODE_DTYPES)
    if any(s < 0 for s in t.stride()):
        t = t.contiguous()
    nd = t.dim()
    shape = (ctypes.c_int64 * max(nd, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*t.stride())
    handle = _capi.lig_create_tensor(t.data_ptr() if t.numel() else None, _capi.LIG_FLOAT4_E2M1X2, nd, shape, strides)
    if handle is None:
        raise LigValueError(f"lig_create_tensor({name}): {_capi.lig_get_last_error().decode(errors='replace')}",
                            _capi.LIG_ERR_PARAM_INVALID)
    desc._handles.append(handle)  # destroyed with the call's other descriptors
    desc._keep.append(t)
    return handle


def _run(args) -> None:
    with Descriptors() as desc:
        _registry.run(_capi.lig_sparse_logits_get_workspace_size, _capi.lig_sparse_logits, args(desc), "lig_sparse_logits")


def _check_q(q_fp: Tensor, q_sf: Tensor, weights: Tensor, dims: int) -> None:
    _refuse_mxfp8(_format_of(q_fp.dtype, "q[0]"), "q[0]")
    if q_fp.dim() != dims:
        shape = "[M,H,D/2]" if dims == 3 else "[M,1,H,D/2]"
        raise _args.invalid(f"q[0]: expected {shape} packed MXFP4 codes, got {_args._shape(q_fp)}")
    _args.tensor(q_sf, "q[1]", (torch.int32,))  # DeepGEMM asserts int32: four e8m0 bytes a word
    _args.tensor(weights, "weights", (torch.bfloat16, torch.float32, torch.float16))


def _out_shape(q_fp: Tensor, blocks: int, block_kv: int) -> Tuple[int, int]:
    return (q_fp.shape[0], blocks * block_kv)


# ---- metadata --------------------------------------------------------------------------------


@op("get_sparse_mqa_logits_metadata")
def _metadata_op(cu_seq_len_k_start: Tensor, cu_seq_len_k_end: Tensor, num_kv_tokens: int,
                 sparse_kv_block_indices: Tensor, qk_dtype: torch.dtype, sparse_block_kv: int,
                 use_unaligned_ks: bool) -> Tensor:
    fmt = _check_metadata(cu_seq_len_k_start, cu_seq_len_k_end, sparse_kv_block_indices, qk_dtype)
    M, blocks = sparse_kv_block_indices.shape
    return _pack([MAGIC, VERSION, KIND_CONTIGUOUS, M, blocks, sparse_block_kv, int(use_unaligned_ks), fmt, num_kv_tokens],
                 [cu_seq_len_k_start, cu_seq_len_k_end, sparse_kv_block_indices])


def _check_metadata(ks: Tensor, ke: Tensor, ids: Tensor, qk_dtype: torch.dtype) -> int:
    fmt = _format_of(qk_dtype, "qk_dtype")
    _int_tensor(ids, "sparse_kv_block_indices", (2,))
    M = ids.shape[0]
    for t, name in ((ks, "cu_seq_len_k_start"), (ke, "cu_seq_len_k_end")):
        _int_tensor(t, name, (1,))
        if t.shape[0] != M:
            raise _args.invalid(f"{name}: expected shape [{M}] (rows like sparse_kv_block_indices), got {_args._shape(t)}")
    return fmt


@_metadata_op.register_fake
def _(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, sparse_kv_block_indices, qk_dtype, sparse_block_kv,
      use_unaligned_ks):
    _check_metadata(cu_seq_len_k_start, cu_seq_len_k_end, sparse_kv_block_indices, qk_dtype)
    M, blocks = sparse_kv_block_indices.shape
    return sparse_kv_block_indices.new_empty((8 * _metadata_words(M, blocks, 2 * M),),
                                             dtype=torch.uint8, device="cpu")


_metadata_op.refuse_autograd()


def get_sparse_mqa_logits_metadata(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens: int, sparse_kv_block_indices,
                                   qk_dtype: torch.dtype, sparse_block_kv: int, use_unaligned_ks: bool = False) -> Tensor:
    """DeepGEMM 2.8's ``get_sparse_mqa_logits_metadata``: a uint8 tensor holding what
    :func:`fp8_fp4_sparse_mqa_logits` needs (the module's docstring gives its layout): row ``m``'s
    key range ``[cu_seq_len_k_start[m], cu_seq_len_k_end[m])`` (int32 ``[M]``) and its block list
    ``sparse_kv_block_indices[m]`` (int32 ``[M, num_max_sparse_blocks]``). Row ``m`` counts the first
    ``min(num_max_sparse_blocks, ceil(len / sparse_block_kv))`` entries, strictly increasing ids of its
    range's blocks (checked by the logits call); block ``i`` starts at key ``i * sparse_block_kv``,
    plus ``start % sparse_block_kv`` with ``use_unaligned_ks``. ``qk_dtype`` is ``q[0].dtype``.

    Devices: CPU tensors only (the metadata lives on the host): CUDA tensors raise
    :class:`LigValueError`, in any build."""
    return torch.ops.lig.get_sparse_mqa_logits_metadata(
        *_registry.tensors((cu_seq_len_k_start, "cu_seq_len_k_start"), (cu_seq_len_k_end, "cu_seq_len_k_end")),
        _args.integer(num_kv_tokens, "num_kv_tokens", minimum=0),
        _registry.tensor(sparse_kv_block_indices, "sparse_kv_block_indices"), qk_dtype,
        _args.integer(sparse_block_kv, "sparse_block_kv", minimum=1), _args.flag(use_unaligned_ks, "use_unaligned_ks"))


@op("get_paged_sparse_mqa_logits_metadata")
def _paged_metadata_op(context_lens: Tensor, block_table: Tensor, indices: Tensor, page_kv: int,
                       sparse_kv_block_indices: Tensor, qk_dtype: torch.dtype, sparse_block_kv: int) -> Tensor:
    fmt = _check_paged_metadata(context_lens, block_table, indices, page_kv, sparse_kv_block_indices, sparse_block_kv,
                                qk_dtype)
    M, blocks = sparse_kv_block_indices.shape
    return _pack([MAGIC, VERSION, KIND_PAGED, M, blocks, sparse_block_kv, 0, fmt, page_kv, block_table.shape[1]],
                 [context_lens, indices, block_table, sparse_kv_block_indices])


def _check_paged_metadata(context_lens, block_table, indices, page_kv, ids, block_kv, qk_dtype) -> int:
    fmt = _format_of(qk_dtype, "qk_dtype")
    _int_tensor(ids, "sparse_kv_block_indices", (2,))
    M = ids.shape[0]
    _int_tensor(context_lens, "context_lens", (1, 2))
    if context_lens.numel() != M:
        raise _args.invalid(f"context_lens: expected {M} entries (one per row of sparse_kv_block_indices), got "
                            f"{_args._shape(context_lens)}")
    _int_tensor(block_table, "block_table", (2,))
    if block_table.shape[0] != M:
        raise _args.invalid(f"block_table: expected {M} rows (one per query row), got {_args._shape(block_table)}")
    _int_tensor(indices, "indices", (1,))
    if indices.shape[0] != M:
        raise _args.invalid(f"indices: expected shape [{M}] (a request id per row), got {_args._shape(indices)}")
    if page_kv < 1 or page_kv % block_kv:
        raise _args.invalid(f"page_kv: expected a positive multiple of sparse_block_kv = {block_kv}, got {page_kv}")
    return fmt


@_paged_metadata_op.register_fake
def _(context_lens, block_table, indices, page_kv, sparse_kv_block_indices, qk_dtype, sparse_block_kv):
    _check_paged_metadata(context_lens, block_table, indices, page_kv, sparse_kv_block_indices, sparse_block_kv,
                          qk_dtype)
    M, blocks = sparse_kv_block_indices.shape
    payload = 2 * M + M * block_table.shape[1]
    return sparse_kv_block_indices.new_empty((8 * _metadata_words(M, blocks, payload),), dtype=torch.uint8,
                                             device="cpu")


_paged_metadata_op.refuse_autograd()


def get_paged_sparse_mqa_logits_metadata(context_lens, block_table, indices, page_kv: int, sparse_kv_block_indices,
                                         qk_dtype: torch.dtype, sparse_block_kv: int) -> Tensor:
    """DeepGEMM 2.8's ``get_paged_sparse_mqa_logits_metadata``: a uint8 tensor holding what
    :func:`fp8_fp4_paged_sparse_mqa_logits` needs: per query row its context length
    (``context_lens``, ``M`` entries), request id (``indices`` int32 ``[M]``), block-table row
    (``block_table [M, pages]``: DeepGEMM's per-row table) and block list (``sparse_kv_block_indices
    [M, num_max_sparse_blocks]``, logical block ids of ``sparse_block_kv`` keys). ``page_kv`` is the
    cache's block size, a multiple of ``sparse_block_kv``. DeepGEMM pairs the rows of a request for
    its kernel; lig's results do not depend on the request ids (it only checks their shape).

    Devices: CPU tensors only (the metadata lives on the host): CUDA tensors raise
    :class:`LigValueError`, in any build."""
    return torch.ops.lig.get_paged_sparse_mqa_logits_metadata(
        *_registry.tensors((context_lens, "context_lens"), (block_table, "block_table"), (indices, "indices")),
        _args.integer(page_kv, "page_kv", minimum=1), _registry.tensor(sparse_kv_block_indices, "sparse_kv_block_indices"),
        qk_dtype, _args.integer(sparse_block_kv, "sparse_block_kv", minimum=1))


# ---- the logits ---------------------------------------------------------------------------------


@op("fp8_fp4_sparse_mqa_logits")
def _sparse_op(q_fp: Tensor, q_sf: Tensor, kv_fp: Tensor, kv_sf: Tensor, weights: Tensor, metadata: Tensor,
               num_max_sparse_blocks: int, sparse_block_kv: int, use_unaligned_ks: bool) -> Tensor:
    _check_q(q_fp, q_sf, weights, 3)
    M = q_fp.shape[0]
    ks, ke, ids, head = _unpack(metadata, KIND_CONTIGUOUS, M, num_max_sparse_blocks, sparse_block_kv, use_unaligned_ks)
    if kv_fp.dim() != 2:
        raise _args.invalid(f"kv[0]: expected [N, D/2] packed MXFP4 codes, got {_args._shape(kv_fp)}")
    N = kv_fp.shape[0]
    out = torch.empty(_out_shape(q_fp, num_max_sparse_blocks, sparse_block_kv), dtype=torch.bfloat16)
    key, key_sf = kv_fp.unsqueeze(1), kv_sf.reshape(N, 1) if kv_sf.numel() == N else kv_sf
    ids2 = ids.view(M, num_max_sparse_blocks)

    def args(desc):
        return (_fp4(desc, q_fp, "q[0]"), _fp4(desc, key, "kv[0]"), desc(weights, "weights"), desc(q_sf, "q[1]"),
                desc(key_sf, "kv[1]"), None, desc(ks, "cu_seq_len_k_start"), desc(ke, "cu_seq_len_k_end"), b"TND",
                b"TND", desc(ids2, "sparse_kv_block_indices"), sparse_block_kv, use_unaligned_ks, desc(out, "logits"))

    _run(args)
    return out


@_sparse_op.register_fake
def _(q_fp, q_sf, kv_fp, kv_sf, weights, metadata, num_max_sparse_blocks, sparse_block_kv, use_unaligned_ks):
    _check_q(q_fp, q_sf, weights, 3)
    return q_fp.new_empty(_out_shape(q_fp, num_max_sparse_blocks, sparse_block_kv), dtype=torch.bfloat16)


_sparse_op.refuse_autograd()


def _pair(x, name: str, what: str):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(f"lig: {name}: expected a pair {what}, got {type(x).__name__}")
    return x


def _block_scaled_q(q, sf_shape: str) -> Tuple[Tensor, Tensor]:
    """DeepGEMM's ``q = (q_fp, q_sf)`` of the sparse logits, whose scales are required."""
    q_fp, q_sf = _pair(q, "q", "(q_fp, q_sf)")
    if q_sf is None:
        raise _args.invalid(f"q[1]: expected the block scales (int32 {sf_shape}): DeepGEMM's sparse logits are "
                            "block-scaled only, got None")
    return _registry.tensors((q_fp, "q[0]"), (q_sf, "q[1]"))


def _sizes(num_max_sparse_blocks, sparse_block_kv) -> Tuple[int, int]:
    return (_args.integer(num_max_sparse_blocks, "num_max_sparse_blocks", minimum=0),
            _args.integer(sparse_block_kv, "sparse_block_kv", minimum=1))


def fp8_fp4_sparse_mqa_logits(q, kv, weights, metadata, num_max_sparse_blocks: int, sparse_block_kv: int,
                              use_unaligned_ks: bool = False) -> Tensor:
    """DeepGEMM 2.8's ``fp8_fp4_sparse_mqa_logits``: ``q = (q_fp [M,H,D/2] int8, q_sf [M,H] int32)``
    (MXFP4: packed e2m1 codes, four e8m0 block scales an int32), ``kv = (kv_fp [N,D/2], kv_sf [N]
    int32)``, ``weights [M,H]`` bf16 (or fp32), ``metadata`` from
    :func:`get_sparse_mqa_logits_metadata` (its ranges and block lists) -> bf16 ``[M,
    num_max_sparse_blocks * sparse_block_kv]``: column ``j * sparse_block_kv + o`` of row ``m`` is
    the logit ``sum_h w[m,h] * ReLU(q[m,h] . k[t])`` of key ``t = id_j * sparse_block_kv (+ start %
    sparse_block_kv) + o`` when ``j`` is a counted block and ``t`` is in the row's range (bit for bit
    lig's dense MXFP4 logit, rounded once to bf16), ``-inf`` otherwise. ``num_max_sparse_blocks``,
    ``sparse_block_kv`` and ``use_unaligned_ks`` must be the metadata's.

    Devices: CPU tensors only (the logits are allocated on the CPU, and the CUDA backend has no sparse
    logits): CUDA tensors raise :class:`LigValueError`, in any build."""
    kv_fp, kv_sf = _pair(kv, "kv", "(kv_fp, kv_sf)")
    return torch.ops.lig.fp8_fp4_sparse_mqa_logits(
        *_block_scaled_q(q, "[M,H]"),
        *_registry.tensors((kv_fp, "kv[0]"), (kv_sf, "kv[1]"), (weights, "weights"), (metadata, "metadata")),
        *_sizes(num_max_sparse_blocks, sparse_block_kv), _args.flag(use_unaligned_ks, "use_unaligned_ks"))


def _fp4_cache_views(kv_cache: Tensor, code_bytes: int) -> Tuple[Tensor, Tensor]:
    """The fused FP4 cache uint8 ``[pages, page_kv, 1, D/2 + 4]`` (per page its codes, then one int32 of
    four e8m0 scales per token) as codes ``[pages, page_kv, 1, D/2]`` and int32 scales ``[pages,
    page_kv, 1]``, views of its bytes."""
    if kv_cache.dim() != 4 or kv_cache.dtype != torch.uint8 or kv_cache.shape[2] != 1 or \
            kv_cache.shape[3] != code_bytes + 4:
        raise _args.invalid(f"kv_cache: expected a uint8 [pages, page_kv, 1, {code_bytes + 4}] tensor (D/2 code bytes and "
                            f"an int32 of scales a token), got {kv_cache.dtype} {_args._shape(kv_cache)}")
    pages, width = kv_cache.shape[0], kv_cache.shape[3]
    if kv_cache.stride(3) != 1 or kv_cache.stride(1) != width or (pages > 1 and kv_cache.stride(0) % 4):
        raise _args.invalid(f"kv_cache: expected each page's bytes contiguous, got strides {tuple(kv_cache.stride())}")
    codes, scales = cache_views(kv_cache, code_bytes, torch.uint8)
    return codes, scales.view(torch.int32)


@op("fp8_fp4_paged_sparse_mqa_logits")
def _paged_sparse_op(q_fp: Tensor, q_sf: Tensor, kv_cache: Tensor, weights: Tensor, metadata: Tensor,
                     num_max_sparse_blocks: int, sparse_block_kv: int) -> Tensor:
    _check_q(q_fp, q_sf, weights, 4)
    M, next_n, H = q_fp.shape[0], q_fp.shape[1], q_fp.shape[2]
    if next_n != 1:
        raise _args.invalid(f"q[0]: expected next_n = 1 ([M,1,H,D/2], DeepGEMM's rows), got {next_n}")
    lens, _, table, ids, head = _unpack(metadata, KIND_PAGED, M, num_max_sparse_blocks, sparse_block_kv, False)
    codes, scales = _fp4_cache_views(kv_cache, q_fp.shape[3])
    if head[8] != kv_cache.shape[1]:
        raise _args.invalid(f"kv_cache: expected page_kv {head[8]} (the metadata's), got {kv_cache.shape[1]}")
    out = torch.empty(_out_shape(q_fp, num_max_sparse_blocks, sparse_block_kv), dtype=torch.bfloat16)

    def args(desc):
        # lig's BSND form: B = M rows of one query each, each with its table row and context length
        return (_fp4(desc, q_fp, "q[0]"), _fp4(desc, codes, "kv_cache"), desc(weights.reshape(M, 1, H), "weights"),
                desc(q_sf.reshape(M, 1, H), "q[1]"), desc(scales, "kv_cache"),
                desc(table.view(M, head[9]), "block_table"), None, desc(lens.view(M, 1), "context_lens"), b"BSND",
                b"PA_BSND", desc(ids.view(M, 1, num_max_sparse_blocks), "sparse_kv_block_indices"), sparse_block_kv,
                False, desc(out.view(M, 1, -1), "logits"))

    _run(args)
    return out


@_paged_sparse_op.register_fake
def _(q_fp, q_sf, kv_cache, weights, metadata, num_max_sparse_blocks, sparse_block_kv):
    _check_q(q_fp, q_sf, weights, 4)
    return q_fp.new_empty(_out_shape(q_fp, num_max_sparse_blocks, sparse_block_kv), dtype=torch.bfloat16)


_paged_sparse_op.refuse_autograd()


def fp8_fp4_paged_sparse_mqa_logits(q, kv_cache, weights, metadata, num_max_sparse_blocks: int,
                                    sparse_block_kv: int) -> Tensor:
    """DeepGEMM 2.8's ``fp8_fp4_paged_sparse_mqa_logits``: ``q = (q_fp [M,1,H,D/2] int8, q_sf
    [M,1,H] int32)``, ``kv_cache`` DeepGEMM's fused FP4 cache uint8 ``[pages, page_kv, 1, D/2 + 4]``,
    ``weights [M,H]`` bf16 (or fp32), ``metadata`` from :func:`get_paged_sparse_mqa_logits_metadata`
    -> bf16 ``[M, num_max_sparse_blocks * sparse_block_kv]``: column ``j * sparse_block_kv + o`` of
    row ``m`` is the logit of the row's logical key ``t = id_j * sparse_block_kv + o`` (read through
    its block-table row) when ``j`` is a counted block and ``t < context_lens[m]``, ``-inf``
    otherwise; bit for bit lig's dense paged MXFP4 logit, rounded once to bf16.

    Devices: CPU tensors only (the logits are allocated on the CPU, and the CUDA backend has no sparse
    logits): CUDA tensors raise :class:`LigValueError`, in any build."""
    return torch.ops.lig.fp8_fp4_paged_sparse_mqa_logits(
        *_block_scaled_q(q, "[M,1,H]"),
        *_registry.tensors((kv_cache, "kv_cache"), (weights, "weights"), (metadata, "metadata")),
        *_sizes(num_max_sparse_blocks, sparse_block_kv))
