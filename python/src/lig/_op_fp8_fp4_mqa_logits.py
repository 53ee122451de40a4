"""DeepGEMM's current indexer logits names, on lig's CPU operator (docs/contract.md 2.6):
lig::fp8_fp4_mqa_logits, lig::fp8_fp4_paged_mqa_logits and lig::get_mqa_logits_metadata, their fake
rules, and the public functions lig.fp8_fp4_mqa_logits, lig.fp8_fp4_paged_mqa_logits and
lig.get_mqa_logits_metadata (lig.get_paged_mqa_logits_metadata serves the paged one).

``q`` is a pair ``(q_fp, q_sf)``: ``q_sf`` None means FP8 (or INT8) queries and keys, as the legacy
``fp8_*`` names take them; ``q_sf`` present means MXFP4 for both q and the keys (DeepGEMM's
``is_fp4 = q_sf.has_value()``; no source defines a mixed FP8 x FP4 form). MXFP4 codes are int8 or
uint8 tensors of ``D/2`` bytes (or torch's float4_e2m1fn_x2), described to the library as
FLOAT4_E2M1X2; the scales are int32 words of four e8m0 bytes (or their uint8 bytes).
``logits_dtype`` is torch.float32 or torch.bfloat16 (the fp32 logits rounded once).

Both of DeepGEMM's spellings are taken (docs/inference.md, "The Python functions"): 2.6's keywords
``clean_logits, max_seqlen_k, logits_dtype`` / ``clean_logits, logits_dtype, indices`` and 2.8's
positional ``max_seqlen_k, schedule_meta`` / ``indices``. Not differentiable.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args, _capi, _threads
from ._fused_cache import cache_views
from ._op_fp8_paged_mqa_topk import FP4_CODES
from ._op_mqa_logits import (RANGE_DTYPES, _cache_views, _check_indices, _codes, _mqa_shape, mqa_logits,
                             paged_logits)
from ._registry import op, optional_tensor, tensors

LOGITS_DTYPES = (torch.float32, torch.bfloat16)
FP4_SCALES = (torch.int32, torch.uint8)


def _fp4(q: Tensor, k: Tensor, q_sf: Optional[Tensor], k_sf: Tensor, names: Tuple[str, str]) -> bool:
    """Dtypes of the codes and scales (no contents: the fake rules run this); True for MXFP4."""
    if q_sf is None:
        _codes(q, k, names)
        return False
    _args.tensor(q, names[0], FP4_CODES)
    _args.tensor(k, names[1], FP4_CODES)
    _args.tensor(q_sf, "q[1]", FP4_SCALES)
    _args.tensor(k_sf, "kv[1]" if names[1] == "kv[0]" else names[1], FP4_SCALES)
    return True


def _logits_dtype(dtype) -> None:
    if dtype not in LOGITS_DTYPES:
        raise _args.invalid(f"logits_dtype: expected torch.float32 or torch.bfloat16, got {dtype}")


def _pair(x, name: str, what: str):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(f"lig: {name}: expected a pair {what}, got {type(x).__name__}")
    return x


# ---- get_mqa_logits_metadata: pieces of rows ---------------------------------------------------


def _check_pieces(schedule_meta: Optional[Tensor], rows: int) -> None:
    """The shape and dtype of a contiguous schedule: int32 [P + 1] row starts."""
    if schedule_meta is None:
        return
    _args.tensor(schedule_meta, "schedule_meta", (torch.int32,))
    if schedule_meta.dim() != 1 or schedule_meta.shape[0] < 2:
        raise _args.invalid(f"schedule_meta: expected int32 [pieces + 1] row starts (get_mqa_logits_metadata's), got "
                            f"shape {_args._shape(schedule_meta)}")


def _pieces(schedule_meta: Optional[Tensor], rows: int):
    """The (first, end) rows of each piece of a schedule (one piece without one), its entries checked:
    0 first, in order, ``rows`` last."""
    if schedule_meta is None:
        return [(0, rows)]
    starts = [int(v) for v in schedule_meta.cpu().tolist()]
    if starts[0] != 0 or starts[-1] != rows or any(b < a for a, b in zip(starts, starts[1:])):
        raise _args.invalid(f"schedule_meta: expected row starts from 0 to {rows} (M) in order, got {starts}")
    return [(a, b) for a, b in zip(starts, starts[1:]) if b > a]


@op("get_mqa_logits_metadata")
def _mqa_metadata_op(cu_seq_len_k_start: Tensor, cu_seq_len_k_end: Tensor, num_kv_tokens: int,
                     num_heads: int) -> Tensor:
    _args.tensor(cu_seq_len_k_start, "cu_seq_len_k_start", RANGE_DTYPES)
    _args.tensor(cu_seq_len_k_end, "cu_seq_len_k_end", RANGE_DTYPES)
    pieces = max(1, _threads.current())
    rows = cu_seq_len_k_end.shape[0]
    # balanced by the keys each row scores (num_heads scales every row alike): piece p starts at
    # the first row whose cumulative work reaches p / pieces of the total
    work = (cu_seq_len_k_end.cpu().to(torch.int64) - cu_seq_len_k_start.cpu().to(torch.int64)).clamp_min(0)
    done = torch.cumsum(work, 0) - work
    total = int(work.sum())
    goals = torch.tensor([(p * total + pieces - 1) // pieces for p in range(pieces)], dtype=torch.int64)
    starts = torch.searchsorted(done, goals) if rows else torch.zeros(pieces, dtype=torch.int64)
    starts[0] = 0
    return torch.cat([starts, torch.tensor([rows])]).to(torch.int32)


@_mqa_metadata_op.register_fake
def _(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, num_heads):
    _args.tensor(cu_seq_len_k_start, "cu_seq_len_k_start", RANGE_DTYPES)
    _args.tensor(cu_seq_len_k_end, "cu_seq_len_k_end", RANGE_DTYPES)
    return cu_seq_len_k_start.new_empty((max(1, _threads.current()) + 1,), dtype=torch.int32)


_mqa_metadata_op.refuse_autograd()


def get_mqa_logits_metadata(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens: int, num_heads: int) -> Tensor:
    """DeepGEMM 2.8's ``get_mqa_logits_metadata``: the work split :func:`fp8_fp4_mqa_logits` takes as
    ``schedule_meta``. lig's is int32 ``[P + 1]``, the first row of each of P pieces of the query rows
    (P = lig's thread count), balanced by the keys each row scores, then ``M``. The logits are the
    same bytes with or without it (each row's scores do not depend on the rows beside it).
    ``num_kv_tokens`` and ``num_heads`` are DeepGEMM's arguments (checked, not needed here).

    Devices: CPU tensors only."""
    return torch.ops.lig.get_mqa_logits_metadata(
        *tensors((cu_seq_len_k_start, "cu_seq_len_k_start"), (cu_seq_len_k_end, "cu_seq_len_k_end")),
        _args.integer(num_kv_tokens, "num_kv_tokens", minimum=0), _args.integer(num_heads, "num_heads", minimum=1))


# ---- fp8_fp4_mqa_logits ------------------------------------------------------------------------


@op("fp8_fp4_mqa_logits")
def _mqa_op(q: Tensor, q_sf: Optional[Tensor], k: Tensor, k_sf: Tensor, weights: Tensor, cu_seq_len_k_start: Tensor,
            cu_seq_len_k_end: Tensor, clean_logits: bool, max_seqlen_k: int, logits_dtype: torch.dtype,
            schedule_meta: Optional[Tensor]) -> Tensor:
    fp4 = _fp4(q, k, q_sf, k_sf, ("q[0]", "kv[0]"))
    _logits_dtype(logits_dtype)
    M = _mqa_shape(q, k, max_seqlen_k)[0]
    _check_pieces(schedule_meta, M)
    out = torch.empty(_mqa_shape(q, k, max_seqlen_k), dtype=logits_dtype)
    code = _capi.LIG_FLOAT4_E2M1X2 if fp4 else None
    for a, b in _pieces(schedule_meta, M):  # each piece of rows one call; a row's bytes do not depend on it
        mqa_logits(q[a:b], None if q_sf is None else q_sf[a:b], k, k_sf, weights[a:b], cu_seq_len_k_start[a:b],
                   cu_seq_len_k_end[a:b], clean_logits, max_seqlen_k, out[a:b], code)
    return out


@_mqa_op.register_fake
def _(q, q_sf, k, k_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits, max_seqlen_k, logits_dtype,
      schedule_meta):
    _fp4(q, k, q_sf, k_sf, ("q[0]", "kv[0]"))
    _logits_dtype(logits_dtype)
    shape = _mqa_shape(q, k, max_seqlen_k)
    _check_pieces(schedule_meta, shape[0])
    return q.new_empty(shape, dtype=logits_dtype)


_mqa_op.refuse_autograd()


def _mqa_spelling(rest: tuple, clean_logits, max_seqlen_k, logits_dtype, schedule_meta):
    """The trailing arguments of either spelling: 2.6 ``(clean_logits, max_seqlen_k, logits_dtype)``
    or 2.8 ``(max_seqlen_k, schedule_meta)``, told apart by the first (a bool, or an int)."""
    names = ("max_seqlen_k", "schedule_meta") if rest and not isinstance(rest[0], bool) and \
        isinstance(rest[0], int) else ("clean_logits", "max_seqlen_k", "logits_dtype")
    if len(rest) > len(names):
        raise TypeError(f"lig: fp8_fp4_mqa_logits: expected at most {5 + len(names)} positional arguments, got "
                        f"{5 + len(rest)}")
    given = {"clean_logits": clean_logits, "max_seqlen_k": max_seqlen_k, "logits_dtype": logits_dtype,
             "schedule_meta": schedule_meta}
    for name, value in zip(names, rest):
        if given[name] is not None:
            raise TypeError(f"lig: fp8_fp4_mqa_logits: got multiple values for argument '{name}'")
        given[name] = value
    return given


def fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, *rest, clean_logits=None,
                       max_seqlen_k=None, logits_dtype=None, schedule_meta=None) -> Tensor:
    """DeepGEMM's ``fp8_fp4_mqa_logits``: ``q = (q_fp, q_sf)``, ``kv = (kv_fp, kv_sf)``.

    - MXFP4 (``q_sf`` given): ``q_fp [M,H,D/2]`` int8 / uint8 codes, ``q_sf [M,H]`` int32 (or uint8
      ``[M,H,D/32]``), ``kv_fp [N,D/2]``, ``kv_sf [N]`` int32 (or uint8 ``[N,D/32]``).
    - FP8 / INT8 (``q_sf`` None): ``q_fp [M,H,D]``, ``kv = (k [N,D], k_scale [N] fp32)``, as
      :func:`fp8_mqa_logits`.

    ``weights [M,H]``, ``cu_seq_len_k_start`` / ``cu_seq_len_k_end`` ``[M]`` int32 -> ``[M, N]`` (or
    ``[M, max_seqlen_k]`` when ``max_seqlen_k > 0``, column ``j`` the key ``start[m] + j``) of
    ``logits_dtype`` (torch.float32 or torch.bfloat16, the fp32 logits rounded once to nearest
    even). ``clean_logits`` (default True): ``-inf`` at the unscored columns, else they are left as
    torch.empty made them.

    Spellings: DeepGEMM 2.6 ``(..., clean_logits=True, max_seqlen_k=0, logits_dtype=torch.float32)``
    and 2.8 ``(..., max_seqlen_k, schedule_meta=None)`` (2.8's sixth argument is an int, 2.6's a
    bool); every name is also a keyword. ``schedule_meta``: :func:`get_mqa_logits_metadata`'s
    split, or None; the same bytes either way.

    Devices: CPU tensors only: CUDA tensors raise :class:`LigValueError`, in any build."""
    q_fp, q_sf = _pair(q, "q", "(q_fp, q_sf or None)")
    k, k_sf = _pair(kv, "kv", "(kv_fp, kv_sf)")
    a = _mqa_spelling(rest, clean_logits, max_seqlen_k, logits_dtype, schedule_meta)
    dtype = torch.float32 if a["logits_dtype"] is None else a["logits_dtype"]
    return torch.ops.lig.fp8_fp4_mqa_logits(
        *tensors((q_fp, "q[0]")), optional_tensor(q_sf, "q[1]"),
        *tensors((k, "kv[0]"), (k_sf, "kv[1]"), (weights, "weights"), (cu_seq_len_k_start, "cu_seq_len_k_start"),
                 (cu_seq_len_k_end, "cu_seq_len_k_end")),
        _args.flag(True if a["clean_logits"] is None else a["clean_logits"], "clean_logits"),
        _args.integer(0 if a["max_seqlen_k"] is None else a["max_seqlen_k"], "max_seqlen_k", minimum=0), dtype,
        optional_tensor(a["schedule_meta"], "schedule_meta"))


# ---- fp8_fp4_paged_mqa_logits ------------------------------------------------------------------


def fp4_cache_views(kv_cache: Tensor, half_d: int) -> Tuple[Tensor, Tensor]:
    """DeepGEMM's fused FP4 cache uint8 [num_blocks, block_kv, 1, D/2 + 4] as the codes
    [num_blocks, block_kv, 1, D/2] (uint8, described as FLOAT4_E2M1X2) and the int32 scale words
    [num_blocks, block_kv, 1], views of its bytes (checked first: each block contiguous, the words
    4-byte aligned)."""
    if kv_cache.dim() != 4 or kv_cache.dtype != torch.uint8 or kv_cache.shape[2] != 1 or \
            kv_cache.shape[3] != half_d + 4:
        raise _args.invalid(f"kv_cache: expected a uint8 [num_blocks, block_kv, 1, {half_d + 4}] tensor (D/2 code "
                            f"bytes and one int32 scale word a token, D/2 = {half_d} like q[0]), got {kv_cache.dtype} "
                            f"{tuple(kv_cache.shape)}")
    nb, bkv, _, width = kv_cache.shape
    s = kv_cache.stride()
    if s[3] != 1 or (bkv > 1 and s[1] != width) or (nb > 1 and s[0] % 4) or kv_cache.storage_offset() % 4:
        raise _args.invalid(f"kv_cache: expected each block's bytes contiguous and 4-byte aligned, got strides "
                            f"{tuple(s)} at byte {kv_cache.storage_offset()}")
    if (bkv * half_d) % 4:
        raise _args.invalid(f"kv_cache: expected block_kv * D/2 a multiple of 4 (the scale words follow the codes), got "
                            f"block_kv {bkv}, D/2 {half_d}")
    return cache_views(kv_cache, half_d, torch.uint8, torch.int32)


def _paged_checks(q, q_sf, kv_cache, logits_dtype, indices) -> bool:
    fp4 = _fp4(q, kv_cache, q_sf, kv_cache, ("q[0]", "kv_cache"))
    _logits_dtype(logits_dtype)
    if q.dim() != 4:
        raise _args.invalid(f"q[0]: expected [B,next_n,H,D], got {tuple(q.shape)}")
    _check_indices(indices, q.shape[0], q.shape[1])
    return fp4


@op("fp8_fp4_paged_mqa_logits")
def _paged_op(q: Tensor, q_sf: Optional[Tensor], kv_cache: Tensor, weights: Tensor, context_lens: Tensor,
              block_table: Tensor, schedule_meta: Optional[Tensor], max_context_len: int, clean_logits: bool,
              logits_dtype: torch.dtype, indices: Optional[Tensor]) -> Tensor:
    fp4 = _paged_checks(q, q_sf, kv_cache, logits_dtype, indices)
    out = torch.empty((q.shape[0] * q.shape[1], max_context_len), dtype=logits_dtype)
    keys, scales = fp4_cache_views(kv_cache, q.shape[3]) if fp4 else _cache_views(kv_cache, q.dtype)
    paged_logits(q, q_sf, keys, scales, weights, context_lens, block_table, schedule_meta, clean_logits, indices, out,
                 _capi.LIG_FLOAT4_E2M1X2 if fp4 else None)
    return out


@_paged_op.register_fake
def _(q, q_sf, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits,
      logits_dtype, indices):
    _paged_checks(q, q_sf, kv_cache, logits_dtype, indices)
    return q.new_empty((q.shape[0] * q.shape[1], max_context_len), dtype=logits_dtype)


_paged_op.refuse_autograd()


def fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len: int,
                             *rest, clean_logits=None, logits_dtype=None, indices=None) -> Tensor:
    """DeepGEMM's ``fp8_fp4_paged_mqa_logits``: ``q = (q_fp, q_sf)``.

    - MXFP4 (``q_sf`` given): ``q_fp [B,next_n,H,D/2]`` int8 / uint8, ``q_sf [B,next_n,H]`` int32;
      ``kv_cache`` DeepGEMM's fused FP4 cache uint8 ``[num_blocks, block_kv, 1, D/2 + 4]`` (per block
      ``block_kv * D/2`` code bytes, then ``block_kv`` int32 scale words; what
      :func:`indexer_k_mxfp4_quant_and_cache` writes).
    - FP8 / INT8 (``q_sf`` None): as :func:`fp8_paged_mqa_logits`.

    ``weights [B*next_n, H]``, ``context_lens`` ``[B]`` (row ``(b, i)`` sees keys ``< context_lens[b] -
    next_n + i + 1``) or ``[B, next_n]``, ``block_table [B, max_blocks]``, ``schedule_meta`` from
    :func:`get_paged_mqa_logits_metadata` (or None) -> ``[B*next_n, max_context_len]`` of
    ``logits_dtype`` (torch.float32 or torch.bfloat16). ``clean_logits`` (default False, DeepGEMM's):
    ``-inf`` at the keys a row does not see. ``indices``: DeepGEMM's varlen form, as in
    :func:`fp8_paged_mqa_logits`.

    Spellings: 2.6 ``(..., max_context_len, clean_logits=False, logits_dtype=torch.float32,
    indices=None)`` and 2.8 ``(..., max_context_len, indices=None)`` (2.8's eighth argument is a
    tensor or None, 2.6's a bool); every name is also a keyword.

    Devices: CPU tensors only: CUDA tensors raise :class:`LigValueError`, in any build."""
    q_fp, q_sf = _pair(q, "q", "(q_fp, q_sf or None)")
    names = ("clean_logits", "logits_dtype", "indices") if rest and isinstance(rest[0], bool) else ("indices",)
    if len(rest) > len(names):
        raise TypeError(f"lig: fp8_fp4_paged_mqa_logits: expected at most {7 + len(names)} positional arguments, got "
                        f"{7 + len(rest)}")
    given = {"clean_logits": clean_logits, "logits_dtype": logits_dtype, "indices": indices}
    for name, value in zip(names, rest):
        if given[name] is not None:
            raise TypeError(f"lig: fp8_fp4_paged_mqa_logits: got multiple values for argument '{name}'")
        given[name] = value
    return torch.ops.lig.fp8_fp4_paged_mqa_logits(
        *tensors((q_fp, "q[0]")), optional_tensor(q_sf, "q[1]"),
        *tensors((kv_cache, "kv_cache"), (weights, "weights"), (context_lens, "context_lens"),
                 (block_table, "block_table")),
        optional_tensor(schedule_meta, "schedule_meta"), _args.integer(max_context_len, "max_context_len", minimum=0),
        _args.flag(False if given["clean_logits"] is None else given["clean_logits"], "clean_logits"),
        torch.float32 if given["logits_dtype"] is None else given["logits_dtype"],
        optional_tensor(given["indices"], "indices"))
