"""lig.fp4_act_quant: DeepSeek-V4's MXFP4 activation quantizer (inference/kernel.py, fp4_act_quant,
the indexer's e8m0 path), computed by the library's lig_mxfp4_quantize with the engines' recipe; and
the MXFP4 pieces the cache writer (lig.indexer_k_mxfp4_quant_and_cache) shares.

Per block of 32 values along the last dimension, in fp32 (docs/contract.md section 5, "MXFP4"):
    a = max(max |x|, 6 * 2^-126)
    E = the e8m0 byte of the smallest power of two >= fp32(a * fp32(1/6))
    code_i = x_i * 2^(127-E) rounded to e2m1 (to nearest even, saturating at +-6)
two codes a byte, element 2j in the low nibble. A block holding a NaN or an infinity gets E = 0xFF
(NaN) and zero codes.
"""
from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor

from . import _args, _capi, _lib
from ._args import FLOAT_DTYPES
from ._lib import Descriptors
from ._registry import op, tensor

MXFP4_BLOCK = 32
# e2m1's magnitudes by code (the low three bits); bit 3 is the sign
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# torch's names for the two formats, where this torch has them (2.8 and later)
FLOAT4_X2 = getattr(torch, "float4_e2m1fn_x2", None)
E8M0 = getattr(torch, "float8_e8m0fnu", None)


def scale_bytes(cols: int) -> int:
    """The scale bytes lig_mxfp4_quantize writes for a row of cols values: one a block, padded to
    whole int32 words (DeepGEMM's packed layout)."""
    blocks = (cols + MXFP4_BLOCK - 1) // MXFP4_BLOCK
    return (blocks + 3) // 4 * 4


def quantize_rows(x2: Tensor, recipe: int) -> Tuple[Tensor, Tensor]:
    """lig_mxfp4_quantize of x2 [rows, cols] (CPU): (codes uint8 [rows, cols/2], scale bytes uint8
    [rows, scale_bytes(cols)])."""
    rows, cols = x2.shape
    codes = torch.empty((rows, cols // 2), dtype=torch.uint8)
    scales = torch.empty((rows, scale_bytes(cols)), dtype=torch.uint8)
    with Descriptors() as desc:
        status = _capi.lig_mxfp4_quantize(desc(x2, "x"), recipe, desc(codes, "codes"), desc(scales, "scales"))
        _lib.check(status, "lig_mxfp4_quantize")
    return codes, scales


def dequantize(codes: Tensor, scales: Tensor, cols: int) -> Tensor:
    """The fp32 values of codes [..., cols/2] with their e8m0 bytes [..., >= cols/32]: exact (a code
    times a power of two); a 0xFF scale (NaN) makes its block NaN, as 0 * inf does."""
    table = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=codes.device)
    nibbles = torch.stack((codes & 0xF, codes >> 4), dim=-1).flatten(-2).to(torch.int64)  # element 2j first
    values = table[nibbles & 7]
    values = torch.where((nibbles & 8) != 0, -values, values)
    e = scales[..., : (cols + MXFP4_BLOCK - 1) // MXFP4_BLOCK].to(torch.int32)
    scale = torch.where(e == 0, torch.full_like(e, 0x00400000), e << 23).view(torch.float32)  # byte 0: 2^-127
    scale = torch.where(e == 255, torch.full_like(scale, float("nan")), scale)
    return values * scale.repeat_interleave(MXFP4_BLOCK, dim=-1)[..., :cols]


def check_x(x: Tensor, name: str) -> None:
    _args.tensor(x, name, FLOAT_DTYPES)
    if x.dim() < 1 or x.shape[-1] % 2:
        raise _args.invalid(f"{name}: expected at least one dimension and an even last dimension (two codes a byte), "
                            f"got shape {_args._shape(x)}")
    if x.device.type != "cpu":
        raise _args.invalid(f"{name}: expected a CPU tensor (lig_mxfp4_quantize reads host memory), got a tensor on "
                            f"{x.device}")


def _check_op(x: Tensor, block_size: int) -> None:
    check_x(x, "x")
    if block_size != MXFP4_BLOCK or x.shape[-1] % MXFP4_BLOCK:
        raise _args.invalid(f"x: expected blocks of 32 (block_size 32, got {block_size}) and a last dimension divisible "
                            f"by 32, got shape {_args._shape(x)}")


@op("fp4_act_quant")
def _fp4_act_quant_op(x: Tensor, block_size: int) -> Tuple[Tensor, Tensor]:
    _check_op(x, block_size)
    cols = x.shape[-1]
    codes, scales = quantize_rows(x.detach().reshape(-1, cols), _capi.LIG_MXFP4_RECIPE_ENGINE)
    lead = tuple(x.shape[:-1])
    return codes.reshape(lead + (cols // 2,)), scales[:, : cols // block_size].contiguous().reshape(lead + (cols // block_size,))


@_fp4_act_quant_op.register_fake
def _(x, block_size):
    _check_op(x, block_size)
    lead, cols = tuple(x.shape[:-1]), x.shape[-1]
    return x.new_empty(lead + (cols // 2,), dtype=torch.uint8), x.new_empty(lead + (cols // block_size,), dtype=torch.uint8)


_fp4_act_quant_op.refuse_autograd()


def fp4_act_quant(x: Tensor, block_size: int = 32, inplace: bool = False, scale_dtype=E8M0):
    """DeepSeek-V4's ``fp4_act_quant`` (inference/kernel.py) for the indexer's e8m0 scales: returns
    ``(y, s)``, or with ``inplace=True`` writes the dequantized values back into ``x`` and returns
    ``x``.

    ``x`` (float32, float16 or bfloat16, last dimension ``N`` a multiple of 32) is cut into blocks of
    32 along its last dimension; per block: ``a = max(max|x|, 6 * 2^-126)``, the scale ``s`` the
    smallest power of two ``>= fp32(a * fp32(1/6))``, the codes ``x / s`` rounded to e2m1 (nearest
    even, saturating at +-6). ``y`` is ``[..., N/2]``, two codes a byte (element ``2j`` in the low
    nibble), as ``torch.float4_e2m1fn_x2`` (uint8 on a torch without it); ``s`` is ``[..., N/32]``,
    the e8m0 bytes as ``torch.float8_e8m0fnu`` (uint8 on a torch without it). A block holding a NaN
    or an infinity gets a NaN scale (byte 0xFF) and zero codes.

    Differences from DeepSeek's kernel, none of which changes a result it gives for finite input:
    ``block_size`` must be 32 and ``scale_dtype`` ``torch.float8_e8m0fnu`` (DeepSeek's other form,
    e4m3 scales over blocks of 16 for the compressed KV, is not the indexer's and is refused by
    name); any layout is read.

    Devices: CPU tensors only (the library quantizes host memory): a CUDA ``x`` raises
    :class:`LigValueError`.
    """
    x = tensor(x, "x")
    block = _args.integer(block_size, "block_size", minimum=1)
    if block != MXFP4_BLOCK:
        raise _args.invalid(f"block_size: expected 32 (MXFP4's block; the indexer's e8m0 path), got {block}")
    inplace = _args.flag(inplace, "inplace")
    if scale_dtype is not E8M0:  # (None, the default, on a torch without float8_e8m0fnu)
        raise _args.invalid(f"scale_dtype: expected torch.float8_e8m0fnu (the indexer's power-of-two scales), got "
                            f"{scale_dtype}")
    check_x(x, "x")
    if x.shape[-1] % MXFP4_BLOCK:
        raise _args.invalid(f"x: expected a last dimension divisible by 32, got shape {_args._shape(x)}")
    codes, scales = torch.ops.lig.fp4_act_quant(x, block)
    if inplace:
        x.copy_(dequantize(codes, scales, x.shape[-1]).to(x.dtype))
        return x
    return (codes.view(FLOAT4_X2) if FLOAT4_X2 is not None else codes), (scales.view(E8M0) if E8M0 is not None else
                                                                          scales)
