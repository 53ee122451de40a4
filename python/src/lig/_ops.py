"""The operators, registered with torch.library (operators with fake and autograd rules).

Four operators, each one call into lig's two-phase C API (and lig::indexer_paged_refuse_grad, the refused
gradient of the paged values):

    lig::indexer          the forward (scores + top-k), differentiable in its values
    lig::indexer_paged    the forward over a paged key cache (values not differentiable: no paged backward)
    lig::indexer_grad     the backward (dQ, dK, dW)
    lig::indexer_kl_grad  the fused KL loss and dy, both differentiable in the values

and the Python functions users call (``indexer``, ``indexer_paged``, ``lightning_indexer``,
``indexer_grad``, ``indexer_kl_grad``, ``indexer_kl_loss``), which normalise arguments and call the ops, so that all of
them run under ``torch.compile(fullgraph=True)``.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from . import _args, _lib, _threads
from ._args import FLOAT_DTYPES, INDEX_DTYPES
from ._lib import INT64_MAX, Descriptors

LengthsLike = Union[None, Tensor, Sequence[int]]

# The ops are registered with torch.library's lower-level API (define / impl / register_fake /
# register_autograd), not with torch.library.custom_op: custom_op wraps each kernel in
# torch._disable_dynamo, which imports torch._dynamo (and with it inductor) at the first call of
# any op, about 1 s however small the problem (bench/first_call.py). The kernels here are only
# ever reached through the dispatcher, where dynamo never traces into them, so the wrapper buys
# nothing; torch.compile uses the fake rules, as with custom_op.
_LIB = torch.library.Library("lig", "DEF")


class _Op:
    """One operator lig::<name>: its schema inferred from the kernel's annotations (as custom_op
    does), the kernel for every device, and the fake / autograd rules registered through it."""

    def __init__(self, name: str, kernel) -> None:
        self.qualname = f"lig::{name}"
        _LIB.define(name + torch.library.infer_schema(kernel, mutates_args=()))
        _LIB.impl(name, kernel, "CompositeExplicitAutograd")

    def register_fake(self, fake):
        torch.library.register_fake(self.qualname, fake, lib=_LIB)
        return fake

    def register_autograd(self, backward, setup_context=None) -> None:
        torch.library.register_autograd(self.qualname, backward, setup_context=setup_context, lib=_LIB)

    def refuse_autograd(self) -> None:
        """An op without a derivative: a backward through its outputs raises (custom_op's rule),
        rather than torch's fallback for ops without an autograd kernel, which only warns."""

        def backward(ctx, *grads):
            raise RuntimeError(f"{self.qualname} is not differentiable (lig has no derivative of it), but a "
                               "gradient reached its outputs")

        self.register_autograd(backward)


def _op(name: str):
    return lambda kernel: _Op(name, kernel)


def _sparse_shape(query: Tensor, key: Tensor, layout: str, K: int) -> Tuple[int, ...]:
    """Shape of sparse_indices / sparse_values: [B,S1,N2,K] | [T1,N2,K], without N2 when N2 == 1
    (layout and ranks checked by _args.layout)."""
    if layout == "BSND":
        lead, n2 = (query.shape[0], query.shape[1]), key.shape[2]
    else:
        lead, n2 = (query.shape[0],), key.shape[1]
    return (*lead, K) if n2 == 1 else (*lead, n2, K)


def _paged_shape(query: Tensor, key_cache: Tensor, layout: str, K: int) -> Tuple[int, ...]:
    """The same for the forward over a paged key cache: N2 is key_cache's [num_blocks,block_size,N2,D]
    (ranks checked by _args.paged_layout)."""
    lead = (query.shape[0], query.shape[1]) if layout == "BSND" else (query.shape[0],)
    n2 = key_cache.shape[2]
    return (*lead, K) if n2 == 1 else (*lead, n2, K)


def _run(get_workspace_size, run_fn, args, what: str, device=None) -> None:
    _threads.apply()
    _lib.run(get_workspace_size, run_fn, args, what, device)


def _check_grad_args(query, key, dy, sparse_indices, weights, aq, ak, d_weights_dtype) -> None:
    for t, name in ((query, "query"), (key, "key"), (dy, "dy"), (weights, "weights")):
        _args.tensor(t, name, FLOAT_DTYPES)
    _args.tensor(sparse_indices, "sparse_indices", INDEX_DTYPES)
    _args.tensor(aq, "actual_seq_lengths_query", INDEX_DTYPES, optional=True)
    _args.tensor(ak, "actual_seq_lengths_key", INDEX_DTYPES, optional=True)
    if d_weights_dtype is not None:
        _args.dtype_choice(d_weights_dtype, FLOAT_DTYPES, "d_weights_dtype")


def _check_indexer_args(query, key, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype) -> None:
    for t, name in ((query, "query"), (key, "key"), (weights, "weights")):
        _args.tensor(t, name, FLOAT_DTYPES)
    _args.tensor(aq, "actual_seq_lengths_query", INDEX_DTYPES, optional=True)
    _args.tensor(ak, "actual_seq_lengths_key", INDEX_DTYPES, optional=True)
    _args.integer(sparse_count, "sparse_count", minimum=1)
    _args.layout(layout, query, key)
    _args.dtype_choice(index_dtype, INDEX_DTYPES, "index_dtype")
    if values_dtype is not None:
        _args.dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")


def _check_paged_args(query, key_cache, block_table, weights, sparse_count, aq, ak, layout, index_dtype,
                      values_dtype) -> None:
    for t, name in ((query, "query"), (key_cache, "key_cache"), (weights, "weights")):
        _args.tensor(t, name, FLOAT_DTYPES)
    _args.tensor(block_table, "block_table", INDEX_DTYPES)
    _args.tensor(aq, "actual_seq_lengths_query", INDEX_DTYPES, optional=True)
    _args.tensor(ak, "actual_seq_lengths_key", INDEX_DTYPES)
    _args.integer(sparse_count, "sparse_count", minimum=1)
    _args.paged_layout(layout, query, key_cache, block_table)
    _args.dtype_choice(index_dtype, INDEX_DTYPES, "index_dtype")
    if values_dtype is not None:
        _args.dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")


def _check_kl_args(sparse_values, target, sparse_indices, dy_dtype) -> None:
    _args.tensor(sparse_values, "sparse_values", FLOAT_DTYPES)
    _args.tensor(target, "target", FLOAT_DTYPES)
    _args.tensor(sparse_indices, "sparse_indices", INDEX_DTYPES, optional=True)
    if dy_dtype is not None:
        _args.dtype_choice(dy_dtype, FLOAT_DTYPES, "dy_dtype")


# ---- lig::indexer_grad ---------------------------------------------------------------------------


@_op("indexer_grad")
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
    _check_grad_args(query, key, dy, sparse_indices, weights, actual_seq_lengths_query, actual_seq_lengths_key,
                     d_weights_dtype)
    d_query = torch.empty(query.shape, dtype=query.dtype, device=query.device)
    d_key = torch.empty(key.shape, dtype=query.dtype, device=query.device)
    d_weights = torch.empty(weights.shape, dtype=d_weights_dtype if d_weights_dtype is not None else query.dtype,
                            device=query.device)
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
            layout.encode(),
            sparse_mode,
            pre_tokens,
            next_tokens,
            bool(deterministic),
            desc(d_query, "d_query"),
            desc(d_key, "d_key"),
            desc(d_weights, "d_weights"),
        )
        _run(_lib.lig_indexer_grad_get_workspace_size, _lib.lig_indexer_grad, args, "lig_indexer_grad", desc.device)
    return d_query, d_key, d_weights


@_indexer_grad_op.register_fake
def _(query, key, dy, sparse_indices, weights, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
      deterministic, d_weights_dtype):
    _check_grad_args(query, key, dy, sparse_indices, weights, aq, ak, d_weights_dtype)
    return (
        query.new_empty(query.shape),
        key.new_empty(key.shape, dtype=query.dtype),
        weights.new_empty(weights.shape, dtype=d_weights_dtype if d_weights_dtype is not None else query.dtype),
    )


_indexer_grad_op.refuse_autograd()


# ---- lig::indexer (forward) ----------------------------------------------------------------------


@_op("indexer")
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
    _check_indexer_args(query, key, weights, sparse_count, actual_seq_lengths_query, actual_seq_lengths_key, layout,
                        index_dtype, values_dtype)
    shape = _sparse_shape(query, key, layout, sparse_count)
    indices = torch.empty(shape, dtype=index_dtype, device=query.device)
    values = torch.empty(shape, dtype=values_dtype if values_dtype is not None else query.dtype, device=query.device)
    with Descriptors() as desc:
        args = (
            desc(query, "query"),
            desc(key, "key"),
            desc(weights, "weights"),
            desc(actual_seq_lengths_query, "actual_seq_lengths_query"),
            desc(actual_seq_lengths_key, "actual_seq_lengths_key"),
            layout.encode(),
            sparse_count,
            sparse_mode,
            pre_tokens,
            next_tokens,
            desc(indices, "sparse_indices"),
            desc(values, "sparse_values"),
        )
        _run(_lib.lig_indexer_get_workspace_size, _lib.lig_indexer, args, "lig_indexer", desc.device)
    return indices, values


@_indexer_op.register_fake
def _(query, key, weights, sparse_count, aq, ak, layout, sparse_mode, pre_tokens, next_tokens, index_dtype,
      values_dtype, deterministic):
    _check_indexer_args(query, key, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype)
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


# ---- lig::indexer_paged (forward over a paged key cache) ----------------------------------------


@_op("indexer_paged")
def _indexer_paged_op(
    query: Tensor,
    key_cache: Tensor,
    block_table: Tensor,
    weights: Tensor,
    sparse_count: int,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Tensor,
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    index_dtype: torch.dtype,
    values_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor]:
    _check_paged_args(query, key_cache, block_table, weights, sparse_count, actual_seq_lengths_query,
                      actual_seq_lengths_key, layout, index_dtype, values_dtype)
    shape = _paged_shape(query, key_cache, layout, sparse_count)
    indices = torch.empty(shape, dtype=index_dtype, device=query.device)
    values = torch.empty(shape, dtype=values_dtype if values_dtype is not None else query.dtype, device=query.device)
    with Descriptors() as desc:
        args = (
            desc(query, "query"),
            desc(key_cache, "key_cache"),
            desc(block_table, "block_table"),
            desc(weights, "weights"),
            desc(actual_seq_lengths_query, "actual_seq_lengths_query"),
            desc(actual_seq_lengths_key, "actual_seq_lengths_key"),
            layout.encode(),
            sparse_count,
            sparse_mode,
            pre_tokens,
            next_tokens,
            desc(indices, "sparse_indices"),
            desc(values, "sparse_values"),
        )
        _run(_lib.lig_indexer_paged_get_workspace_size, _lib.lig_indexer, args, "lig_indexer_paged", desc.device)
    return indices, values


@_indexer_paged_op.register_fake
def _(query, key_cache, block_table, weights, sparse_count, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
      index_dtype, values_dtype):
    _check_paged_args(query, key_cache, block_table, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype)
    shape = _paged_shape(query, key_cache, layout, sparse_count)
    return (
        query.new_empty(shape, dtype=index_dtype),
        query.new_empty(shape, dtype=values_dtype if values_dtype is not None else query.dtype),
    )


PAGED_NOT_DIFFERENTIABLE = (
    "lig.indexer_paged: sparse_values is not differentiable (lig has no backward over a paged key cache), "
    "but a gradient reached it; to train through the scores, gather the keys into a contiguous tensor and call "
    "lig.lightning_indexer, or pass detached inputs to lig.indexer_paged"
)


@_op("indexer_paged_refuse_grad")
def _indexer_paged_refuse_grad_op(
    grad_values: Tensor, query: Tensor, key_cache: Tensor, weights: Tensor, need_query: bool, need_key_cache: bool,
    need_weights: bool,
) -> Tuple[Tensor, Tensor, Tensor]:
    """The gradient of lig::indexer_paged's values: refused.

    Any non-zero (or NaN) element in the incoming gradient raises. Only an all-zero incoming
    gradient gets an answer, zeros, which is then the exact vector-Jacobian product whatever the
    Jacobian: torch.compile's backward hands zeros to the outputs a loss does not use, and a
    compiled function returning sparse_values next to a differentiated output must not fail.
    The gradients of (query, key_cache, weights) that the ``need_*`` flags do not ask for are
    empty (a key cache can be large).
    """
    if bool((grad_values != 0).any()):
        raise RuntimeError(PAGED_NOT_DIFFERENTIABLE)
    return tuple(torch.zeros(t.shape if need else (0,), dtype=t.dtype, device=t.device)
                 for t, need in ((query, need_query), (key_cache, need_key_cache), (weights, need_weights)))


@_indexer_paged_refuse_grad_op.register_fake
def _(grad_values, query, key_cache, weights, need_query, need_key_cache, need_weights):
    return tuple(t.new_empty(t.shape if need else (0,))
                 for t, need in ((query, need_query), (key_cache, need_key_cache), (weights, need_weights)))


_indexer_paged_refuse_grad_op.refuse_autograd()


def _paged_setup_context(ctx, inputs, output):
    query, key_cache, _, weights = inputs[:4]
    ctx.mark_non_differentiable(output[0])
    ctx.save_for_backward(query, key_cache, weights)


def _paged_backward(ctx, grad_indices, grad_values):
    # A gradient asked of sparse_values is refused (by an op, so that a compiled backward refuses
    # it when it runs, not when it is traced), never answered with a zero that would be wrong.
    query, key_cache, weights = ctx.saved_tensors
    need = ctx.needs_input_grad
    d_query, d_key_cache, d_weights = torch.ops.lig.indexer_paged_refuse_grad(
        grad_values, query, key_cache, weights, need[0], need[1], need[3])
    return (d_query if need[0] else None, d_key_cache if need[1] else None, None,
            d_weights if need[3] else None, None, None, None, None, None, None, None, None, None)


_indexer_paged_op.register_autograd(_paged_backward, setup_context=_paged_setup_context)


# ---- lig::indexer_kl_grad ------------------------------------------------------------------------


@_op("indexer_kl_grad")
def _indexer_kl_grad_op(
    sparse_values: Tensor,
    target: Tensor,
    sparse_indices: Optional[Tensor],
    dy_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor]:
    _check_kl_args(sparse_values, target, sparse_indices, dy_dtype)
    loss = torch.empty((), dtype=torch.float32, device=sparse_values.device)
    dy = torch.empty(sparse_values.shape, dtype=dy_dtype if dy_dtype is not None else sparse_values.dtype,
                     device=sparse_values.device)
    with Descriptors() as desc:
        args = (
            desc(sparse_values, "sparse_values"),
            desc(sparse_indices, "sparse_indices"),
            desc(target, "target"),
            desc(loss, "loss"),
            desc(dy, "dy"),
        )
        _run(_lib.lig_indexer_kl_grad_get_workspace_size, _lib.lig_indexer_kl_grad, args, "lig_indexer_kl_grad",
             desc.device)
    return loss, dy


@_indexer_kl_grad_op.register_fake
def _(sparse_values, target, sparse_indices, dy_dtype):
    _check_kl_args(sparse_values, target, sparse_indices, dy_dtype)
    return (
        sparse_values.new_empty((), dtype=torch.float32),
        sparse_values.new_empty(sparse_values.shape, dtype=dy_dtype if dy_dtype is not None else sparse_values.dtype),
    )


def _kl_setup_context(ctx, inputs, output):
    sparse_values, target, sparse_indices, _ = inputs
    _, dy = output
    ctx.save_for_backward(sparse_values, target, sparse_indices, dy)
    # An unused output's gradient arrives as None: a loss-only backward skips the dy path.
    ctx.set_materialize_grads(False)


def _dy_vjp(values: Tensor, target: Tensor, indices: Optional[Tensor], grad_dy: Tensor) -> Tensor:
    """The gradient that flows from dy back into sparse_values.

    On the counted slots of a row, dy = c * s - p with s = softmax(I) and c = sum(p), so
    d dy_i / d I_j = c * s_i * (delta_ij - s_j) and the vector-Jacobian product is
    c * s_j * (g_j - sum_i g_i s_i); slots that do not count get 0 (their dy is a constant 0).
    Plain torch ops, so that it is itself differentiable.
    """
    counted = indices >= 0 if indices is not None else ~torch.isneginf(values)
    v = values.float()
    # A row without counted slots would softmax over nothing (NaN): give it finite logits, then
    # mask its probabilities to 0.
    has_slots = counted.any(-1, keepdim=True)
    filler = torch.where(has_slots, float("-inf"), 0.0)
    s = torch.where(counted, torch.softmax(torch.where(counted, v, filler), dim=-1), 0.0)
    mass = torch.where(counted, target.float(), 0.0).sum(-1, keepdim=True)
    g = torch.where(counted, grad_dy.float(), 0.0)
    return mass * s * (g - (g * s).sum(-1, keepdim=True))


def _kl_backward(ctx, grad_loss, grad_dy):
    if ctx.needs_input_grad[1]:
        # The KL step's target is a constant (a teacher distribution); a silent zero gradient for
        # it would be wrong, so refuse instead.
        raise RuntimeError(
            "lig.indexer_kl_grad: target requires grad, but the KL step does not differentiate its target; "
            "pass target.detach() (the teacher distribution is a constant)"
        )
    values, target, indices, dy = ctx.saved_tensors
    grad = None
    if grad_loss is not None:
        # d loss / d sparse_values is the dy the op computed (dy is itself differentiable: second order)
        grad = dy.float() * grad_loss
    if grad_dy is not None:
        from_dy = _dy_vjp(values, target, indices, grad_dy)
        grad = from_dy if grad is None else grad + from_dy
    return (None if grad is None else grad.to(values.dtype)), None, None, None


_indexer_kl_grad_op.register_autograd(_kl_backward, setup_context=_kl_setup_context)


# ---- the functions users call --------------------------------------------------------------------


def _tensor(x, name: str) -> Tensor:
    """torch tensors as they are; numpy arrays viewed as tensors (negative strides copied)."""
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


def _optional_tensor(x, name: str) -> Optional[Tensor]:
    return None if x is None else _tensor(x, name)


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
    deterministic: bool = True,
    d_weights_dtype: Optional[torch.dtype] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    """LightningIndexerGrad: returns ``(d_query, d_key, d_weights)``.

    The contract (formulas, which slots count, errors) is docs/contract.md in the repository.
    Shapes: query ``[B,S1,N1,D]`` | ``[T1,N1,D]``, key ``[B,S2,N2,D]`` | ``[T2,N2,D]``,
    dy and sparse_indices ``[B,S1,N2,K]`` | ``[T1,N2,K]`` (or without N2 when N2 == 1), weights
    ``[B,S1,N1]`` | ``[T1,N1]``. query, key, dy and weights share one dtype (float32, float16 or
    bfloat16); indices are int32 or int64. Sequence lengths: BSND optional per-batch lengths, TND
    required cumulative ends; a list of ints or an int32/int64 tensor. ``d_weights_dtype`` is the
    query dtype (default) or float32. Strided (non-contiguous) tensors are read in place.

    ``deterministic=True`` (the default) makes the results bitwise reproducible, across runs and
    thread counts; ``deterministic=False`` lets d_key's sums run in any order (last-bit differences).
    """
    if d_weights_dtype is not None:
        _args.dtype_choice(d_weights_dtype, FLOAT_DTYPES, "d_weights_dtype")
    return tuple(
        torch.ops.lig.indexer_grad(
            _tensor(query, "query"),
            _tensor(key, "key"),
            _tensor(dy, "dy"),
            _tensor(sparse_indices, "sparse_indices"),
            _tensor(weights, "weights"),
            _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _args.lengths(actual_seq_lengths_key, "actual_seq_lengths_key"),
            _args.string(layout, "layout"),
            _args.integer(sparse_mode, "sparse_mode"),
            _args.integer(pre_tokens, "pre_tokens"),
            _args.integer(next_tokens, "next_tokens"),
            _args.flag(deterministic, "deterministic"),
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
    deterministic: bool = True,
) -> Tuple[Tensor, Tensor]:
    """LightningIndexer (forward): returns ``(sparse_indices, sparse_values)``.

    For each (batch, query row, key head) the ``sparse_count`` visible keys with the largest
    ``I = sum_h w * ReLU(q . k)``, by descending score, ties to the lower key index; ``-1`` indices
    and ``-inf`` values fill the slots left over when fewer keys are visible (mask them before
    summing the values). Outputs are ``[B,S1,N2,K]`` | ``[T1,N2,K]``, without the N2 axis when
    N2 == 1 (as CANN and DeepSeek do). ``index_dtype`` is int32 or int64; ``values_dtype`` the query
    dtype (default) or float32. The contract is docs/contract.md in the repository.

    The values are differentiable with respect to query, key and weights (lig's backward;
    ``deterministic`` is passed to it); the selection is not.
    """
    _args.dtype_choice(index_dtype, INDEX_DTYPES, "index_dtype")
    if values_dtype is not None:
        _args.dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")
    return tuple(
        torch.ops.lig.indexer(
            _tensor(query, "query"),
            _tensor(key, "key"),
            _tensor(weights, "weights"),
            _args.integer(sparse_count, "sparse_count", minimum=1),
            _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _args.lengths(actual_seq_lengths_key, "actual_seq_lengths_key"),
            _args.string(layout, "layout"),
            _args.integer(sparse_mode, "sparse_mode"),
            _args.integer(pre_tokens, "pre_tokens"),
            _args.integer(next_tokens, "next_tokens"),
            index_dtype,
            values_dtype,
            _args.flag(deterministic, "deterministic"),
        )
    )


def indexer_paged(
    query: Tensor,
    key_cache: Tensor,
    block_table: Tensor,
    weights: Tensor,
    sparse_count: int,
    actual_seq_lengths_key: Union[Tensor, Sequence[int]],
    *,
    actual_seq_lengths_query: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    index_dtype: torch.dtype = torch.int32,
    values_dtype: Optional[torch.dtype] = None,
) -> Tuple[Tensor, Tensor]:
    """LightningIndexer over a paged key cache: returns ``(sparse_indices, sparse_values)``.

    As :func:`indexer`, except that the keys are read from ``key_cache``
    ``[num_blocks, block_size, N2, D]`` (the query's dtype) through ``block_table``
    ``[B, max_blocks_per_seq]`` (int32 or int64): key ``s`` of batch ``b`` is
    ``key_cache[block_table[b, s // block_size], s % block_size]``. ``actual_seq_lengths_key`` is
    required and holds per-batch key lengths (not cumulative ends), each at most
    ``max_blocks_per_seq * block_size``, whatever the query's layout ("BSND" or "TND"; for TND, B is
    the length of ``actual_seq_lengths_query``, which holds cumulative ends as for :func:`indexer`).
    Indices are batch-local positions ``s``. The table entries of the blocks that hold a batch's
    keys must lie in ``[0, num_blocks)`` (checked before anything is written); other entries, other
    blocks and the rows past a batch's length in its last block are never read.

    ``sparse_values`` is not differentiable (lig has no paged backward): when an input requires
    grad and a gradient reaches ``sparse_values``, the backward raises ``RuntimeError`` instead of
    returning a zero gradient (an incoming gradient that is zero everywhere, which torch.compile
    hands to unused outputs, gets its exact answer: zeros). Use :func:`lightning_indexer` on
    contiguous keys to train through the scores. There is no ``deterministic`` argument: it
    concerns only a backward.
    """
    _args.dtype_choice(index_dtype, INDEX_DTYPES, "index_dtype")
    if values_dtype is not None:
        _args.dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")
    return tuple(
        torch.ops.lig.indexer_paged(
            _tensor(query, "query"),
            _tensor(key_cache, "key_cache"),
            _tensor(block_table, "block_table"),
            _tensor(weights, "weights"),
            _args.integer(sparse_count, "sparse_count", minimum=1),
            _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _args.required_lengths(actual_seq_lengths_key, "actual_seq_lengths_key",
                                   "key lengths (required for a paged key cache)"),
            _args.string(layout, "layout"),
            _args.integer(sparse_mode, "sparse_mode"),
            _args.integer(pre_tokens, "pre_tokens"),
            _args.integer(next_tokens, "next_tokens"),
            index_dtype,
            values_dtype,
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
    deterministic: bool = True,
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
    counted slots and 0 elsewhere: the dy that :func:`indexer_grad` takes. See docs/contract.md.

    Both outputs are differentiable with respect to ``sparse_values``: the gradient of ``loss`` is
    ``dy``, and a gradient flowing into ``dy`` is carried back through its softmax. The target is a
    constant: if it requires grad, the backward raises instead of giving it no gradient.
    """
    if dy_dtype is not None:
        _args.dtype_choice(dy_dtype, FLOAT_DTYPES, "dy_dtype")
    return tuple(torch.ops.lig.indexer_kl_grad(
        _tensor(sparse_values, "sparse_values"),
        _tensor(target, "target"),
        _optional_tensor(sparse_indices, "sparse_indices"),
        dy_dtype,
    ))


def indexer_kl_loss(sparse_values: Tensor, target: Tensor, sparse_indices: Optional[Tensor] = None) -> Tensor:
    """``sum_t KL(p_t || softmax(I_t))`` as a differentiable float32 scalar (see :func:`indexer_kl_grad`)."""
    return indexer_kl_grad(sparse_values, target, sparse_indices)[0]
