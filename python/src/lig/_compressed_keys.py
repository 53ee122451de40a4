"""lig.compressed_context_lens: DeepSeek-V4's compressed-key visibility turned into the per-row context
lengths DeepGEMM's paged logits and lig's paged top-k take (docs/contract.md 4.1, docs/inference.md
"Compressed keys in the inference calls"). A token at position p sees the compressed entries whose
block of ``ratio`` tokens is complete there: ``floor((p + 1) / ratio)`` of them, the rule of the
library's lig_compressed_complete_blocks (src/core/compressed_keys.h), here on whole tensors. vLLM's
decode metadata computes the same: the uncompressed lengths ``L - next_n + j + 1`` (at least 0),
then ``// compress_ratio``."""
from __future__ import annotations

import torch
from torch import Tensor

from . import _args
from ._args import INDEX_DTYPES
from ._registry import tensor


def compressed_context_lens(seq_lens, ratio: int, next_n: int = 1) -> Tensor:
    """``[B, next_n]`` compressed context lengths of a decode step: ``seq_lens`` ``[B]`` (int32 or
    int64, the sequences' uncompressed lengths including this step's ``next_n`` tokens), ``ratio``
    (V4's ``compress_ratio``, >= 1). Row ``(b, j)`` is the token at position ``p = seq_lens[b] -
    next_n + j`` and sees ``max(0, floor((p + 1) / ratio))`` entries; the result has ``seq_lens``'
    dtype and device, ready as the 2-D ``context_lens`` of :func:`fp8_fp4_paged_mqa_logits`,
    :func:`get_paged_mqa_logits_metadata` and :func:`fp8_paged_mqa_topk`.

    Devices: CPU or CUDA tensors, all on one device, in any build (torch code, no C call)."""
    seq_lens = tensor(seq_lens, "seq_lens")
    _args.tensor(seq_lens, "seq_lens", INDEX_DTYPES)
    ratio = _args.integer(ratio, "ratio", minimum=1)
    next_n = _args.integer(next_n, "next_n", minimum=1)
    if seq_lens.dim() != 1:
        raise _args.invalid(f"seq_lens: expected shape [B], got {_args._shape(seq_lens)}")
    steps = torch.arange(next_n, dtype=seq_lens.dtype, device=seq_lens.device)
    visible = (seq_lens.unsqueeze(1) - next_n + 1 + steps).clamp_min(0)  # p + 1 of each row
    return torch.div(visible, ratio, rounding_mode="floor")
