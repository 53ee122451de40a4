"""DeepGEMM's fused paged key cache, uint8 ``[num_blocks, block_kv, 1, D + 4]``: each block holds its
``block_kv * D`` codes, then its ``block_kv`` fp32 scales. lig reads it in place as a PA_BSND key cache
through two strided views of its bytes; the callers check first that each block's bytes are
contiguous and 4-byte aligned."""
from typing import Tuple

import torch
from torch import Tensor


def cache_views(kv_cache: Tensor, D: int, code_dtype: torch.dtype = torch.float8_e4m3fn) -> Tuple[Tensor, Tensor]:
    """The codes ``[num_blocks, block_kv, 1, D]`` (``code_dtype``) and the fp32 scales
    ``[num_blocks, block_kv, 1]``, both views of the cache's memory."""
    num_blocks, block_kv = kv_cache.shape[:2]
    block = kv_cache.stride(0) if num_blocks > 1 else block_kv * (D + 4)
    flat = kv_cache.as_strided((num_blocks, block_kv * (D + 4)), (block, 1))  # each block's bytes
    codes = flat.view(code_dtype).as_strided((num_blocks, block_kv, 1, D), (block, D, D, 1), flat.storage_offset())
    words = flat.view(torch.float32)  # the same bytes as fp32 words, block stride block / 4
    scales = words.as_strided((num_blocks, block_kv, 1), (block // 4, 1, 1), words.storage_offset() + block_kv * D // 4)
    return codes, scales
