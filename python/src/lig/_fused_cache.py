"""DeepGEMM's fused paged key caches, uint8 ``[num_blocks, block_kv, 1, D + 4]`` (FP8: each block holds
its ``block_kv * D`` codes, then its ``block_kv`` fp32 scales) and ``[num_blocks, block_kv, 1, D/2 + 4]``
(FP4: ``block_kv * D/2`` code bytes, then ``block_kv`` int32 words of e8m0 scales). lig reads it in place as a PA_BSND key cache
through two strided views of its bytes; the callers check first that each block's bytes are
contiguous and 4-byte aligned. Also the check of vLLM's 3-D form of a paged cache (the writers'
and the gather's)."""
from typing import Tuple

import torch
from torch import Tensor

from . import _args


def cache_views(kv_cache: Tensor, D: int, code_dtype: torch.dtype = torch.float8_e4m3fn,
                scale_dtype: torch.dtype = torch.float32) -> Tuple[Tensor, Tensor]:
    """The codes ``[num_blocks, block_kv, 1, D]`` (``code_dtype``; D code bytes a token) and the
    4-byte scales ``[num_blocks, block_kv, 1]`` (``scale_dtype``: fp32 for FP8, int32 words of four
    e8m0 bytes for DeepGEMM's FP4 cache, ``[num_blocks, block_kv, 1, D/2 + 4]``), both views of the
    cache's memory."""
    num_blocks, block_kv = kv_cache.shape[:2]
    block = kv_cache.stride(0) if num_blocks > 1 else block_kv * (D + 4)
    flat = kv_cache.as_strided((num_blocks, block_kv * (D + 4)), (block, 1))  # each block's bytes
    codes = flat.view(code_dtype).as_strided((num_blocks, block_kv, 1, D), (block, D, D, 1), flat.storage_offset())
    words = flat.view(scale_dtype)  # the same bytes as 4-byte words, block stride block / 4
    scales = words.as_strided((num_blocks, block_kv, 1), (block // 4, 1, 1), words.storage_offset() + block_kv * D // 4)
    return codes, scales


def check_token_rows(kv_cache: Tensor, row: int, why: str) -> None:
    """vLLM's form of a paged cache, uint8 ``[num_blocks, block_size, row]`` with each block's bytes
    contiguous (any block stride): the shape a cache writer or gather takes, ``why`` saying where
    ``row`` comes from in the error."""
    if kv_cache.dim() != 3 or kv_cache.shape[2] != row:
        raise _args.invalid(f"kv_cache: expected shape [num_blocks,block_size,{row}] ({why}), got "
                            f"{_args._shape(kv_cache)}")
    s = kv_cache.stride()
    if (kv_cache.shape[1] > 1 and s[1] != row) or s[2] != 1:
        raise _args.invalid(f"kv_cache: expected each block's bytes contiguous (strides [*,{row},1]), got strides "
                            f"[{','.join(map(str, s))}]")
