"""lig.indexer_kl_grad against float64 torch autograd of sum_t KL(p_t || softmax(I_t))."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import lig
from _cases import DTYPES, examples
from _reference import grid, reference_kl, reference_kl_graph
from _tol import assert_kl_within, assert_within, kl_dy_bound, kl_values_grad_bound


@st.composite
def kl_cases(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))) + (draw(st.integers(1, 40)),)
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    vdt, tdt, ddt = (draw(st.sampled_from(DTYPES)) for _ in range(3))
    with_indices = draw(st.booleans())
    normalised = draw(st.booleans())
    n = 1
    for s in shape:
        n *= s
    values = (torch.randn(shape, generator=gen) * draw(st.sampled_from([0.5, 3.0, 20.0]))).to(vdt)
    counted = torch.rand(shape, generator=gen) < draw(st.sampled_from([0.3, 0.8, 1.0]))
    target = torch.rand(shape, generator=gen) * (torch.rand(shape, generator=gen) < 0.8)  # some p = 0
    target = torch.where(counted, target, torch.zeros(()))
    if normalised:
        target = target / target.sum(-1, keepdim=True).clamp(min=1e-30)
    junk = torch.tensor([float("nan"), 5.0, -1.0])[torch.randint(0, 3, shape, generator=gen)]
    target = torch.where(counted, target, junk)  # slots that do not count are never read
    indices = None
    if with_indices:
        indices = torch.where(counted, torch.randint(0, 1000, shape, generator=gen), -1).to(
            draw(st.sampled_from([torch.int32, torch.int64])))
        values = torch.where(counted, values, torch.full((), float("nan"), dtype=vdt))
    else:
        values = torch.where(counted, values, torch.full((), float("-inf"), dtype=vdt))
    return values, target.to(tdt), indices, ddt


@settings(max_examples=examples(400))
@given(case=kl_cases())
def test_kl_matches_float64_autograd(case):
    values, target, indices, dy_dtype = case
    loss, dy = lig.indexer_kl_grad(values, target, indices, dy_dtype=dy_dtype)
    ref_loss, ref_dy = reference_kl(values, target, indices)
    assert loss.dtype == torch.float32 and loss.shape == ()
    assert dy.dtype == dy_dtype and dy.shape == values.shape
    assert_kl_within(values, target, indices, loss, dy, ref_loss, ref_dy, "lig.indexer_kl_grad")


def test_kl_loss_is_differentiable():
    torch.manual_seed(1)
    values = torch.randn(3, 7, requires_grad=True)
    target = torch.softmax(torch.randn(3, 7), -1)
    loss = lig.indexer_kl_loss(values, target)
    loss.backward()
    # the gradient of the loss alone is lig's dy (times 1)
    ref_loss, ref_dy = reference_kl(values, target)
    assert_kl_within(values.detach(), target, None, loss, values.grad, ref_loss, ref_dy, "indexer_kl_loss")


def test_gradient_through_dy_issue_example():
    """A loss of dy alone carries its gradient back to the values (it used to be a silent 0):
    the example of the issue, against float64 autograd."""
    torch.manual_seed(0)
    val = torch.randn(4, 8, requires_grad=True)
    p = torch.softmax(torch.randn(4, 8), -1)
    loss, dy = lig.indexer_kl_grad(val, p)
    (dy**2).sum().backward()
    v = val.detach().double().requires_grad_()
    _, ref_dy = reference_kl_graph(v, p)
    (ref_dy**2).sum().backward()
    assert v.grad.abs().max() > 0.1
    # the gradient arriving at dy is 2 dy, lig's dy: its error propagates
    dy_bound = kl_dy_bound(val, p, None, ref_dy.detach(), dy.dtype)
    bound = kl_values_grad_bound(val.detach(), p, None, 0.0, dy, 0.0, 2 * dy.detach(), 2 * dy_bound, v.grad,
                                 val.dtype)
    assert_within(val.grad, v.grad, bound, "values' gradient")


@settings(max_examples=examples(200))
@given(case=kl_cases(), a=st.sampled_from([0.0, 1.0, -0.5]), seed=st.integers(0, 2**31 - 1))
def test_gradients_through_loss_and_dy(case, a, seed):
    """L = a * loss + sum(c * dy): the gradient reaching the values from both outputs at once (and
    from dy alone, a = 0), against float64 autograd through the reference's dy."""
    values, target, indices, dy_dtype = case
    c = grid(torch.Generator().manual_seed(seed), values.shape).to(dy_dtype)  # exact in every dtype
    val = values.detach().clone().requires_grad_(True)
    loss, dy = lig.indexer_kl_grad(val, target, indices, dy_dtype=dy_dtype)
    (a * loss + (c * dy).sum()).backward()
    v = values.detach().double().requires_grad_(True)
    ref_loss, ref_dy = reference_kl_graph(v, target, indices)
    ref_total = a * ref_loss + (c.double() * ref_dy).sum()
    if ref_total.requires_grad:
        ref_total.backward()
    ref = v.grad if v.grad is not None else torch.zeros_like(v)
    counted = (indices >= 0) if indices is not None else ~torch.isneginf(values)
    ref = torch.where(counted, ref, torch.zeros((), dtype=torch.float64))
    assert val.grad is not None and val.grad.dtype == values.dtype
    assert torch.all(val.grad[~counted] == 0), "slots that do not count get no gradient"
    dy_bound = kl_dy_bound(values, target, indices, ref_dy.detach(), dy_dtype)
    bound = kl_values_grad_bound(values, target, indices, a, dy.detach(), dy_bound, c, 0.0, ref, values.dtype)
    assert_within(val.grad, ref, bound, f"values' gradient (a = {a})")


def test_second_order_through_the_loss():
    """d/dI of (c . d loss/dI): the loss's gradient is the op's dy, itself differentiable."""
    gen = torch.Generator().manual_seed(4)
    values = torch.randn(3, 5, 9, generator=gen) * 2
    indices = torch.where(torch.rand(3, 5, 9, generator=gen) < 0.8, 1, -1)
    target = torch.softmax(torch.randn(3, 5, 9, generator=gen).masked_fill(indices < 0, float("-inf")), -1)
    c = grid(gen, values.shape).float()
    val = values.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(lig.indexer_kl_loss(val, target, indices), val, create_graph=True)
    (g * c).sum().backward()
    v = values.double().requires_grad_(True)
    ref_loss, _ = reference_kl_graph(v, target, indices)
    (rg,) = torch.autograd.grad(ref_loss, v, create_graph=True)
    (rg * c.double()).sum().backward()
    # g is lig's dy (times 1); the second derivative is the vector-Jacobian product of dy with c
    assert_within(g, rg.detach(), kl_dy_bound(values, target, indices, rg.detach(), g.dtype), "first derivative")
    assert v.grad.abs().max() > 0.01
    bound = kl_values_grad_bound(values, target, indices, 0.0, g.detach(), 0.0, c, 0.0, v.grad, val.dtype)
    assert_within(val.grad, v.grad, bound, "second derivative")


def test_target_gradient_is_refused_not_zero():
    """The target is a constant of the KL step: differentiating it raises instead of a silent 0."""
    values = torch.randn(2, 6, requires_grad=True)
    logits = torch.randn(2, 6, requires_grad=True)
    p = torch.softmax(logits, -1)
    loss = lig.indexer_kl_loss(values, p)
    with pytest.raises(RuntimeError, match="target"):
        loss.backward()
    loss = lig.indexer_kl_loss(values, p.detach())
    loss.backward()
    assert values.grad is not None and logits.grad is None
