"""The differentiable lightning_indexer, gradcheck of lig's backward, and torch.compile."""
import shutil

import pytest
import torch
from hypothesis import given, settings

import lig
from _cases import cases, examples
from _reference import grid, reference_grad
from _tol import assert_exact


@settings(max_examples=examples(200))
@given(case=cases())
def test_lightning_indexer_backward_matches_reference(case):
    """loss = sum(c * sparse_values) over the real slots; its gradients come from lig's backward.
    Grid data and c: every sum is exact, so each gradient is the float64 one rounded once."""
    q = case.q.detach().clone().requires_grad_(True)
    k = case.k.detach().clone().requires_grad_(True)
    w = case.w.detach().clone().requires_grad_(True)
    idx, val = lig.lightning_indexer(q, k, w, case.K, **case.kwargs(), values_dtype=case.values_dtype,
                                     deterministic=case.deterministic)
    c = grid(torch.Generator().manual_seed(3), val.shape).to(val.dtype)
    loss = torch.where(idx >= 0, val * c, torch.zeros((), dtype=val.dtype)).sum()
    if loss.requires_grad:
        loss.backward()
    dy = torch.where(idx >= 0, c, torch.zeros((), dtype=c.dtype)).to(case.dtype)
    refs = reference_grad(case.layout, case.q, case.k, dy, idx, case.w, *case.ref_args())
    for name, t, ref in (("q", q, refs[0]), ("k", k, refs[1]), ("w", w, refs[2])):
        g = t.grad if t.grad is not None else torch.zeros_like(t)
        assert g.dtype == case.dtype
        assert_exact(g, ref, f"grad {name}")


class _SparseScores(torch.autograd.Function):
    """The values at *given* indices: forward in float64 torch (the definition), backward by lig
    in FLOAT32 (inputs converted; on grid data the conversion and lig's sums are exact)."""

    @staticmethod
    def forward(ctx, q, k, w, idx):
        ctx.save_for_backward(q, k, w, idx)
        B, S1, N1, D = q.shape
        kg = k[torch.arange(B).view(B, 1, 1), idx.clamp(min=0).long(), 0]  # [B,S1,K,D]
        S = torch.einsum("bthd,btjd->bthj", q, kg)
        I = torch.einsum("bth,bthj->btj", w, torch.relu(S))
        return torch.where(idx >= 0, I, torch.zeros((), dtype=I.dtype))

    @staticmethod
    def backward(ctx, dy):
        q, k, w, idx = ctx.saved_tensors
        f = torch.float32
        dq, dk, dw = lig.indexer_grad(q.to(f), k.to(f), dy.to(f), idx, w.to(f), sparse_mode=0, deterministic=True)
        return dq.double(), dk.double(), dw.double(), None


def _gradcheck_inputs(seed):
    """Grid data whose scores stay clear of the ReLU kink (|S| >= 1/64 >> eps)."""
    gen = torch.Generator().manual_seed(seed)
    B, S1, S2, N1, D, K = 2, 3, 5, 2, 4, 3
    while True:
        q = grid(gen, (B, S1, N1, D))
        k = grid(gen, (B, S2, 1, D))
        w = grid(gen, (B, S1, N1))
        idx = torch.randint(0, S2, (B, S1, K), generator=gen, dtype=torch.int32)
        idx[0, 0, -1] = -1
        kg = k[torch.arange(B).view(B, 1, 1), idx.clamp(min=0).long(), 0]
        S = torch.einsum("bthd,btjd->bthj", q, kg)
        if (S != 0).all():
            return q.requires_grad_(), k.requires_grad_(), w.requires_grad_(), idx


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradcheck_values_path(seed):
    q, k, w, idx = _gradcheck_inputs(seed)
    assert torch.autograd.gradcheck(lambda q, k, w: _SparseScores.apply(q, k, w, idx), (q, k, w))


def _loss_fn(q, k, u, K):
    w = u.view(1, 1, -1).expand(q.shape[0], q.shape[1], -1)
    idx, val = lig.lightning_indexer(q, k, w, K, values_dtype=torch.float32)
    p = torch.softmax(torch.where(idx >= 0, val, torch.full((), float("-inf"))) * 0.5, -1).detach()
    loss, dy = lig.indexer_kl_grad(val, p, idx)  # both outputs carry gradients back to val
    return loss + 0.3 * dy.square().sum() + 0.1 * torch.where(idx >= 0, val, 0.0).square().sum()


def _compile_inputs():
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(2, 9, 4, 16, generator=gen, requires_grad=True)
    k = torch.randn(2, 9, 1, 16, generator=gen, requires_grad=True)
    u = torch.rand(4, generator=gen, requires_grad=True)
    return q, k, u


def _grads(fn):
    q, k, u = _compile_inputs()
    loss = fn(q, k, u, 4)
    loss.backward()
    return loss.detach(), q.grad, k.grad, u.grad


@pytest.mark.parametrize(
    "backend",
    ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
        shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a C++ compiler"))],
)
def test_torch_compile_fullgraph(backend):
    torch._dynamo.reset()
    compiled = torch.compile(_loss_fn, fullgraph=True, backend=backend)
    eager = _grads(_loss_fn)
    got = _grads(compiled)
    for e, g in zip(eager, got):
        if backend == "aot_eager":  # the same ops in the same order as eager: the same bits
            assert torch.equal(g, e)
        else:
            # inductor fuses and reorders torch's fp32 ops around lig's (the softmax, the squared
            # sums), so the dy lig's backward receives differs by roundings; lig's calls themselves
            # are checked bitwise by the aot_eager case
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


def test_opcheck():
    """Schema, fake-tensor and autograd-registration checks of the three custom ops. (opcheck's
    AOT test sums every output into one value, which an int64 index output cannot take: the AOT
    path is covered by test_torch_compile_fullgraph instead.)"""
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    q, k, u = _compile_inputs()
    w = u.detach().view(1, 1, -1).expand(2, 9, 4)
    big = lig.INT64_MAX
    torch.library.opcheck(torch.ops.lig.indexer.default,
                          (q, k, w, 3, None, None, "BSND", 3, big, big, torch.int32, None, True), test_utils=utils)
    idx, val = lig.indexer(q, k, w, 3)
    dy = torch.where(idx >= 0, torch.ones(()), torch.full((), float("nan")))
    torch.library.opcheck(torch.ops.lig.indexer_grad.default,
                          (q.detach(), k.detach(), dy, idx, w, None, torch.tensor([9, 9]), "BSND", 3, big, big, True,
                           torch.float32), test_utils=utils)
    torch.library.opcheck(torch.ops.lig.indexer_kl_grad.default,
                          (val.detach().requires_grad_(), torch.rand(val.shape), idx, None), test_utils=utils)
