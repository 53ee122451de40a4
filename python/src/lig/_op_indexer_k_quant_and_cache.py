"""lig::indexer_k_quant_and_cache, vLLM's cache writer for the indexer's keys: quantizes new keys to
FP8 (one fp32 scale per quant_block_size values) and writes them in place into the fused paged
cache at given slots, the layout lig.fp8_paged_mqa_topk and DeepGEMM's fp8_paged_mqa_logits
read; and lig.indexer_k_quant_and_cache."""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from . import _args
from ._act_quant import block_quantize, check_block, scale_fmt_rounds
from ._args import FLOAT_DTYPES, INDEX_DTYPES
from ._fused_cache import check_token_rows
from ._registry import op, tensors


def _check(k, kv_cache, slot_mapping, quant_block_size, scale_fmt) -> None:
    """Shapes and dtypes (no tensor contents: the fake kernel runs this too)."""
    _args.tensor(k, "k", FLOAT_DTYPES)
    _args.tensor(kv_cache, "kv_cache", (torch.uint8,))
    _args.tensor(slot_mapping, "slot_mapping", INDEX_DTYPES)
    shape = _args._shape
    if k.dim() != 2:
        raise _args.invalid(f"k: expected rank 2 ([T,D]), got rank {k.dim()} shape {shape(k)}")
    T, D = k.shape
    qbs = check_block(k, quant_block_size, "k", "quant_block_size")
    scale_fmt_rounds(scale_fmt)
    stride = D + D // qbs * 4
    check_token_rows(kv_cache, stride, f"D + D / quant_block_size * 4 bytes per token, D = {D}")
    if tuple(slot_mapping.shape) != (T,):
        raise _args.invalid(f"slot_mapping: expected shape [{T}] ([T] like k), got {shape(slot_mapping)}")


def _check_slots(slot_mapping: Tensor, capacity: int) -> None:
    """Every slot < 0 (skipped) or in [0, num_blocks * block_size), and no slot twice (a slot holds
    one token; two would race in vLLM's kernel and leave an unspecified one here)."""
    slots = slot_mapping.cpu().to(torch.int64)
    bad = (slots >= capacity).nonzero()
    if bad.numel():
        t = int(bad[0, 0])
        raise _args.invalid(f"slot_mapping: expected slots below num_blocks * block_size = {capacity} (or < 0 to "
                            f"skip a token), got {int(slots[t])} at position {t}")
    kept = (slots >= 0).nonzero().flatten()
    order = torch.sort(slots[kept], stable=True).indices
    sorted_slots = slots[kept][order]
    twice = (sorted_slots[1:] == sorted_slots[:-1]).nonzero()
    if twice.numel():
        i = int(twice[0, 0])
        first, second = sorted(int(kept[order[j]]) for j in (i, i + 1))
        raise _args.invalid(f"slot_mapping: expected distinct slots (a slot holds one token), got slot "
                            f"{int(sorted_slots[i])} at positions {first} and {second}")


@op("indexer_k_quant_and_cache", mutates_args=("kv_cache",))
def _indexer_k_quant_and_cache_op(
    k: Tensor, kv_cache: Tensor, slot_mapping: Tensor, quant_block_size: int, scale_fmt: Optional[str]
) -> None:
    _check(k, kv_cache, slot_mapping, quant_block_size, scale_fmt)
    num_blocks, block_size, stride = kv_cache.shape
    _check_slots(slot_mapping, num_blocks * block_size)
    D = k.shape[1]
    # quantize every token first (vLLM's scale: the quotient amax / 448), then write the kept ones
    y, s = block_quantize(k.detach(), quant_block_size, divide=True, ue8m0=scale_fmt_rounds(scale_fmt))
    kept = (slot_mapping >= 0).nonzero().flatten().to(y.device)
    if kept.numel() == 0:
        return
    slots = slot_mapping.to(torch.int64)[kept]
    block, offset = (slots // block_size).unsqueeze(1), (slots % block_size).unsqueeze(1)
    # each block's bytes as one row: block_size * D code bytes, then block_size * D / qbs fp32 scales
    rows = kv_cache.as_strided((num_blocks, block_size * stride), (kv_cache.stride(0) if num_blocks > 1 else block_size * stride, 1))
    code_bytes = y[kept].view(torch.uint8)
    scale_bytes = s[kept].contiguous().view(torch.uint8)  # [n, D / qbs * 4], the host's byte order
    rows[block, offset * D + torch.arange(D, device=y.device)] = code_bytes
    n_scale = scale_bytes.shape[1]
    rows[block, block_size * D + offset * n_scale + torch.arange(n_scale, device=y.device)] = scale_bytes


@_indexer_k_quant_and_cache_op.register_fake
def _(k, kv_cache, slot_mapping, quant_block_size, scale_fmt):
    _check(k, kv_cache, slot_mapping, quant_block_size, scale_fmt)


def indexer_k_quant_and_cache(
    k: Tensor, kv_cache: Tensor, slot_mapping: Tensor, quant_block_size: int, scale_fmt: Optional[str]
) -> None:
    """vLLM's ``indexer_k_quant_and_cache``: quantizes ``k`` ``[T,D]`` (float32, float16 or
    bfloat16) and writes it in place into ``kv_cache`` uint8 ``[num_blocks,block_size,
    D + D/quant_block_size*4]``. Token ``t`` with ``slot = slot_mapping[t] >= 0`` goes to block
    ``slot // block_size``, offset ``o = slot % block_size``: its ``D`` fp8 codes at bytes
    ``[o*D, o*D + D)`` of the block, its ``D / quant_block_size`` fp32 scales at bytes
    ``block_size*D + o*(D/quant_block_size)*4`` onwards (each block: all codes, then all scales).
    Per block of ``quant_block_size`` values: ``scale = max(amax, 1e-4) / 448`` (fp32 quotient),
    with ``scale_fmt="ue8m0"`` rounded up to a power of two (exactly; vLLM's ``exp2f(ceilf(log2f))``
    can round an fp32 scale just above a power of two down), codes ``fp8(x / scale)`` saturated
    to +-448. ``scale_fmt`` None or ``""``: scales as computed. ``slot_mapping`` int64 (or int32)
    ``[T]``; a slot < 0 skips its token. With ``quant_block_size = D`` the cache is DeepGEMM's
    fused cache (viewed ``[num_blocks, block_size, 1, D + 4]``) that :func:`fp8_paged_mqa_topk`
    reads.

    A slot ``>= num_blocks * block_size`` or a slot given twice raises ``LigValueError`` naming
    ``slot_mapping`` and the position, before anything is written. Returns None.

    Devices: CPU or CUDA tensors, all on one device, in any build: this is torch code (it calls no C),
    so it runs where its tensors are.
    """
    k, kv_cache, slot_mapping = tensors((k, "k"), (kv_cache, "kv_cache"), (slot_mapping, "slot_mapping"))
    torch.ops.lig.indexer_k_quant_and_cache(k, kv_cache, slot_mapping,
                                            _args.integer(quant_block_size, "quant_block_size", minimum=1),
                                            None if scale_fmt is None else _args.string(scale_fmt, "scale_fmt"))
