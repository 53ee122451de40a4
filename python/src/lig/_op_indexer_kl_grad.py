"""lig::indexer_kl_grad, the fused KL step (loss and dy, both differentiable in the values), and
lig.indexer_kl_grad / lig.indexer_kl_loss."""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args, _capi
from ._args import FLOAT_DTYPES
from ._lib import Descriptors
from ._registry import op, optional_tensor, run, tensor


def _check(sparse_values, target, sparse_indices, dy_dtype) -> None:
    _args.tensors(((sparse_values, "sparse_values"), (target, "target")), ((sparse_indices, "sparse_indices", True),))
    _args.optional_dtype_choice(dy_dtype, FLOAT_DTYPES, "dy_dtype")


@op("indexer_kl_grad")
def _indexer_kl_grad_op(
    sparse_values: Tensor,
    target: Tensor,
    sparse_indices: Optional[Tensor],
    dy_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor]:
    _check(sparse_values, target, sparse_indices, dy_dtype)
    loss = torch.empty((), dtype=torch.float32, device=sparse_values.device)
    dy = torch.empty(sparse_values.shape, dtype=dy_dtype if dy_dtype is not None else sparse_values.dtype,
                     device=sparse_values.device)
    with Descriptors() as desc:
        args = desc.each(((sparse_values, "sparse_values"), (sparse_indices, "sparse_indices"), (target, "target"),
                          (loss, "loss"), (dy, "dy")))
        run(_capi.lig_kl_loss_and_dy_get_workspace_size, _capi.lig_kl_loss_and_dy, args, "lig_kl_loss_and_dy",
             desc.device)
    return loss, dy


@_indexer_kl_grad_op.register_fake
def _(sparse_values, target, sparse_indices, dy_dtype):
    _check(sparse_values, target, sparse_indices, dy_dtype)
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

    Devices: CPU tensors; CUDA tensors too when the library was built with the CUDA backend
    (``-DLIG_CUDA=ON``, docs/cuda.md; without it they raise :class:`LigValueError`), all on one device.
    A CUDA call runs on ``torch.cuda.current_stream()``, puts its outputs on that device, and its checks
    of tensor contents, made on the device, raise later: at the next lig call on a CUDA device or in
    :func:`check_errors`.
    """
    _args.optional_dtype_choice(dy_dtype, FLOAT_DTYPES, "dy_dtype")
    return tuple(torch.ops.lig.indexer_kl_grad(
        tensor(sparse_values, "sparse_values"),
        tensor(target, "target"),
        optional_tensor(sparse_indices, "sparse_indices"),
        dy_dtype,
    ))


def indexer_kl_loss(sparse_values: Tensor, target: Tensor, sparse_indices: Optional[Tensor] = None) -> Tensor:
    """``sum_t KL(p_t || softmax(I_t))`` as a differentiable float32 scalar (see :func:`indexer_kl_grad`).

    Devices: CPU tensors; CUDA tensors too when the library was built with the CUDA backend
    (``-DLIG_CUDA=ON``, docs/cuda.md; without it they raise :class:`LigValueError`), all on one device.
    A CUDA call runs on ``torch.cuda.current_stream()``, puts its outputs on that device, and its checks
    of tensor contents, made on the device, raise later: at the next lig call on a CUDA device or in
    :func:`check_errors`."""
    return indexer_kl_grad(sparse_values, target, sparse_indices)[0]
