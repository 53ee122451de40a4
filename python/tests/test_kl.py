"""lig.indexer_kl_grad against float64 torch autograd of sum_t KL(p_t || softmax(I_t))."""
import torch
from hypothesis import given, settings, strategies as st

import lig
from _cases import DTYPES, examples
from _reference import reference_kl

TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}


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
    # loss: fp32 softmax per row; the error scales with the size of the terms p * log q
    counted = (indices >= 0) if indices is not None else ~torch.isneginf(values)
    p = torch.where(counted, target.double(), torch.zeros((), dtype=torch.float64))
    v = torch.where(counted, values.double(), torch.zeros((), dtype=torch.float64))
    scale = 1.0 + (p * (v.abs() + v.abs().amax(-1, keepdim=True) + 10)).sum().item()
    assert abs(loss.item() - ref_loss.item()) <= 1e-6 * scale, (loss.item(), ref_loss.item(), scale)
    tol = max(TOL[dy_dtype], TOL[values.dtype] if values.dtype != torch.float32 else 0)
    err = (dy.double() - ref_dy).abs().max().item() if dy.numel() else 0.0
    assert err <= tol * max(ref_dy.abs().max().item() if dy.numel() else 0.0, 1e-30) + 1e-7, err
    assert torch.all(dy[~counted] == 0), "dy must be 0 on slots that do not count"


def test_kl_loss_is_differentiable():
    torch.manual_seed(1)
    values = torch.randn(3, 7, requires_grad=True)
    target = torch.softmax(torch.randn(3, 7), -1)
    loss = lig.indexer_kl_loss(values, target)
    loss.backward()
    ref = (target * (target.log() - torch.log_softmax(values.detach().double(), -1))).sum()
    assert abs(loss.item() - ref.item()) < 1e-5
    _, ref_dy = reference_kl(values, target)
    torch.testing.assert_close(values.grad.double(), ref_dy, rtol=1e-5, atol=1e-6)
