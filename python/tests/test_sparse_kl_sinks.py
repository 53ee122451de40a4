"""lig.sparse_indexer_kl_loss(..., sinks=...): the KL loss with attention sinks in the main
attention's softmax (docs/contract.md 2.5 "Sinks", CANN's SparseLightningIndexerGradKLLossV2).

The reference is written here in float64 from the definition, with torch's autograd for the
gradients: per row and main head, the softmax over every visible key and the head's sink,
recomputed from the main query and key; the target at a selected key is the heads' summed
probability of that key over the heads' summed probability of all visible keys (the sinks' mass
taken out); the loss is KL(p || softmax(I)) over the counted slots."""
from __future__ import annotations

import math
import shutil

import pytest
import torch

import lig
from lig import LigValueError

B, S1, S2, N1M, DM, NI, D, K = 2, 6, 9, 8, 16, 4, 8, 5


def make(seed: int, dtype=torch.float32):
    """A BSND problem (sparse mode 3) with sinks and dense statistics that count them."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1)  # noqa: E731
    q, k = r(B, S1, N1M, DM).to(dtype), r(B, S2, 1, DM).to(dtype)
    qi, ki, w = r(B, S1, NI, D).to(dtype), r(B, S2, 1, D).to(dtype), r(B, S1, NI).to(dtype)
    sinks = (r(N1M) * 2).float()
    sinks[3] = -40.0  # a head whose sink is negligible
    scale = 1.0 / math.sqrt(DM)
    idx = torch.full((B, S1, 1, K), -1, dtype=torch.int32)
    for b in range(B):
        for t in range(S1):
            visible = S2 - S1 + t + 1
            chosen = torch.randperm(visible, generator=g)[: min(K - (t % 2), visible)]
            idx[b, t, 0, : len(chosen)] = chosen.to(torch.int32)
    scores = scale * torch.einsum("bthd,bsd->bths", q.double(), k.double()[:, :, 0])  # [B,S1,N1,S2]
    visible_mask = torch.tensor([[s <= S2 - S1 + t for s in range(S2)] for t in range(S1)])
    masked = scores.masked_fill(~visible_mask[None, :, None, :], -math.inf)
    m = torch.maximum(masked.amax(-1), sinks.double()[None, None, :])
    z = torch.exp(masked - m[..., None]).sum(-1) + torch.exp(sinks.double()[None, None, :] - m)
    smax = m.float().reshape(B, 1, S1, N1M)
    ssum = z.float().reshape(B, 1, S1, N1M)
    return dict(q=q, k=k, qi=qi, ki=ki, w=w, idx=idx, smax=smax, ssum=ssum, sinks=sinks, scale=scale,
                scores=scores, visible=visible_mask)


def call(p, sinks="given", target="head_mean", leaves=None, **kw):
    qi, ki, w = leaves if leaves is not None else (p["qi"], p["ki"], p["w"])
    s = p["sinks"] if isinstance(sinks, str) else sinks
    return lig.sparse_indexer_kl_loss(qi, ki, w, p["idx"], p["q"], p["k"], p["smax"], p["ssum"], p["scale"],
                                      target=target, sinks=s, **kw)


def definition(p, qi, ki, w, target="head_mean"):
    """The loss by definition, float64, differentiable in qi, ki, w."""
    probs = torch.softmax(torch.cat([p["scores"].masked_fill(~p["visible"][None, :, None, :], -math.inf),
                                     p["sinks"].double()[None, None, :, None].expand(B, S1, N1M, 1)], -1), -1)
    keys_mass = probs[..., :S2].sum((-1, -2))  # [B,S1]: every head, every visible key
    total = qi.new_zeros(())
    for b in range(B):
        for t in range(S1):
            sel = [int(s) for s in p["idx"][b, t, 0] if s >= 0]
            if not sel:
                continue
            mass = probs[b, t, :, sel].sum(0)
            pj = mass / keys_mass[b, t] if target == "head_mean" else mass / mass.sum()
            iscore = (w[b, t, :, None] * torch.relu(qi[b, t] @ ki[b, sel, 0].T)).sum(0)
            logy = torch.log_softmax(iscore, -1)
            total = total + (pj * (torch.log(pj) - logy)).sum()
    return total


@pytest.mark.parametrize("seed", [1, 2])
def test_matches_the_definition_with_autograd_in_float64(seed):
    p = make(seed)
    leaves = [p[n].clone().requires_grad_(True) for n in ("qi", "ki", "w")]
    loss = call(p, leaves=leaves)
    loss.backward()
    ref_leaves = [p[n].double().clone().requires_grad_(True) for n in ("qi", "ki", "w")]
    ref = definition(p, *ref_leaves)
    ref.backward()
    torch.testing.assert_close(loss.double(), ref.detach(), rtol=1e-5, atol=1e-6)
    for got, want in zip(leaves, ref_leaves):
        torch.testing.assert_close(got.grad.double(), want.grad, rtol=1e-4, atol=1e-6)
    # the sinks matter: without them the loss is another
    with torch.no_grad():
        assert abs(float(call(p, sinks=None)) - float(ref)) > 1e-3 * abs(float(ref))


def test_minus_inf_sinks_and_l1_are_the_results_without_sinks_bit_for_bit():
    p = make(3, torch.bfloat16)
    for target in ("head_mean", "l1"):
        for sinks in (torch.full((N1M,), -math.inf), p["sinks"] if target == "l1" else None):
            if sinks is None:
                continue
            outs = []
            for s in (None, sinks):
                leaves = [p[n].clone().requires_grad_(True) for n in ("qi", "ki", "w")]
                loss = call(p, sinks=s, target=target, leaves=leaves)
                loss.backward()
                outs.append([loss.detach()] + [x.grad for x in leaves])
            for a, b in zip(*outs):
                assert torch.equal(a.view(torch.uint8) if a.dim() else a.reshape(1).view(torch.uint8),
                                   b.view(torch.uint8) if b.dim() else b.reshape(1).view(torch.uint8)), target


def test_sinks_requiring_grad_are_refused_by_name():
    p = make(4)
    with pytest.raises(RuntimeError, match="sinks requires grad"):
        call(p, sinks=p["sinks"].clone().requires_grad_(True))


@pytest.mark.parametrize("bad, exc, pattern", [
    (lambda s: s.half(), TypeError, "sinks: expected dtype float32"),  # the package's dtype check
    (lambda s: torch.cat([s, s[:1]]), LigValueError, r"sinks: expected shape \[8\]"),  # the library's
    (lambda s: s[None], LigValueError, "sinks"),
])
def test_sinks_errors_are_named(bad, exc, pattern):
    p = make(5)
    with pytest.raises(exc, match=pattern):
        call(p, sinks=bad(p["sinks"]))


def test_opcheck_with_sinks():
    p = make(6)
    args = (p["q"], p["k"], p["qi"].clone().requires_grad_(True), p["ki"], p["w"], p["idx"], p["smax"], p["ssum"],
            None, None, None, None, None, p["scale"], "BSND", 3, 2**63 - 1, 2**63 - 1, "head_mean", True, p["sinks"])
    torch.library.opcheck(torch.ops.lig.sparse_indexer_kl_loss.default, args,
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph_with_sinks(backend):
    if backend == "inductor" and not (shutil.which("g++") or shutil.which("c++")):
        pytest.skip("inductor needs a C++ compiler")
    torch._dynamo.reset()
    p = make(7)

    def step(qi, ki, w, sinks):
        return 2.0 * call(p, sinks=sinks, leaves=(qi, ki, w)) + 0.5 * (w * w).sum()

    compiled = torch.compile(step, fullgraph=True, backend=backend)
    results = []
    for fn in (step, compiled):
        leaves = [p[n].clone().requires_grad_(True) for n in ("qi", "ki", "w")]
        out = fn(*leaves, p["sinks"])
        out.backward()
        results.append([out.detach()] + [x.grad for x in leaves])
    for e, g in zip(*results):
        if backend == "aot_eager":
            assert torch.equal(e, g)
        else:
            torch.testing.assert_close(g, e, rtol=1e-6, atol=1e-7)
