"""What the two forwards (``_op_indexer`` over contiguous keys, ``_op_indexer_paged`` over a paged
key cache) share: the argument checks, the outputs' shape and allocation, and the C call, whose
phase 2 is ``lig_indexer`` for both."""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args, _capi, _registry
from ._args import FLOAT_DTYPES, INDEX_DTYPES
from ._lib import Descriptors


def slots_shape(query: Tensor, n2: int, layout: str, K: int) -> Tuple[int, ...]:
    """Shape of sparse_indices / sparse_values: [B,S1,N2,K] | [T1,N2,K], without N2 when N2 == 1
    (layout and ranks checked by _args.layout / _args.paged_layout)."""
    lead = (query.shape[0], query.shape[1]) if layout == "BSND" else (query.shape[0],)
    return (*lead, K) if n2 == 1 else (*lead, n2, K)


def check_output_dtypes(index_dtype: torch.dtype, values_dtype: Optional[torch.dtype]) -> None:
    _args.dtype_choice(index_dtype, INDEX_DTYPES, "index_dtype")
    _args.optional_dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")


def check_args(floats, indices, sparse_count: int, check_layout, index_dtype, values_dtype) -> None:
    """floats: (tensor, name) pairs of float tensors; indices: (tensor, name, optional) of index
    tensors (lengths, block table); check_layout(): the layout against the tensors' ranks."""
    _args.tensors(floats, indices)
    _args.integer(sparse_count, "sparse_count", minimum=1)
    check_layout()
    check_output_dtypes(index_dtype, values_dtype)


def outputs(query: Tensor, shape, index_dtype: torch.dtype, values_dtype: Optional[torch.dtype],
            fake: bool = False) -> Tuple[Tensor, Tensor]:
    """(sparse_indices, sparse_values) to fill, or their fakes for torch.compile."""
    values = values_dtype if values_dtype is not None else query.dtype
    if fake:
        return query.new_empty(shape, dtype=index_dtype), query.new_empty(shape, dtype=values)
    return (torch.empty(shape, dtype=index_dtype, device=query.device),
            torch.empty(shape, dtype=values, device=query.device))


def run(get_workspace_size, what: str, inputs, layout: str, sparse_count: int, sparse_mode: int, pre_tokens: int,
        next_tokens: int, indices: Tensor, values: Tensor) -> None:
    """Phase 1 (`get_workspace_size`, with the named `inputs` first) and lig_indexer."""
    with Descriptors() as desc:
        args = (
            *desc.each(inputs),
            layout.encode(),
            sparse_count,
            sparse_mode,
            pre_tokens,
            next_tokens,
            desc(indices, "sparse_indices"),
            desc(values, "sparse_values"),
        )
        _registry.run(get_workspace_size, _capi.lig_indexer, args, what, desc.device)
