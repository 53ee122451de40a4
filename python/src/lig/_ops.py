"""The operators, registered with torch.library (custom ops with fake and autograd rules).

Three custom ops, each one call into lig's two-phase C API:

    lig::indexer          the forward (scores + top-k), differentiable in its values
    lig::indexer_grad     the backward (dQ, dK, dW)
    lig::indexer_kl_grad  the fused KL loss and dy, differentiable in its loss

and the Python functions users call (``indexer``, ``lightning_indexer``, ``indexer_grad``,
``indexer_kl_grad``, ``indexer_kl_loss``), which normalise arguments and call the ops, so that all of
them run under ``torch.compile(fullgraph=True)``.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from . import _lib
from ._lib import INT64_MAX, Descriptors

LengthsLike = Union[None, Tensor, Sequence[int]]

_LAYOUTS = ("BSND", "TND")


def _layout_arg(layout: str) -> bytes:
    if not isinstance(layout, str):
        raise TypeError(f"lig: layout: expected a str, got {type(layout).__name__}")
    return layout.encode()


def _sparse_shape(query: Tensor, key: Tensor, layout: str, K: int) -> Tuple[int, ...]:
    """Shape of sparse_indices / sparse_values: [B,S1,N2,K] | [T1,N2,K], without N2 when N2 == 1.

    For arguments the library will refuse anyway (wrong rank, unknown layout) it returns a
    placeholder shape and leaves the error message to the library.
    """
    if layout == "BSND" and query.dim() == 4 and key.dim() == 4:
        lead, n2 = (query.shape[0], query.shape[1]), key.shape[2]
    elif layout == "TND" and query.dim() == 3 and key.dim() == 3:
        lead, n2 = (query.shape[0],), key.shape[1]
    else:
        return (0, max(int(K), 0))
    return (*lead, K) if n2 == 1 else (*lead, n2, K)


def _check_dtype(dtype, allowed, name: str) -> None:
    if dtype not in allowed:
        names = ", ".join(str(d).replace("torch.", "") for d in allowed)
        raise TypeError(f"lig: {name}: expected one of {names}, got {dtype}")


# ---- lig::indexer_grad ---------------------------------------------------------------------------


@torch.library.custom_op("lig::indexer_grad", mutates_args=())
def _indexer_grad_op(
    query: Tensor,
    key: Tensor,
    dy: Tensor,
    sparse_indices: Tensor,
    weights: Tensor,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Optional[Tensor],
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    deterministic: bool,
    d_weights_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor, Tensor]:
    d_query = torch.empty(query.shape, dtype=query.dtype)
    d_key = torch.empty(key.shape, dtype=query.dtype)
    d_weights = torch.empty(weights.shape, dtype=d_weights_dtype if d_weights_dtype is not None else query.dtype)
    with Descriptors() as desc:
        args = (
            desc(query, "query"),
            desc(key, "key"),
            desc(dy, "dy"),
            desc(sparse_indices, "sparse_indices"),
            desc(weights, "weights"),
            desc(actual_seq_lengths_query, "actual_seq_lengths_query"),
            desc(actual_seq_lengths_key, "actual_seq_lengths_key"),
            0,  # head_num: taken from query
            _layout_arg(layout),
            sparse_mode,
            pre_tokens,
            next_tokens,
            bool(deterministic),
            desc(d_query, "d_query"),
            desc(d_key, "d_key"),
            desc(d_weights, "d_weights"),
        )
        _lib.run(_lib.lig_indexer_grad_get_workspace_size, _lib.lig_indexer_grad, args, "lig_indexer_grad")
    return d_query, d_key, d_weights


@_indexer_grad_op.register_fake
def _(query, key, dy, sparse_indices, weights, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
      deterministic, d_weights_dtype):
    return (
        query.new_empty(query.shape),
        key.new_empty(key.shape, dtype=query.dtype),
        weights.new_empty(weights.shape, dtype=d_weights_dtype if d_weights_dtype is not None else query.dtype),
    )


# ---- lig::indexer (forward) ----------------------------------------------------------------------


@torch.library.custom_op("lig::indexer", mutates_args=())
def _indexer_op(
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    sparse_count: int,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Optional[Tensor],
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    index_dtype: torch.dtype,
    values_dtype: Optional[torch.dtype],
    deterministic: bool,
) -> Tuple[Tensor, Tensor]:
    shape = _sparse_shape(query, key, layout, sparse_count)
    indices = torch.empty(shape, dtype=index_dtype)
    values = torch.empty(shape, dtype=values_dtype if values_dtype is not None else query.dtype)
    with Descriptors() as desc:
        args = (
            desc(query, "query"),
            desc(key, "key"),
            desc(weights, "weights"),
            desc(actual_seq_lengths_query, "actual_seq_lengths_query"),
            desc(actual_seq_lengths_key, "actual_seq_lengths_key"),
            _layout_arg(layout),
            sparse_count,
            sparse_mode,
            pre_tokens,
            next_tokens,
            desc(indices, "sparse_indices"),
            desc(values, "sparse_values"),
        )
        _lib.run(_lib.lig_indexer_get_workspace_size, _lib.lig_indexer, args, "lig_indexer")
    return indices, values


@_indexer_op.register_fake
def _(query, key, weights, sparse_count, aq, ak, layout, sparse_mode, pre_tokens, next_tokens, index_dtype,
      values_dtype, deterministic):
    shape = _sparse_shape(query, key, layout, sparse_count)
    return (
        query.new_empty(shape, dtype=index_dtype),
        query.new_empty(shape, dtype=values_dtype if values_dtype is not None else query.dtype),
    )


def _indexer_setup_context(ctx, inputs, output):
    query, key, weights, _, aq, ak, layout, sparse_mode, pre_tokens, next_tokens, _, _, deterministic = inputs
    indices, _ = output
    ctx.save_for_backward(query, key, weights, indices, aq, ak)
    ctx.config = (layout, sparse_mode, pre_tokens, next_tokens, deterministic)


def _indexer_backward(ctx, grad_indices, grad_values):
    query, key, weights, indices, aq, ak = ctx.saved_tensors
    layout, sparse_mode, pre_tokens, next_tokens, deterministic = ctx.config
    # dy = dL/d(sparse_values); padded slots (index -1) are skipped by lig whatever dy holds there.
    dy = grad_values.to(query.dtype)
    d_query, d_key, d_weights = torch.ops.lig.indexer_grad(
        query, key, dy, indices, weights, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
        deterministic, weights.dtype,
    )
    return d_query, d_key, d_weights, None, None, None, None, None, None, None, None, None, None


_indexer_op.register_autograd(_indexer_backward, setup_context=_indexer_setup_context)


# ---- lig::indexer_kl_grad ------------------------------------------------------------------------


@torch.library.custom_op("lig::indexer_kl_grad", mutates_args=())
def _indexer_kl_grad_op(
    sparse_values: Tensor,
    target: Tensor,
    sparse_indices: Optional[Tensor],
    dy_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor]:
    loss = torch.empty((), dtype=torch.float32)
    dy = torch.empty(sparse_values.shape, dtype=dy_dtype if dy_dtype is not None else sparse_values.dtype)
    with Descriptors() as desc:
        args = (
            desc(sparse_values, "sparse_values"),
            desc(sparse_indices, "sparse_indices"),
            desc(target, "target"),
            desc(loss, "loss"),
            desc(dy, "dy"),
        )
        _lib.run(_lib.lig_indexer_kl_grad_get_workspace_size, _lib.lig_indexer_kl_grad, args, "lig_indexer_kl_grad")
    return loss, dy


@_indexer_kl_grad_op.register_fake
def _(sparse_values, target, sparse_indices, dy_dtype):
    return (
        sparse_values.new_empty((), dtype=torch.float32),
        sparse_values.new_empty(sparse_values.shape, dtype=dy_dtype if dy_dtype is not None else sparse_values.dtype),
    )


def _kl_setup_context(ctx, inputs, output):
    sparse_values = inputs[0]
    _, dy = output
    ctx.save_for_backward(dy)
    ctx.values_dtype = sparse_values.dtype


def _kl_backward(ctx, grad_loss, grad_dy):
    # d loss / d sparse_values is the dy the op already computed. The target is a constant
    # (a teacher distribution) and dy is not differentiated further.
    (dy,) = ctx.saved_tensors
    return (dy * grad_loss).to(ctx.values_dtype), None, None, None


_indexer_kl_grad_op.register_autograd(_kl_backward, setup_context=_kl_setup_context)


# ---- the functions users call --------------------------------------------------------------------


def _tensor(x, name: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None and isinstance(x, np.ndarray):
        if any(s < 0 for s in x.strides):
            x = np.ascontiguousarray(x)  # lig takes non-negative strides only
        return torch.from_numpy(x)
    raise TypeError(f"lig: {name}: expected a torch.Tensor, got {type(x).__name__}")


def indexer_grad(
    query: Tensor,
    key: Tensor,
    dy: Tensor,
    sparse_indices: Tensor,
    weights: Tensor,
    *,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    deterministic: bool = False,
    d_weights_dtype: Optional[torch.dtype] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    """LightningIndexerGrad: returns ``(d_query, d_key, d_weights)``.

    Shapes (SPEC section 2): query ``[B,S1,N1,D]`` | ``[T1,N1,D]``, key ``[B,S2,N2,D]`` | ``[T2,N2,D]``,
    dy and sparse_indices ``[B,S1,N2,K]`` | ``[T1,N2,K]`` (or without N2 when N2 == 1), weights
    ``[B,S1,N1]`` | ``[T1,N1]``. query, key, dy and weights share one dtype (float32, float16 or
    bfloat16); indices are int32 or int64. Sequence lengths: BSND optional per-batch lengths, TND
    required cumulative ends; a list of ints or an int32/int64 tensor. ``d_weights_dtype`` is the
    query dtype (default) or float32. Strided (non-contiguous) tensors are read in place.
    """
    if d_weights_dtype is not None:
        _check_dtype(d_weights_dtype, _lib.FLOAT_DTYPES, "d_weights_dtype")
    return tuple(
        torch.ops.lig.indexer_grad(
            _tensor(query, "query"),
            _tensor(key, "key"),
            _tensor(dy, "dy"),
            _tensor(sparse_indices, "sparse_indices"),
            _tensor(weights, "weights"),
            _lib.as_length_tensor(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _lib.as_length_tensor(actual_seq_lengths_key, "actual_seq_lengths_key"),
            layout,
            int(sparse_mode),
            int(pre_tokens),
            int(next_tokens),
            bool(deterministic),
            d_weights_dtype,
        )
    )


def indexer(
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    sparse_count: int,
    *,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    index_dtype: torch.dtype = torch.int32,
    values_dtype: Optional[torch.dtype] = None,
    deterministic: bool = False,
) -> Tuple[Tensor, Tensor]:
    """LightningIndexer (forward): returns ``(sparse_indices, sparse_values)``.

    For each (batch, query row, key head) the ``sparse_count`` visible keys with the largest
    ``I = sum_h w * ReLU(q . k)``, by descending score, ties to the lower key index; ``-1`` indices
    and ``-inf`` values fill the slots left over when fewer keys are visible. Outputs are
    ``[B,S1,N2,K]`` | ``[T1,N2,K]``, without the N2 axis when N2 == 1 (as CANN and DeepSeek do).
    ``index_dtype`` is int32 or int64; ``values_dtype`` the query dtype (default) or float32.

    The values are differentiable with respect to query, key and weights (lig's backward;
    ``deterministic`` is passed to it); the selection is not.
    """
    _check_dtype(index_dtype, _lib.INDEX_DTYPES, "index_dtype")
    if values_dtype is not None:
        _check_dtype(values_dtype, _lib.FLOAT_DTYPES, "values_dtype")
    return tuple(
        torch.ops.lig.indexer(
            _tensor(query, "query"),
            _tensor(key, "key"),
            _tensor(weights, "weights"),
            int(sparse_count),
            _lib.as_length_tensor(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _lib.as_length_tensor(actual_seq_lengths_key, "actual_seq_lengths_key"),
            layout,
            int(sparse_mode),
            int(pre_tokens),
            int(next_tokens),
            index_dtype,
            values_dtype,
            bool(deterministic),
        )
    )


def lightning_indexer(
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    sparse_count: int,
    *,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    index_dtype: torch.dtype = torch.int32,
    values_dtype: Optional[torch.dtype] = None,
    deterministic: bool = False,
) -> Tuple[Tensor, Tensor]:
    """The differentiable lightning indexer: ``(sparse_indices, sparse_values)``.

    Same arguments and results as :func:`indexer`. ``sparse_values`` carries gradients to query,
    key and weights: its backward is lig's LightningIndexerGrad, fed with dy = the gradient of
    ``sparse_values`` (padded slots hold index -1 and are skipped, whatever their gradient).
    Works under ``torch.compile(fullgraph=True)`` (the op has fake and autograd rules).
    """
    return indexer(
        query, key, weights, sparse_count,
        actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_key=actual_seq_lengths_key,
        layout=layout, sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
        index_dtype=index_dtype, values_dtype=values_dtype, deterministic=deterministic,
    )


def indexer_kl_grad(
    sparse_values: Tensor,
    target: Tensor,
    sparse_indices: Optional[Tensor] = None,
    dy_dtype: Optional[torch.dtype] = None,
) -> Tuple[Tensor, Tensor]:
    """The fused KL step: returns ``(loss, dy)``.

    ``loss`` (a float32 scalar) is ``sum_t KL(p_t || softmax(I_t))`` over the rows (the last axis
    holds the slots), the softmax taken over the counted slots only: those whose index is >= 0
    when ``sparse_indices`` is given, otherwise those whose value is not -inf. ``dy`` (like
    sparse_values, dtype ``dy_dtype`` or that of sparse_values) is ``softmax(I_t) * sum(p_t) - p_t`` on
    counted slots and 0 elsewhere: the dy that :func:`indexer_grad` takes.

    ``loss`` is differentiable with respect to ``sparse_values`` (its gradient is ``dy``); the target
    is treated as a constant.
    """
    if dy_dtype is not None:
        _check_dtype(dy_dtype, _lib.FLOAT_DTYPES, "dy_dtype")
    target = _tensor(target, "target").detach()
    indices = None if sparse_indices is None else _tensor(sparse_indices, "sparse_indices")
    return tuple(torch.ops.lig.indexer_kl_grad(_tensor(sparse_values, "sparse_values"), target, indices, dy_dtype))


def indexer_kl_loss(sparse_values: Tensor, target: Tensor, sparse_indices: Optional[Tensor] = None) -> Tensor:
    """``sum_t KL(p_t || softmax(I_t))`` as a differentiable float32 scalar (see :func:`indexer_kl_grad`)."""
    return indexer_kl_grad(sparse_values, target, sparse_indices)[0]
