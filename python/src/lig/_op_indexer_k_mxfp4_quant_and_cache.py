"""lig::indexer_k_mxfp4_quant_and_cache: writes new keys into DeepGEMM's fused FP4 paged cache (the
layout fp8_fp4_paged_mqa_logits reads) at given slots, quantized as the engines' cache writers do,
through the library's lig_mxfp4_cache_write; and lig.indexer_k_mxfp4_quant_and_cache."""
from __future__ import annotations

import torch
from torch import Tensor

from . import _args, _capi, _lib
from ._args import INDEX_DTYPES
from ._fp4_act_quant import check_x, scale_bytes
from ._lib import Descriptors
from ._registry import op, tensors


def _check(k: Tensor, kv_cache: Tensor, slot_mapping: Tensor) -> None:
    """Shapes and dtypes (no tensor contents: the fake kernel runs this too; the library checks the
    slots, by name, before writing)."""
    check_x(k, "k")
    _args.tensor(kv_cache, "kv_cache", (torch.uint8,))
    _args.tensor(slot_mapping, "slot_mapping", INDEX_DTYPES)
    if k.dim() != 2:
        raise _args.invalid(f"k: expected rank 2 ([T,D]), got rank {k.dim()} shape {_args._shape(k)}")
    T, D = k.shape
    row = D // 2 + scale_bytes(D)
    if kv_cache.dim() not in (3, 4) or kv_cache.shape[-1] != row or (kv_cache.dim() == 4 and kv_cache.shape[2] != 1):
        raise _args.invalid(f"kv_cache: expected shape [num_blocks,block_size,1,{row}] or [num_blocks,block_size,{row}] "
                            f"(D/2 code bytes and {row - D // 2} scale bytes a token, D = {D}), got {_args._shape(kv_cache)}")
    if kv_cache.device.type != "cpu" or slot_mapping.device.type != "cpu":
        raise _args.invalid("kv_cache: expected CPU tensors (lig_mxfp4_cache_write writes host memory), got "
                            f"kv_cache on {kv_cache.device}, slot_mapping on {slot_mapping.device}")
    if tuple(slot_mapping.shape) != (T,):
        raise _args.invalid(f"slot_mapping: expected shape [{T}] ([T] like k), got {_args._shape(slot_mapping)}")


@op("indexer_k_mxfp4_quant_and_cache", mutates_args=("kv_cache",))
def _indexer_k_mxfp4_quant_and_cache_op(k: Tensor, kv_cache: Tensor, slot_mapping: Tensor) -> None:
    _check(k, kv_cache, slot_mapping)
    with Descriptors() as desc:
        status = _capi.lig_mxfp4_cache_write(desc(k, "k"), desc(slot_mapping, "slot_mapping"),
                                             _capi.LIG_MXFP4_RECIPE_ENGINE, desc(kv_cache, "kv_cache"))
        _lib.check(status, "lig_mxfp4_cache_write")


@_indexer_k_mxfp4_quant_and_cache_op.register_fake
def _(k, kv_cache, slot_mapping):
    _check(k, kv_cache, slot_mapping)


def indexer_k_mxfp4_quant_and_cache(k: Tensor, kv_cache: Tensor, slot_mapping: Tensor) -> None:
    """Quantizes ``k`` ``[T,D]`` (float32, float16 or bfloat16) to MXFP4 and writes it in place into
    ``kv_cache``, DeepGEMM's fused FP4 paged cache: uint8 ``[num_blocks, block_size, 1, D/2 + 4]``
    (or without the 1; ``D <= 128``, 68 bytes a token at ``D = 128``), each block's bytes
    contiguous: its ``block_size * D/2`` code bytes, token-major, then ``block_size`` int32 words of
    four e8m0 scale bytes (block ``j`` of a token in byte ``j``). Token ``t`` with ``slot =
    slot_mapping[t] >= 0`` goes to block ``slot // block_size``, position ``slot % block_size``; a
    slot < 0 skips its token. Each token is quantized as :func:`fp4_act_quant` quantizes a row (the
    engines' recipe: blocks of 32, power-of-two scales, codes rounded to nearest even).

    lig's name: vLLM fuses this write into its compressor kernel
    (``_fused_kv_compress_norm_rope_insert_indexer_mxfp4_attn``); the signature follows its FP8
    ``indexer_k_quant_and_cache`` without ``quant_block_size`` and ``scale_fmt``, which MXFP4 fixes
    (32, "ue8m0"). A slot ``>= num_blocks * block_size`` or a slot given twice raises
    ``LigValueError`` naming ``slot_mapping``, before anything is written. Returns None.

    Devices: CPU tensors only (the library writes host memory).
    """
    k, kv_cache, slot_mapping = tensors((k, "k"), (kv_cache, "kv_cache"), (slot_mapping, "slot_mapping"))
    torch.ops.lig.indexer_k_mxfp4_quant_and_cache(k, kv_cache, slot_mapping)
