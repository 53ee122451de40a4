"""lig::cp_gather_indexer_k_quant_cache, vLLM's gather of a prefill's quantized indexer keys out of the
paged cache into contiguous tensors (the keys fp8_mqa_logits then scores), and
lig.cp_gather_indexer_k_quant_cache. vLLM's kernel copies bytes: each cache block holds its
``block_size`` tokens' code bytes, then their scale bytes, so the same gather serves the FP8 cache
that lig.indexer_k_quant_and_cache writes and the FP4 cache of lig.indexer_k_mxfp4_quant_and_cache."""
from __future__ import annotations

import torch
from torch import Tensor

from . import _args
from ._args import INDEX_DTYPES
from ._fused_cache import check_token_rows
from ._registry import op, tensors

BYTE_DTYPES = (torch.uint8, torch.int8, torch.float8_e4m3fn)


def _check(kv_cache: Tensor, dst_k: Tensor, dst_scale: Tensor, block_table: Tensor, cu_seq_lens: Tensor) -> None:
    """Shapes and dtypes (no tensor contents: the fake kernel runs this too)."""
    _args.tensor(kv_cache, "kv_cache", (torch.uint8,))
    _args.tensor(dst_k, "dst_k", BYTE_DTYPES)
    _args.tensor(dst_scale, "dst_scale", BYTE_DTYPES)
    _args.tensor(block_table, "block_table", INDEX_DTYPES)
    _args.tensor(cu_seq_lens, "cu_seq_lens", INDEX_DTYPES)
    shape = _args._shape
    if dst_k.dim() != 2:
        raise _args.invalid(f"dst_k: expected rank 2 ([num_tokens, code bytes a token]), got {shape(dst_k)}")
    T, W = dst_k.shape
    if dst_scale.dim() != 2 or dst_scale.shape[0] != T:
        raise _args.invalid(f"dst_scale: expected shape [{T}, scale bytes a token] ([num_tokens, ...] like dst_k), got "
                            f"{shape(dst_scale)}")
    S = dst_scale.shape[1]
    if S == 0 or S % 4 or (W * 4) % S:
        # vLLM derives quant_block_size = head_dim * 4 / dst_scale.size(1) and moves 4-byte scales
        raise _args.invalid(f"dst_scale: expected a whole number of 4-byte scales a token dividing 4 * {W} (vLLM's "
                            f"quant_block_size = head_dim * 4 / dst_scale.size(1)), got {S} bytes")
    row = W + S
    if kv_cache.dim() == 4 and kv_cache.shape[2] == 1:
        kv_cache = kv_cache.squeeze(2)
    check_token_rows(kv_cache, row, f"or with a 1 before the last: {W} code bytes and {S} scale bytes a token, as "
                                    f"dst_k and dst_scale")
    if block_table.dim() != 2:
        raise _args.invalid(f"block_table: expected rank 2 ([batch_size, max_blocks]), got {shape(block_table)}")
    if tuple(cu_seq_lens.shape) != (block_table.shape[0] + 1,):
        raise _args.invalid(f"cu_seq_lens: expected shape [{block_table.shape[0] + 1}] ([batch_size + 1], "
                            f"batch_size from block_table), got {shape(cu_seq_lens)}")


def _check_values(cu: Tensor, table: Tensor, num_tokens: int, num_blocks: int, block_size: int) -> None:
    """What vLLM's kernel leaves undefined, refused by name before anything is written: offsets
    that do not start at 0, fall, or end past num_tokens, a sequence longer than its table row
    holds, a block id outside the cache. Offsets may end before num_tokens: vLLM's context-parallel
    caller hands a workspace sized for the longest rank's share; the rows past the end are left
    as they are."""
    if int(cu[0]) != 0 or int(cu[-1]) > num_tokens:
        raise _args.invalid(f"cu_seq_lens: expected offsets from 0 to at most dst_k.shape[0] = {num_tokens}, got "
                            f"{int(cu[0])} .. {int(cu[-1])}")
    lens = cu[1:] - cu[:-1]
    bad = ((lens < 0) | (lens > table.shape[1] * block_size)).nonzero()
    if bad.numel():
        b = int(bad[0, 0])
        raise _args.invalid(f"cu_seq_lens: expected sequence lengths in [0, max_blocks * block_size = "
                            f"{table.shape[1] * block_size}], got {int(lens[b])} for sequence {b}")
    used = torch.arange(table.shape[1])[None, :] * block_size < lens[:, None]
    ids = table[used]
    wrong = ((ids < 0) | (ids >= num_blocks)).nonzero()
    if wrong.numel():
        raise _args.invalid(f"block_table: expected block ids in [0, {num_blocks}) where a sequence has keys, got "
                            f"{int(ids[int(wrong[0, 0])])}")


@op("cp_gather_indexer_k_quant_cache", mutates_args=("dst_k", "dst_scale"))
def _cp_gather_op(kv_cache: Tensor, dst_k: Tensor, dst_scale: Tensor, block_table: Tensor,
                  cu_seq_lens: Tensor) -> None:
    _check(kv_cache, dst_k, dst_scale, block_table, cu_seq_lens)
    if kv_cache.dim() == 4:
        kv_cache = kv_cache.squeeze(2)
    num_blocks, block_size, row = kv_cache.shape
    T, W = dst_k.shape
    S = row - W
    cu, table = cu_seq_lens.cpu().to(torch.int64), block_table.cpu().to(torch.int64)
    _check_values(cu, table, T, num_blocks, block_size)
    used = int(cu[-1])
    if used == 0:
        return
    # token t: sequence b with cu[b] <= t < cu[b+1], position p = t - cu[b] in it
    tokens = torch.arange(used)
    seq = torch.searchsorted(cu, tokens, right=True) - 1
    pos = tokens - cu[seq]
    block = table[seq, pos // block_size].to(kv_cache.device).unsqueeze(1)
    slot = (pos % block_size).to(kv_cache.device).unsqueeze(1)
    # each block's bytes as one row: block_size * W code bytes, then block_size * S scale bytes
    flat = kv_cache.as_strided((num_blocks, block_size * row),
                               (kv_cache.stride(0) if num_blocks > 1 else block_size * row, 1))
    dev = kv_cache.device
    dst_k.view(torch.uint8)[:used].copy_(flat[block, slot * W + torch.arange(W, device=dev)])
    dst_scale.view(torch.uint8)[:used].copy_(flat[block, block_size * W + slot * S + torch.arange(S, device=dev)])


@_cp_gather_op.register_fake
def _(kv_cache, dst_k, dst_scale, block_table, cu_seq_lens):
    _check(kv_cache, dst_k, dst_scale, block_table, cu_seq_lens)


def cp_gather_indexer_k_quant_cache(kv_cache: Tensor, dst_k: Tensor, dst_scale: Tensor, block_table: Tensor,
                                    cu_seq_lens: Tensor) -> None:
    """vLLM's ``cp_gather_indexer_k_quant_cache``: copies the keys of ``batch_size`` sequences out of
    the paged indexer cache into ``dst_k`` and ``dst_scale``, in place. ``kv_cache`` uint8
    ``[num_blocks, block_size, W + S]`` (or ``[num_blocks, block_size, 1, W + S]``), each block's
    bytes contiguous: its ``block_size * W`` code bytes, token-major, then ``block_size * S``
    scale bytes; ``dst_k`` ``[num_tokens, W]`` and ``dst_scale`` ``[num_tokens, S]`` of a one-byte
    dtype (uint8, int8 or float8_e4m3fn; ``S`` a multiple of 4 dividing ``4 W``); ``block_table``
    ``[batch_size, max_blocks]`` int32 (or int64); ``cu_seq_lens`` ``[batch_size + 1]`` int32 (or
    int64), from 0 to at most ``num_tokens`` (rows past its end are left as they are). Token ``t``
    of sequence ``b`` (``cu_seq_lens[b] <= t <
    cu_seq_lens[b+1]``) is key ``p = t - cu_seq_lens[b]`` of it: slot ``o = p % block_size`` of
    block ``block_table[b, p // block_size]``, whose code bytes ``[o W, o W + W)`` go to
    ``dst_k[t]`` and scale bytes ``[block_size W + o S, ... + S)`` to ``dst_scale[t]``.

    The FP8 cache (:func:`indexer_k_quant_and_cache`): ``dst_k`` ``[T, D]`` float8_e4m3fn and
    ``dst_scale`` ``[T, D / quant_block_size * 4]`` uint8 (``.view(torch.float32)`` gives the fp32
    scales; vLLM: ``[T, 4]`` with ``quant_block_size = D``). The FP4 cache
    (:func:`indexer_k_mxfp4_quant_and_cache`): ``dst_k`` ``[T, D / 2]`` (packed e2m1 codes) and
    ``dst_scale`` ``[T, 4]`` uint8 (``.view(torch.int32)``: the four ue8m0 bytes DeepGEMM's
    ``fp8_fp4_mqa_logits`` takes). Offsets that do not start at 0, fall or end past ``num_tokens``, a
    sequence longer than its table row holds and a block id outside the cache raise
    ``LigValueError`` naming the argument, before anything is written. Returns None.

    Devices: CPU or CUDA tensors, all on one device, in any build: this is torch code (it calls no C),
    so it runs where its tensors are (``block_table`` and ``cu_seq_lens`` are read on the host).
    """
    kv_cache, dst_k, dst_scale, block_table, cu_seq_lens = tensors(
        (kv_cache, "kv_cache"), (dst_k, "dst_k"), (dst_scale, "dst_scale"), (block_table, "block_table"),
        (cu_seq_lens, "cu_seq_lens"))
    torch.ops.lig.cp_gather_indexer_k_quant_cache(kv_cache, dst_k, dst_scale, block_table, cu_seq_lens)
