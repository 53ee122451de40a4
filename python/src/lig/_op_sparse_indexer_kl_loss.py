"""lig::sparse_indexer_kl_loss, the indexer's KL loss with its target taken from the main attention
(docs/contract.md 2.5), fused: one C call gives the loss and the gradients of query_index, key_index
and weights, which autograd's backward scales by the incoming gradient (with attention sinks, the
C operator's V2); and lig.sparse_indexer_kl_loss."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch
from torch import Tensor

from . import _args, _capi
from ._args import FLOAT_DTYPES
from ._capi import INT64_MAX, KL_TARGETS, LIG_ERR_PARAM_NULLPTR
from ._lib import Descriptors, LigValueError
from ._registry import LengthsLike, op, optional_tensor, run, tensors

# The main attention's tensors: inputs of the loss, never differentiated (contract 2.5).
MAIN_ATTENTION = ("query", "key", "softmax_max", "softmax_sum", "query_rope", "key_rope", "softmax_lse", "sinks")
# their positions among the op's inputs
_MAIN_POSITIONS = (0, 1, 6, 7, 9, 10, 8, 20)


def _null(message: str) -> LigValueError:
    # the library's status for a missing tensor (LIG_ERR_PARAM_NULLPTR), raised before it is called
    return LigValueError(f"lig: {message}", LIG_ERR_PARAM_NULLPTR)


def _check(query_index, key_index, weights, sparse_indices, query, key, softmax_max, softmax_sum, query_rope, key_rope,
           softmax_lse, aq, ak, layout, target, sinks=None) -> None:
    _args.tensors(((query_index, "query_index"), (key_index, "key_index"), (weights, "weights"), (query, "query"),
                   (key, "key")),
                  ((sparse_indices, "sparse_indices", False), (aq, "actual_seq_lengths_query", True),
                   (ak, "actual_seq_lengths_key", True)))
    for t, name in ((query_rope, "query_rope"), (key_rope, "key_rope")):
        _args.tensor(t, name, FLOAT_DTYPES, optional=True)
    for t, name in ((softmax_max, "softmax_max"), (softmax_sum, "softmax_sum"), (softmax_lse, "softmax_lse"),
                    (sinks, "sinks")):
        _args.tensor(t, name, (torch.float32,), optional=True)
    # which statistics, and the rope pair, in the library's words and statuses
    if softmax_lse is not None:
        for t, name in ((softmax_max, "softmax_max"), (softmax_sum, "softmax_sum")):
            if t is not None:
                raise _args.invalid(f"{name}: expected None when softmax_lse is given (the statistics are "
                                    "softmax_lse, or softmax_max with softmax_sum), got a tensor")
    else:
        for t, name in ((softmax_max, "softmax_max"), (softmax_sum, "softmax_sum")):
            if t is None:
                raise _null(f"{name}: expected a tensor (or softmax_lse instead), got None")
    if (query_rope is None) != (key_rope is None):
        given, missing = ("query_rope", "key_rope") if key_rope is None else ("key_rope", "query_rope")
        raise _null(f"{missing}: expected a tensor ({given} is given; both or neither), got None")
    _args.layout(layout, query_index, key_index, names=("query_index", "key_index"))
    _check_indexer(query_index, key_index, weights, layout)
    _args.string(target, "target")
    if target not in KL_TARGETS:
        raise _args.invalid(f'target: expected "head_mean" or "l1", got "{target}"')


def _check_indexer(query_index: Tensor, key_index: Tensor, weights: Tensor, layout: str) -> None:
    """The indexer's three tensors against each other, by their own names. (The library checks
    them too, but with the backward's checks, whose messages say "query" and "key": names that in
    this operator belong to the main attention.)"""
    for t, name in ((key_index, "key_index"), (weights, "weights")):
        if t.dtype != query_index.dtype:
            raise _args.invalid(f"{name}: expected dtype {str(query_index.dtype).replace('torch.', '')} (like "
                                f"query_index), got {str(t.dtype).replace('torch.', '')}")
    lead = 2 if layout == "BSND" else 1  # [B,S] | [T]
    qs, ks = tuple(query_index.shape), tuple(key_index.shape)
    expect = qs[: lead - 1] + ks[lead - 1: lead + 1] + qs[-1:]
    if ks != expect:
        raise _args.invalid(f"key_index: expected shape {_shape(expect)} (batch and D like query_index), got "
                            f"{_shape(ks)}")
    n1, n2 = qs[-2], ks[-2]
    if n2 == 0 and n1 != 0 or n2 != 0 and n1 % n2 != 0:
        raise _args.invalid(f"key_index: expected a head count N2 that divides query_index's N1 = {n1}, got "
                            f"N2 = {n2}")
    if tuple(weights.shape) != qs[:-1]:
        raise _args.invalid(f"weights: expected shape {_shape(qs[:-1])} (like query_index without D), got "
                            f"{_shape(weights.shape)}")


def _shape(dims) -> str:
    return "[" + ",".join(str(int(n)) for n in dims) + "]"


@op("sparse_indexer_kl_loss")
def _sparse_indexer_kl_loss_op(  # the C operator's (CANN's) argument order
    query: Tensor,
    key: Tensor,
    query_index: Tensor,
    key_index: Tensor,
    weights: Tensor,
    sparse_indices: Tensor,
    softmax_max: Optional[Tensor],
    softmax_sum: Optional[Tensor],
    softmax_lse: Optional[Tensor],
    query_rope: Optional[Tensor],
    key_rope: Optional[Tensor],
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Optional[Tensor],
    scale: float,
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    target: str,
    deterministic: bool,
    sinks: Optional[Tensor] = None,
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(loss, d_query_index, d_key_index, d_weights): the loss a float32 scalar, d_weights float32
    (so that the backward rounds it once, after scaling), the other two in query_index's dtype.
    ``sinks`` (last, so that V1's argument list stays as it was) selects the C operator's V2."""
    _check(query_index, key_index, weights, sparse_indices, query, key, softmax_max, softmax_sum, query_rope,
           key_rope, softmax_lse, actual_seq_lengths_query, actual_seq_lengths_key, layout, target, sinks)
    device = query_index.device
    loss = torch.empty((), dtype=torch.float32, device=device)
    d_query_index = torch.empty(query_index.shape, dtype=query_index.dtype, device=device)
    d_key_index = torch.empty(key_index.shape, dtype=query_index.dtype, device=device)
    d_weights = torch.empty(weights.shape, dtype=torch.float32, device=device)
    inputs = ((query, "query"), (key, "key"), (query_index, "query_index"), (key_index, "key_index"),
              (weights, "weights"), (sparse_indices, "sparse_indices"), (softmax_max, "softmax_max"),
              (softmax_sum, "softmax_sum"), (softmax_lse, "softmax_lse"), (query_rope, "query_rope"),
              (key_rope, "key_rope"), (actual_seq_lengths_query, "actual_seq_lengths_query"),
              (actual_seq_lengths_key, "actual_seq_lengths_key"))
    if sinks is not None:  # V2: sinks follow the lengths (CANN's V2 order)
        inputs += ((sinks, "sinks"),)
    with Descriptors() as desc:
        args = (
            *desc.each(inputs),
            scale,
            layout.encode(),
            sparse_mode,
            pre_tokens,
            next_tokens,
            KL_TARGETS[target],
            bool(deterministic),
            *desc.each(((d_query_index, "d_query_index"), (d_key_index, "d_key_index"), (d_weights, "d_weights"),
                        (loss, "loss"))),
        )
        phase1 = (_capi.lig_sparse_indexer_grad_kl_loss_get_workspace_size if sinks is None
                  else _capi.lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size)
        run(phase1, _capi.lig_sparse_indexer_grad_kl_loss, args, "lig_sparse_indexer_grad_kl_loss", desc.device)
    return loss, d_query_index, d_key_index, d_weights


@_sparse_indexer_kl_loss_op.register_fake
def _(query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum, softmax_lse, query_rope,
      key_rope, aq, ak, scale, layout, sparse_mode, pre_tokens, next_tokens, target, deterministic, sinks=None):
    _check(query_index, key_index, weights, sparse_indices, query, key, softmax_max, softmax_sum, query_rope,
           key_rope, softmax_lse, aq, ak, layout, target, sinks)
    return (query_index.new_empty((), dtype=torch.float32), query_index.new_empty(query_index.shape),
            key_index.new_empty(key_index.shape, dtype=query_index.dtype),
            weights.new_empty(weights.shape, dtype=torch.float32))


NO_SECOND_ORDER = (
    "lig.sparse_indexer_kl_loss: a gradient reached the loss's gradients (d_query_index, d_key_index, d_weights), "
    "but lig computes no derivative of them (no second-order derivative of this loss)"
)


@op("sparse_indexer_kl_loss_backward")
def _sparse_indexer_kl_loss_backward_op(
    grad_loss: Optional[Tensor],
    d_query_index: Tensor,
    d_key_index: Tensor,
    d_weights: Tensor,
    grad_d_query_index: Optional[Tensor],
    grad_d_key_index: Optional[Tensor],
    grad_d_weights: Optional[Tensor],
) -> Tuple[Tensor, Tensor, Tensor]:
    """The gradients of (query_index, key_index, weights): the ones the forward computed, times the
    loss's incoming gradient, in fp32 and rounded once into query_index's dtype.

    A gradient reaching the forward's gradient outputs (only torch.ops.lig.sparse_indexer_kl_loss
    returns them) has no derivative here: any non-zero (or NaN) element raises, never ignored. An
    all-zero one is what torch.compile hands to outputs nobody used, and its exact answer is no
    contribution. The check is an op, so that a compiled backward raises when it runs, not when it
    is traced; the op itself is not differentiable (no double backward).
    """
    for g in (grad_d_query_index, grad_d_key_index, grad_d_weights):
        if g is not None and bool((g != 0).any()):
            raise RuntimeError(NO_SECOND_ORDER)
    dtype = d_query_index.dtype
    a = grad_loss.float() if grad_loss is not None else torch.zeros((), device=d_query_index.device)
    return tuple((d.float() * a).to(dtype) for d in (d_query_index, d_key_index, d_weights))


@_sparse_indexer_kl_loss_backward_op.register_fake
def _(grad_loss, d_query_index, d_key_index, d_weights, grad_d_query_index, grad_d_key_index, grad_d_weights):
    return tuple(d.new_empty(d.shape, dtype=d_query_index.dtype) for d in (d_query_index, d_key_index, d_weights))


_sparse_indexer_kl_loss_backward_op.refuse_autograd()


def _main_requiring_grad(tensors_in_order: Sequence[Optional[Tensor]]) -> list:
    return [name for name, t in zip(MAIN_ATTENTION, tensors_in_order) if t is not None and t.requires_grad]


def _refusal(names) -> RuntimeError:
    return RuntimeError(
        f"lig.sparse_indexer_kl_loss: {', '.join(names)} require{'s' if len(names) == 1 else ''} grad, but the loss "
        "does not differentiate the main attention (its target is a constant for the indexer, docs/contract.md 2.5); "
        "pass them detached (.detach())")


def _setup_context(ctx, inputs, output):
    _, d_query_index, d_key_index, d_weights = output
    ctx.save_for_backward(d_query_index, d_key_index, d_weights)
    # Unused outputs' gradients arrive as None (the gradient outputs usually are unused).
    ctx.set_materialize_grads(False)


def _backward(ctx, grad_loss, grad_dq, grad_dk, grad_dw):
    need = ctx.needs_input_grad  # 20 entries, or 21 when the call passed sinks (the schema's defaulted last)
    refused = [name for name, at in zip(MAIN_ATTENTION, _MAIN_POSITIONS) if at < len(need) and need[at]]
    if refused:  # the public function refuses them at the call; this guards direct calls of the op
        raise _refusal(refused)
    d_query_index, d_key_index, d_weights = ctx.saved_tensors
    gq, gk, gw = torch.ops.lig.sparse_indexer_kl_loss_backward(grad_loss, d_query_index, d_key_index, d_weights,
                                                               grad_dq, grad_dk, grad_dw)
    return (None, None, gq if need[2] else None, gk if need[3] else None, gw if need[4] else None) + (
        (None,) * (len(need) - 5))


_sparse_indexer_kl_loss_op.register_autograd(_backward, setup_context=_setup_context)


def sparse_indexer_kl_loss(
    query_index: Tensor,
    key_index: Tensor,
    weights: Tensor,
    sparse_indices: Tensor,
    query: Tensor,
    key: Tensor,
    softmax_max: Optional[Tensor],
    softmax_sum: Optional[Tensor],
    scale: float,
    query_rope: Optional[Tensor] = None,
    key_rope: Optional[Tensor] = None,
    softmax_lse: Optional[Tensor] = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    target: str = "head_mean",
    deterministic: bool = True,
    *,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    sinks: Optional[Tensor] = None,
) -> Tensor:
    """The indexer's KL loss with the main attention's target (CANN's SparseLightningIndexerGradKLLoss),
    fused: a float32 scalar (0-d tensor), differentiable in query_index, key_index and weights.

    For each (batch, valid row, index key head) and each counted slot j of ``sparse_indices`` (index
    >= 0 and visible; -1 is padding; a duplicate counts once per slot), with s its key:
    ``P[h,j] = exp(scale * (query[h] . key[s] + query_rope[h] . key_rope[s]) - softmax_max[h]) / softmax_sum[h]``
    (or ``exp(... - softmax_lse[h])``); the target is ``p = mean_h P`` (``target="head_mean"``, CANN)
    or ``sum_h P`` normalised over the slots (``"l1"``, the paper); ``y`` is the softmax over the
    counted slots of the indexer's scores ``I = sum_h weights[h] * ReLU(query_index[h] . key_index[s])``;
    the loss is ``sum p (log p - log y)`` over every unit (a term with p = 0 adds 0).

    ``sinks`` (keyword-only; CANN's SparseLightningIndexerGradKLLossV2, which torch_npu does not
    name): float32 ``[N1]``, one attention-sink logit per main head, counted in the statistics
    (``softmax_sum`` includes ``exp(sinks[h] - softmax_max[h])``). The head-mean target becomes
    ``sum_h P / (N1 - sum_h exp(sinks[h] - softmax_max[h]) / softmax_sum[h])``: the sinks' mass
    leaves the target. ``"l1"`` is unchanged (the sinks cancel); sinks of ``-inf`` give the results
    without sinks bit for bit. Not differentiated, like the rest of the main attention.

    Shapes (BSND | TND): query_index ``[B,S1,Nidx1,D]`` | ``[T1,Nidx1,D]``, key_index ``[B,S2,Nidx2,D]``
    | ``[T2,Nidx2,D]``, weights ``[B,S1,Nidx1]`` | ``[T1,Nidx1]``, sparse_indices ``[B,S1,Nidx2,K]`` |
    ``[T1,Nidx2,K]`` (without Nidx2 when it is 1), the main attention's query ``[B,S1,N1,Dm]`` and
    key ``[B,S2,1,Dm]`` (one latent key head), query_rope / key_rope likewise with ``Dr`` (both or
    neither), the statistics float32 ``[B,1,S1,N1]`` | ``[1,T1,N1]``: ``softmax_max`` and
    ``softmax_sum``, or ``softmax_lse`` alone (the other two None). Every float tensor but the
    statistics has query_index's dtype (float32, float16 or bfloat16). Sequence lengths, layout,
    sparse_mode and the band (``pre_tokens`` / ``next_tokens``, keyword-only) are those of
    :func:`indexer_grad`.

    One C call computes the loss and the gradients of query_index, key_index and weights (lig's
    backward with ``dy = y * sum(p) - p`` kept in fp32); they are kept for autograd's backward,
    which scales them by the incoming gradient. The main attention is not differentiated: if one of
    its tensors requires grad (with grad mode on), this raises ``RuntimeError`` naming them.
    ``deterministic=True`` (the default) makes d_key_index bitwise reproducible across runs and
    thread counts; the loss and the other gradients always are. The contract is docs/contract.md.

    Devices: CPU tensors only. The CUDA backend has no form of this loss yet: CUDA tensors raise
    :class:`LigValueError`, in any build.
    """
    named = ((query_index, "query_index"), (key_index, "key_index"), (weights, "weights"),
             (sparse_indices, "sparse_indices"), (query, "query"), (key, "key"))
    query_index, key_index, weights, sparse_indices, query, key = tensors(*named)
    softmax_max, softmax_sum, query_rope, key_rope, softmax_lse, sinks = (
        optional_tensor(t, name) for t, name in ((softmax_max, "softmax_max"), (softmax_sum, "softmax_sum"),
                                                 (query_rope, "query_rope"), (key_rope, "key_rope"),
                                                 (softmax_lse, "softmax_lse"), (sinks, "sinks")))
    if torch.is_grad_enabled():
        refused = _main_requiring_grad((query, key, softmax_max, softmax_sum, query_rope, key_rope, softmax_lse,
                                        sinks))
        if refused:
            raise _refusal(refused)
    aq = _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query")
    ak = _args.lengths(actual_seq_lengths_key, "actual_seq_lengths_key")
    layout, sparse_mode, pre_tokens, next_tokens = _args.band(layout, sparse_mode, pre_tokens, next_tokens)
    return torch.ops.lig.sparse_indexer_kl_loss(
        query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum, softmax_lse,
        query_rope, key_rope, aq, ak, _args.real(scale, "scale"), layout, sparse_mode, pre_tokens, next_tokens,
        _args.string(target, "target"), _args.flag(deterministic, "deterministic"), sinks,
    )[0]
