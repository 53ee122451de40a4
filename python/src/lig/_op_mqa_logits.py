"""DeepGEMM's indexer logits under DeepGEMM's names, on lig's CPU operator (docs/contract.md 2.6):
lig::fp8_mqa_logits, lig::fp8_paged_mqa_logits and lig::get_paged_mqa_logits_metadata, their fake
rules, and the public functions lig.fp8_mqa_logits, lig.fp8_paged_mqa_logits and
lig.get_paged_mqa_logits_metadata, so that an engine can swap ``import deep_gemm`` for lig.

The logits are not differentiable (the operator has no backward): a gradient that reaches them
raises. FP8 e4m3 (``torch.float8_e4m3fn``) and INT8 (``torch.int8``) queries and keys are taken.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args, _capi, _lib, _registry
from ._fused_cache import cache_views
from ._lib import Descriptors
from ._registry import op, tensor

CODE_DTYPES = (torch.float8_e4m3fn, torch.int8)
RANGE_DTYPES = (torch.int32, torch.int64)


def _codes(q: Tensor, k: Tensor, names: Tuple[str, str]) -> None:
    _args.tensor(q, names[0], CODE_DTYPES)
    _args.tensor(k, names[1], CODE_DTYPES + (torch.uint8,))


def _logits(get_args) -> None:
    """Phase 1 with the descriptors get_args(desc) makes, then lig_quant_logits."""
    with Descriptors() as desc:
        _registry.run(_capi.lig_quant_logits_get_workspace_size, _capi.lig_quant_logits, get_args(desc),
                      "lig_quant_logits")


# ---- fp8_mqa_logits: one sequence, absolute key ranges ----------------------------------------


def _mqa_shape(q: Tensor, k: Tensor, max_seqlen_k: int):
    if q.dim() != 3 or k.dim() != 2:
        raise _args.invalid(f"q, kv[0]: expected q [M,H,D] and k [N,D], got q {tuple(q.shape)} and k {tuple(k.shape)}")
    return (q.shape[0], max_seqlen_k if max_seqlen_k > 0 else k.shape[0])


@op("fp8_mqa_logits")
def _fp8_mqa_logits_op(q: Tensor, k: Tensor, k_scale: Tensor, weights: Tensor, cu_seq_len_k_start: Tensor,
                       cu_seq_len_k_end: Tensor, clean_logits: bool, max_seqlen_k: int) -> Tensor:
    _codes(q, k, ("q", "kv[0]"))
    out = torch.empty(_mqa_shape(q, k, max_seqlen_k), dtype=torch.float32)
    mqa_logits(q, None, k, k_scale, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits, max_seqlen_k, out)
    return out


def mqa_logits(q: Tensor, q_sf: Optional[Tensor], k: Tensor, k_scale: Tensor, weights: Tensor, start: Tensor,
               end: Tensor, clean_logits: bool, max_seqlen_k: int, out: Tensor, code=None) -> None:
    """lig_quant_logits in its TND form (one sequence, absolute ranges) into out [M, W]: q [M,H,D]
    (or MXFP4 [M,H,D/2] with q_sf, ``code`` the lig dtype its bytes are described as), keys
    [N,1,D] with scales [N,1] (or [N,1,words]), logits [T1,W]."""
    N = k.shape[0]
    key = k.unsqueeze(1)
    # [N] (or [N,1]) -> [N,1]; MXFP4's [N, words] or [N, D/32] bytes -> [N,1,..]
    scale = k_scale.reshape(N, 1) if k_scale.numel() == N and k_scale.dim() <= 2 else k_scale.unsqueeze(1)

    def args(desc):
        return (desc(q, "q[0]" if code else "q", code), desc(key, "kv[0]", code), desc(weights, "weights"),
                desc(q_sf, "q[1]"), desc(scale, "kv[1]"), None, desc(start, "cu_seq_len_k_start"),
                desc(end, "cu_seq_len_k_end"), b"TND", b"TND", clean_logits, max_seqlen_k > 0, desc(out, "logits"), 0,
                None, None, None)

    _logits(args)


@_fp8_mqa_logits_op.register_fake
def _(q, k, k_scale, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits, max_seqlen_k):
    _codes(q, k, ("q", "kv[0]"))
    return q.new_empty(_mqa_shape(q, k, max_seqlen_k), dtype=torch.float32)


_fp8_mqa_logits_op.refuse_autograd()


def fp8_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits: bool = True,
                   max_seqlen_k: int = 0) -> Tensor:
    """DeepGEMM's ``fp8_mqa_logits``: ``q [M,H,D]``, ``kv = (k [N,D], k_scale [N] fp32)``,
    ``weights [M,H]`` fp32, ``cu_seq_len_k_start`` / ``cu_seq_len_k_end`` ``[M]`` int32 (CPU) ->
    ``[M,N]`` fp32 with ``logits[m,n] = sum_h weights[m,h] * ReLU((q[m,h] . k[n]) * k_scale[n])`` for
    ``start[m] <= n < end[m]``. ``clean_logits``: ``-inf`` at the other columns (else they are left
    as torch.empty made them). ``max_seqlen_k > 0``: the compressed ``[M, max_seqlen_k]`` form,
    column ``j`` the key ``start[m] + j``. q and k are ``torch.float8_e4m3fn`` or ``torch.int8``.

    Devices: CPU tensors only (the logits are allocated on the CPU, and the CUDA backend has no FP8 /
    INT8 operator yet): CUDA tensors raise :class:`LigValueError`, in any build."""
    if not isinstance(kv, (tuple, list)) or len(kv) != 2:
        raise TypeError(f"lig: kv: expected a pair (k [N,D], k_scale [N]), got {type(kv).__name__}")
    k, k_scale = kv
    return torch.ops.lig.fp8_mqa_logits(
        *_registry.tensors((q, "q"), (k, "kv[0]"), (k_scale, "kv[1]"), (weights, "weights"),
                           (cu_seq_len_k_start, "cu_seq_len_k_start"), (cu_seq_len_k_end, "cu_seq_len_k_end")),
        _args.flag(clean_logits, "clean_logits"), _args.integer(max_seqlen_k, "max_seqlen_k", minimum=0))


# ---- fp8_paged_mqa_logits: decode over DeepGEMM's fused uint8 cache ---------------------------


def _cache_views(kv_cache: Tensor, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
    """The keys and the scales of the fused cache [num_blocks, block_kv, 1, D+4] uint8 (each block
    its block_kv * D codes, then its block_kv fp32 scales), as two strided views of its bytes."""
    if kv_cache.dim() != 4 or kv_cache.dtype != torch.uint8 or kv_cache.shape[2] != 1 or kv_cache.shape[3] < 4:
        raise _args.invalid(f"kv_cache: expected a uint8 [num_blocks, block_kv, 1, D+4] tensor, got {kv_cache.dtype} "
                            f"{tuple(kv_cache.shape)}")
    nb, bkv, _, width = kv_cache.shape
    D = width - 4
    if kv_cache.stride(3) != 1 or kv_cache.stride(1) != width or (nb > 1 and kv_cache.stride(0) % 4):
        raise _args.invalid(f"kv_cache: expected each block's bytes contiguous, got strides {tuple(kv_cache.stride())}")
    return cache_views(kv_cache, D, dtype)


def _key_ends(context_lens: Tensor, next_n: int) -> Tensor:
    """Row (b, i)'s key_end: context_lens[b] - next_n + i + 1 (1-D, at least 0) or context_lens[b, i]."""
    if context_lens.dim() == 2:
        return context_lens
    steps = torch.arange(next_n, dtype=context_lens.dtype, device=context_lens.device)
    return (context_lens.unsqueeze(1) - next_n + 1 + steps).clamp_min(0)


def _check_indices(indices: Optional[Tensor], rows: int, next_n: int) -> None:
    """DeepGEMM's varlen ``indices``: int32 ``[B]`` with next_n 1 (shapes only: the fake rule runs it)."""
    if indices is None:
        return
    _args.tensor(indices, "indices", (torch.int32,))
    if indices.dim() != 1 or indices.shape[0] != rows:
        raise _args.invalid(f"indices: expected shape [{rows}] (one sequence id per row, [B] like q), got "
                            f"{_args._shape(indices)}")
    if next_n != 1:
        raise _args.invalid(f"indices: expected next_n = 1 with indices (varlen rows are one query each, as DeepGEMM "
                            f"asserts), got next_n = {next_n}")


def _runs(indices: Tensor) -> Tuple[Tensor, Tensor]:
    """(first, last) row of each row's run: a run is a maximal stretch of equal ``indices`` (one
    sequence's query tokens, DeepGEMM's "varlen request"), int64 [B] on the host."""
    ids = indices.cpu()
    rows = torch.arange(ids.shape[0])
    opens = torch.ones(ids.shape[0], dtype=torch.bool)
    opens[1:] = ids[1:] != ids[:-1]
    closes = torch.ones(ids.shape[0], dtype=torch.bool)
    closes[:-1] = opens[1:]
    if ids.shape[0] == 0:
        return rows, rows
    first = torch.cummax(torch.where(opens, rows, torch.zeros_like(rows)), 0).values
    last = torch.cummin(torch.where(closes, rows, torch.full_like(rows, ids.shape[0])).flip(0), 0).values.flip(0)
    return first, last


def _varlen_table(indices: Tensor, ends: Tensor, block_table: Tensor) -> Tensor:
    """The block table DeepGEMM's varlen kernel reads: row t's run's first row (its request's
    pages), checked against what that kernel computes: it scores a run's keys up to its last
    row's context length, so a longer row before it is refused rather than left unscored."""
    first, last = _runs(indices)
    lens = ends.reshape(-1).cpu().to(torch.int64)
    bad = (lens > lens[last]).nonzero()
    if bad.numel():
        t = int(bad[0, 0])
        raise _args.invalid(f"context_lens: expected each row's context length <= that of the last row of its run of "
                            f"equal indices (DeepGEMM's varlen kernel scores a run's keys up to its last row's length), "
                            f"got {int(lens[t])} at row {t} and {int(lens[last[t]])} at row {int(last[t])}")
    return block_table.index_select(0, first.to(block_table.device))


@op("fp8_paged_mqa_logits")
def _fp8_paged_mqa_logits_op(q: Tensor, kv_cache: Tensor, weights: Tensor, context_lens: Tensor, block_table: Tensor,
                             schedule_meta: Optional[Tensor], max_context_len: int, clean_logits: bool,
                             indices: Optional[Tensor] = None) -> Tensor:
    _codes(q, kv_cache, ("q", "kv_cache"))
    if q.dim() != 4:
        raise _args.invalid(f"q: expected [B,next_n,H,D], got {tuple(q.shape)}")
    _check_indices(indices, q.shape[0], q.shape[1])
    out = torch.empty((q.shape[0] * q.shape[1], max_context_len), dtype=torch.float32)
    keys, scales = _cache_views(kv_cache, q.dtype)
    paged_logits(q, None, keys, scales, weights, context_lens, block_table, schedule_meta, clean_logits, indices, out)
    return out


def paged_logits(q: Tensor, q_sf: Optional[Tensor], keys: Tensor, scales: Tensor, weights: Tensor,
                 context_lens: Tensor, block_table: Tensor, schedule_meta: Optional[Tensor], clean_logits: bool,
                 indices: Optional[Tensor], out: Tensor, code=None) -> None:
    """lig_quant_logits over a paged cache's two views into out [B*next_n, max_context_len]: q
    [B,next_n,H,D] (or MXFP4 [B,next_n,H,D/2] with q_sf [B,next_n,H], ``code`` the lig dtype the
    query's and the keys' bytes are described as), DeepGEMM's row ends and varlen indices."""
    B, next_n, H = q.shape[0], q.shape[1], q.shape[2]
    ends = _key_ends(context_lens, next_n)
    table = block_table if indices is None else _varlen_table(indices, ends, block_table)

    def args(desc):
        return (desc(q, "q[0]" if code else "q", code), desc(keys, "kv_cache", code),
                desc(weights.reshape(B, next_n, H), "weights"), desc(q_sf, "q[1]"), desc(scales, "kv_cache"),
                desc(table, "block_table"), None, desc(ends, "context_lens"), b"BSND", b"PA_BSND", clean_logits, False,
                desc(out.view(B, next_n, out.shape[1]), "logits"), 0, None, None, desc(schedule_meta, "schedule_meta"))

    _logits(args)


@_fp8_paged_mqa_logits_op.register_fake
def _(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits, indices=None):
    _codes(q, kv_cache, ("q", "kv_cache"))
    if q.dim() == 4:
        _check_indices(indices, q.shape[0], q.shape[1])
    return q.new_empty((q.shape[0] * q.shape[1], max_context_len), dtype=torch.float32)


_fp8_paged_mqa_logits_op.refuse_autograd()


def fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len: int,
                         clean_logits: bool = False, indices=None) -> Tensor:
    """DeepGEMM's ``fp8_paged_mqa_logits``: ``q [B,next_n,H,D]``, ``kv_cache [num_blocks, block_kv, 1,
    D+4]`` uint8 (per block ``block_kv * D`` codes, then ``block_kv`` fp32 scales), ``weights
    [B*next_n, H]`` fp32, ``context_lens [B]`` (row ``(b, i)`` sees keys ``< context_lens[b] - next_n
    + i + 1``) or ``[B, next_n]`` (keys ``< context_lens[b, i]``) int32, ``block_table [B, max_blocks]``
    int32, ``schedule_meta`` from :func:`get_paged_mqa_logits_metadata` (or None) -> ``[B*next_n,
    max_context_len]`` fp32. ``clean_logits``: ``-inf`` at the keys a row does not see (else those
    columns are left as torch.empty made them). The schedule splits the work over lig's threads; the
    logits are the same bytes with or without it. q's dtype (``torch.float8_e4m3fn`` or ``torch.int8``)
    says how the cache's codes are read.

    ``indices`` (DeepGEMM's varlen form): int32 ``[B]``, the sequence of each row, with next_n 1; a
    maximal run of equal values is one sequence's query tokens, and every row of a run reads the
    keys through the block table row of the run's first row (DeepGEMM's kernel does; its callers
    repeat a sequence's table row for each of its tokens). Each row still sees keys ``<`` its own
    context length, which may not exceed that of its run's last row (DeepGEMM scores a run's keys
    up to that length): a longer one raises ``LigValueError`` naming ``context_lens``.

    Devices: CPU tensors only (the logits are allocated on the CPU, and the CUDA backend has no FP8 /
    INT8 operator yet): CUDA tensors raise :class:`LigValueError`, in any build."""
    return torch.ops.lig.fp8_paged_mqa_logits(
        *_registry.tensors((q, "q"), (kv_cache, "kv_cache"), (weights, "weights"), (context_lens, "context_lens"),
                           (block_table, "block_table")),
        _registry.optional_tensor(schedule_meta, "schedule_meta"),
        _args.integer(max_context_len, "max_context_len", minimum=0), _args.flag(clean_logits, "clean_logits"),
        _registry.optional_tensor(indices, "indices"))


# ---- get_paged_mqa_logits_metadata: the work split --------------------------------------------


@op("get_paged_mqa_logits_metadata")
def _metadata_op(context_lens: Tensor, block_kv: int, num_sms: int, indices: Optional[Tensor] = None) -> Tensor:
    _args.tensor(context_lens, "context_lens", RANGE_DTYPES)
    _check_indices(indices, context_lens.shape[0] if context_lens.dim() else 0,
                   context_lens.shape[1] if context_lens.dim() == 2 else 1)
    out = torch.empty((num_sms + 1, 2), dtype=torch.int32)
    ends = context_lens.unsqueeze(1) if context_lens.dim() == 1 else context_lens  # batch b's longest: its last row
    with Descriptors() as desc:
        status = _capi.lig_quant_logits_schedule(desc(ends, "context_lens"), block_kv, num_sms, desc(out, "schedule"))
        _lib.check(status, "lig_quant_logits_schedule")
    return out


@_metadata_op.register_fake
def _(context_lens, block_kv, num_sms, indices=None):
    _check_indices(indices, context_lens.shape[0] if context_lens.dim() else 0,
                   context_lens.shape[1] if context_lens.dim() == 2 else 1)
    return context_lens.new_empty((num_sms + 1, 2), dtype=torch.int32)


_metadata_op.refuse_autograd()


def get_paged_mqa_logits_metadata(context_lens, block_kv: int, num_sms: int, indices=None) -> Tensor:
    """DeepGEMM's ``get_paged_mqa_logits_metadata``: ``[num_sms + 1, 2]`` int32, entry ``w`` the
    (batch, block of ``block_kv`` keys) where worker ``w``'s piece of the blocks starts (balanced:
    equal numbers of blocks, the blocks of batch ``b`` covering its longest context), entry
    ``num_sms`` = ``(B, 0)``. lig runs each piece as one unit of work over its threads.

    ``indices``: DeepGEMM's varlen sequence ids (int32 ``[B]``, next_n 1), checked as
    :func:`fp8_paged_mqa_logits` checks them. DeepGEMM's schedule groups a run of equal ids so
    that its GPU reads the run's keys once; lig's split is per row either way (each row reads
    its own keys), so the schedule is the same with or without them, and
    :func:`fp8_paged_mqa_logits` gives the same bytes under any schedule.

    Devices: CPU tensors only (lig_quant_logits_schedule reads and writes host memory): a CUDA
    ``context_lens`` raises :class:`LigValueError`, in any build."""
    return torch.ops.lig.get_paged_mqa_logits_metadata(tensor(context_lens, "context_lens"),
                                                       _args.integer(block_kv, "block_kv", minimum=1),
                                                       _args.integer(num_sms, "num_sms", minimum=1),
                                                       _registry.optional_tensor(indices, "indices"))
