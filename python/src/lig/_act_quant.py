"""lig.act_quant: DeepSeek-V3.2's block-wise FP8 quantizer (inference/kernel.py, act_quant), in
torch operations (so torch.compile traces it as it is); and the block quantization it shares with
the cache writer (lig.indexer_k_quant_and_cache), which computes its scale as vLLM does.

The arithmetic, all in fp32 (each step one correctly rounded fp32 operation):
    amax = max(max |x| over the block, 1e-4)
    s    = amax * fp32(1 / 448)          (DeepSeek's act_quant: a product with fp8_max_inv)
         | amax / 448                    (vLLM's indexer_k_quant_and_cache: a quotient)
    "ue8m0": s = the smallest power of two >= s (DeepSeek's fast_round_scale, exactly)
    y    = clamp(x / s, -448, 448) rounded to float8_e4m3fn (to nearest even)
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args
from ._args import FLOAT_DTYPES
from ._registry import tensor

FP8_MAX = 448.0
AMAX_FLOOR = 1e-4


def scale_fmt_rounds(scale_fmt, name: str = "scale_fmt") -> bool:
    """None or "" (the scale as computed) or "ue8m0" (rounded up to a power of two)."""
    if scale_fmt is None:
        return False
    _args.string(scale_fmt, name)
    if scale_fmt not in ("", "ue8m0"):
        raise _args.invalid(f'{name}: expected None, "" or "ue8m0" (power-of-two scales), got "{scale_fmt}"')
    return scale_fmt == "ue8m0"


def _round_up_to_power_of_two(s: Tensor) -> Tensor:
    """2^ceil(log2 s) for positive normal fp32 s, by its bits as DeepSeek's fast_round_scale does
    (exponent, plus one unless the mantissa is 0); infinities stay, NaN stays NaN."""
    bits = s.view(torch.int32)
    exponent = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    rounded = (exponent.clamp(max=255) << 23).view(torch.float32)
    return torch.where(torch.isnan(s), s, rounded)


def block_quantize(x: Tensor, block_size: int, divide: bool, ue8m0: bool) -> Tuple[Tensor, Tensor]:
    """(y float8_e4m3fn like x, s float32 [..., D / block_size]): blocks of block_size along the
    last dim; `divide`: s = amax / 448 (vLLM), else amax * fp32(1/448) (DeepSeek)."""
    xf = x.to(torch.float32)  # exact for float16 / bfloat16
    blocks = xf.unflatten(-1, (xf.shape[-1] // block_size, block_size))
    amax = blocks.abs().amax(dim=-1).clamp_min(AMAX_FLOOR)  # 1e-4 as fp32, as both sources compare in fp32
    if divide:
        s = amax / torch.full_like(amax, FP8_MAX)  # a tensor divisor: never a reciprocal's product
    else:
        s = amax * torch.tensor(1.0 / FP8_MAX, dtype=torch.float32, device=x.device)
    if ue8m0:
        s = _round_up_to_power_of_two(s)
    y = (blocks / s.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return y.flatten(-2), s


def check_block(x: Tensor, block_size, name: str, block_name: str) -> int:
    """The block size: an int >= 1 dividing x's last dimension."""
    b = _args.integer(block_size, block_name, minimum=1)
    if x.shape[-1] % b:
        raise _args.invalid(f"{name}: expected a last dimension divisible by {block_name} = {b}, got shape "
                            f"{_args._shape(x)}")
    return b


def act_quant(x: Tensor, block_size: int = 128, scale_fmt: Optional[str] = None) -> Tuple[Tensor, Tensor]:
    """DeepSeek-V3.2's ``act_quant`` (inference/kernel.py): returns ``(y, s)``.

    ``x`` (float32, float16 or bfloat16, at least one dimension, last dimension ``D`` divisible by
    ``block_size``) is cut into blocks of ``block_size`` along its last dimension; per block, in
    fp32: ``amax = max(max|x|, 1e-4)``, ``s = amax * fp32(1/448)`` (DeepSeek multiplies by
    ``fp8_max_inv``), with ``scale_fmt="ue8m0"`` ``s`` rounded up to a power of two, and
    ``y = clamp(x / s, -448, 448)`` rounded to ``torch.float8_e4m3fn``. ``y`` has ``x``'s shape,
    ``s`` (float32) is ``[..., D / block_size]``, so ``x ~= y * s`` block by block.

    Differences from DeepSeek's kernel, none of which changes a result it gives: any layout is
    read (DeepSeek asserts contiguity), ``block_size`` is honoured (DeepSeek's kernel always uses
    128), and ``scale_fmt`` must be ``None``, ``""`` or ``"ue8m0"`` (DeepSeek rounds for any value
    but ``None``; ``""`` means no rounding here). A NaN in a block gives that block a NaN scale.
    Not differentiable (``x`` is read detached); pure torch, so torch.compile traces it as it is.

    Devices: CPU or CUDA tensors, all on one device, in any build: this is torch code (it calls no C),
    so it runs where its tensors are.
    """
    x = tensor(x, "x")
    _args.tensor(x, "x", FLOAT_DTYPES)
    if x.dim() < 1:
        raise _args.invalid(f"x: expected at least one dimension, got shape {_args._shape(x)}")
    block = check_block(x, block_size, "x", "block_size")
    return block_quantize(x.detach(), block, divide=False, ue8m0=scale_fmt_rounds(scale_fmt))
