"""lig.indexer_grad against float64 torch autograd of the forward definition (docs/contract.md 2.1/2.2)."""
import torch
from hypothesis import given, settings

import lig
from _cases import cases, examples
from _reference import reference_grad
from _tol import assert_exact, assert_grads_within, reference_grad_bounds


def _check_grads(case, outs, refs):
    dq, dk, dw = outs
    rq, rk, rw = refs
    assert dq.dtype == case.dtype and dk.dtype == case.dtype
    assert dw.dtype == (case.dw_dtype or case.dtype)
    assert dq.shape == case.q.shape and dk.shape == case.k.shape and dw.shape == case.w.shape
    for name, out, ref in (("d_query", dq, rq), ("d_key", dk, rk), ("d_weights", dw, rw)):
        # On the grid every sum is exact in fp32, so lig's single rounding into the output dtype
        # must give exactly the float64 reference rounded the same way.
        assert_exact(out, ref, name)


@settings(max_examples=examples(800))
@given(case=cases())
def test_grad_matches_float64_autograd(case):
    outs = lig.indexer_grad(
        case.q, case.k, case.dy, case.idx, case.w, **case.kwargs(),
        deterministic=case.deterministic, d_weights_dtype=case.dw_dtype,
    )
    refs = reference_grad(case.layout, case.q, case.k, case.dy, case.idx, case.w, *case.ref_args())
    _check_grads(case, outs, refs)


def test_grad_random_data_deepseek_like():
    """Gaussian (off-grid) data at DeepSeek's head shape, scaled down: each element within its
    bound (_tol.py)."""
    gen = torch.Generator().manual_seed(7)
    B, S, N1, N2, D, K = 2, 48, 16, 1, 128, 40
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        q = torch.randn(B, S, N1, D, generator=gen).to(dtype)
        k = torch.randn(B, S, N2, D, generator=gen).to(dtype)
        w = (torch.randn(B, S, N1, generator=gen) / 8).to(dtype)
        t = torch.arange(S).view(1, S, 1)
        idx = (torch.rand(B, S, K, generator=gen) * (t + 1)).floor().to(torch.int32)  # causal, with repeats
        idx[:, :, -3:] = -1
        dy = torch.randn(B, S, K, generator=gen).to(dtype)
        for det in (True, False):
            outs = lig.indexer_grad(q, k, dy, idx, w, deterministic=det)
            bounds = reference_grad_bounds("BSND", q, k, dy, idx, w, None, None, 3, lig.INT64_MAX, lig.INT64_MAX)
            assert_grads_within(outs, bounds, f"{dtype} det={det}")


def test_empty_problem():
    q = torch.zeros(1, 0, 4, 8)
    k = torch.zeros(1, 5, 1, 8)
    w = torch.zeros(1, 0, 4)
    idx = torch.zeros(1, 0, 3, dtype=torch.int32)
    dq, dk, dw = lig.indexer_grad(q, k, torch.zeros(1, 0, 3), idx, w)
    assert dq.shape == q.shape and dw.shape == w.shape
    assert torch.equal(dk, torch.zeros_like(k))


@settings(max_examples=examples(60))
@given(case=cases(max_batch=2, max_rows=40, max_keys=80, max_d=160, max_k=70))
def test_grad_matches_float64_autograd_larger(case):
    """Larger rows, keys, D and K: several slot blocks per unit, many units per wave."""
    test_grad_matches_float64_autograd.hypothesis.inner_test(case)
