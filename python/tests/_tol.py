"""How far a result may be from the float64 reference, element by element: the C suite's bound
(tests/harness/error_bounds.h), ported, and the two comparisons every test uses.

Grid data (_cases.py) make every product and sum exact in fp32: a result must then equal the
float64 reference rounded once to the output dtype (assert_exact). Continuous data are compared
element by element (assert_within) with tests/harness/error_bounds.h's bound: lig computes each output in fp32 from
inputs exact in fp32, as a sum of elementary products each of which goes through at most n fp32
roundings, then rounds it once into the output dtype, so

    |lib - ref| <= u_out |ref| + C_ACC * n * 2^-24 * abs + tiny(out)

with abs the sum of |elementary products| of that element (Higham 3.1, 4.2; C_ACC = 2 holds while
n 2^-24 <= 1/4). An element with abs = 0 (nothing counted there) must be exactly 0. Each helper
below states its n.
"""
from __future__ import annotations

import torch

from _reference import as_rows, counted_mask, geometry, pair_scores, reference_grad, sparse_scores

C_ACC = 2.0
U32 = 2.0**-24
EPS = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}  # relative rounding unit
TINY = {torch.float32: 2.0**-149, torch.float16: 2.0**-24, torch.bfloat16: 2.0**-133}  # subnormal spacing


def accumulated(n, abs_sum):
    """The fp32 accumulation part of the bound: C_ACC * n * 2^-24 * abs."""
    return C_ACC * n * U32 * abs_sum


def element_bound(dtype: torch.dtype, ref: torch.Tensor, n, abs_sum) -> torch.Tensor:
    """tests/harness/error_bounds.h's tol_element, elementwise: the bound of an output of `dtype`."""
    return EPS[dtype] * ref.abs() + accumulated(n, abs_sum) + TINY[dtype]


def _first(mask: torch.Tensor):
    return tuple(mask.nonzero()[0].tolist())


def assert_exact(out: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    """Exact data: out equals the float64 reference rounded once to out's dtype, every element."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} vs {tuple(ref.shape)}"
    expect = ref.to(out.dtype)
    if not torch.equal(out, expect):
        bad = out != expect
        at = _first(bad)
        raise AssertionError(f"{what}: {int(bad.sum())} of {out.numel()} elements differ from the reference "
                             f"rounded to {out.dtype}; first at {list(at)}: {out[at].item()!r} vs "
                             f"{expect[at].item()!r} (float64 {ref[at].item()!r})")


def assert_within(out: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor, what: str,
                  abs_sum: torch.Tensor = None) -> None:
    """Continuous data: |out - ref| <= bound at every element (NaN fails), and out == 0 exactly
    where abs_sum (when given) is 0."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} vs {tuple(ref.shape)}"
    o = out.detach().to(torch.float64)
    err = (o - ref).abs()
    bad = ~(err <= bound)
    if abs_sum is not None:
        bad |= (abs_sum == 0) & (o != 0)
    if bad.any():
        at = _first(bad)
        raise AssertionError(f"{what}: {int(bad.sum())} of {out.numel()} elements outside their bound; first at "
                             f"{list(at)}: {o[at].item()!r} vs reference {ref[at].item()!r}, error "
                             f"{err[at].item():.3g}, bound {bound[at].item():.3g}")


def assert_topk_exact(idx: torch.Tensor, val: torch.Tensor, ridx: torch.Tensor, rval: torch.Tensor) -> None:
    """Grid data, the forward: the selection equals the float64 reference's (ties to the lower
    index), padded slots hold -inf and the values are the reference scores rounded to val's dtype.
    idx and val may keep the N2 axis the reference's rows fold away."""
    idx = idx.reshape(ridx.shape).to(torch.int64)
    val = val.reshape(rval.shape)
    bad = (idx != ridx).nonzero()
    assert bad.numel() == 0, f"indices differ at {bad[0].tolist()}: {idx[tuple(bad[0])]} vs {ridx[tuple(bad[0])]}"
    pad = ridx < 0
    assert torch.all(torch.isneginf(val[pad])), "padded slots must hold -inf"
    assert torch.equal(val[~pad], rval[~pad].to(val.dtype)), "values differ from the float64 scores"


# ---- the backward ----------------------------------------------------------------------------------


def reference_grad_bounds(layout, q, k, dy, idx, w, aq, ak, mode, pre, nxt):
    """For dQ, dK, dW: (float64 reference, abs, n) per element (tests/harness/backward_checks.c's terms).

    abs sums |w dy k| (dQ), |w dy q| (dK), |dy| sum_d |q_d k_d| (dW) over the counted (slot, head)
    pairs whose reference score passes the ReLU. n: dQ and dK multiply w by dy, then by k or q, and
    add up to terms - 1 times (terms + 1); dW forms S in D steps, multiplies by dy and adds up to
    terms - 1 times (terms + D)."""
    refs = reference_grad(layout, q, k, dy, idx, w, aq, ak, mode, pre, nxt)
    n2, D = k.shape[-2], q.shape[-1]
    geo = geometry(layout, q.shape, k.shape, aq, ak)
    q_r, k_r, w_r, idx_r = as_rows(layout, q.detach().double(), k.detach().double(), w.detach().double(), idx, n2)
    counted = counted_mask(geo, idx_r, mode, pre, nxt)
    dy_r = torch.where(counted, dy.detach().double().reshape(idx_r.shape), torch.zeros((), dtype=torch.float64))
    empty = q_r.shape[0] == 0 or idx_r.shape[-1] == 0 or k_r.shape[0] == 0
    live = None if empty else pair_scores(q_r, k_r, idx_r, counted, geo.key_offset) > 0

    def masked_grads(qa, ka, wa, dya):
        # d/d(qa, ka, wa) of sum over the live pairs of dya * wa * (qa . ka): with |inputs|, the
        # sums of |elementary products|; with ones, how many there are (times D for dW)
        leaves = [t.clone().requires_grad_(True) for t in (qa, ka, wa)]
        I = sparse_scores(*leaves, idx_r, counted, geo.key_offset, act=lambda S: torch.where(live, S, 0.0))
        grads = torch.autograd.grad((dya * I).sum(), leaves, allow_unused=True)
        return [torch.zeros_like(t) if g is None else g for t, g in zip(leaves, grads)]

    abs_sums = masked_grads(q_r.abs(), k_r.abs(), w_r.abs(), dy_r.abs())
    ones = masked_grads(*(torch.ones_like(t) for t in (q_r, k_r, w_r, dy_r)))
    steps = (ones[0] + 1, ones[1] + 1, ones[2] / max(D, 1) + D)
    return [(ref, a.reshape(ref.shape), n.reshape(ref.shape)) for ref, a, n in zip(refs, abs_sums, steps)]


def assert_grads_within(outs, bounds, what: str) -> None:
    """lig's (dQ, dK, dW) against reference_grad_bounds, each in its own output dtype."""
    for name, out, (ref, abs_sum, n) in zip(("d_query", "d_key", "d_weights"), outs, bounds):
        assert_within(out, ref, element_bound(out.dtype, ref, n, abs_sum), f"{what} {name}", abs_sum)


# ---- the forward -----------------------------------------------------------------------------------


def score_steps(D: int, G: int) -> int:
    """A score's elementary products w q_d k_d go through D roundings in q . k (a product and
    D - 1 additions), one in the product by w and up to G - 1 additions over the heads."""
    return D + G


# ---- the KL step -------------------------------------------------------------------------------------


def kl_loss_bound(ref_loss: torch.Tensor, abs_loss: float) -> float:
    """lig's loss: each row's in double, summed in double, rounded once to fp32 (2^-24 |loss|,
    doubled for the double part's rounding) plus the double computation's error, far below
    1e-12 of the sum of |p (log p - log q)| (tests/harness/forward_kl_checks.c)."""
    return 2 * U32 * abs(float(ref_loss)) + 1e-12 * abs_loss + 1e-300


def kl_abs_loss(values, target, indices=None) -> float:
    """sum over counted slots with p > 0 of |p (log p - log q)|, float64 (tests' ref_kl)."""
    counted = _kl_counted(values, indices)
    v = torch.where(counted, values.double(), torch.tensor(float("-inf"), dtype=torch.float64))
    logq = torch.log_softmax(v, -1)
    p = torch.where(counted, target.double(), torch.zeros((), dtype=torch.float64))
    pos = p > 0
    terms = torch.where(pos, p * (torch.log(torch.where(pos, p, 1.0)) - torch.where(pos, logq, 0.0)), 0.0)
    return float(terms.abs().sum())


def _kl_counted(values, indices):
    return (indices >= 0) if indices is not None else ~torch.isneginf(values)


def kl_dy_bound(values, target, indices, ref_dy, dy_dtype) -> torch.Tensor:
    """lig's dy = softmax(I) * mass - p in double, rounded to fp32 then to dy's dtype (two
    roundings: 2 eps |dy|), plus the double computation's error, below 1e-12 of the row's scale
    max(max |p|, |mass|) (tests/harness/forward_kl_checks.c)."""
    counted = _kl_counted(values, indices)
    p = torch.where(counted, target.double(), torch.zeros((), dtype=torch.float64))
    row_scale = torch.maximum(p.abs().amax(-1, keepdim=True) if p.shape[-1] else p.sum(-1, keepdim=True),
                              p.sum(-1, keepdim=True).abs())
    return 2 * EPS[dy_dtype] * ref_dy.abs() + TINY[dy_dtype] + 1e-12 * row_scale


def assert_kl_within(values, target, indices, loss, dy, ref_loss, ref_dy, what: str) -> None:
    """lig's KL step (each row in double, rounded once): the loss and every dy element within
    their bounds of the float64 reference, dy exactly 0 on the slots that do not count."""
    bound = kl_loss_bound(ref_loss, kl_abs_loss(values, target, indices))
    assert abs(loss.item() - ref_loss.item()) <= bound, f"{what}: loss {loss.item()!r}, reference " \
                                                        f"{ref_loss.item()!r}, bound {bound:.3g}"
    assert_within(dy, ref_dy, kl_dy_bound(values, target, indices, ref_dy, dy.dtype), f"{what}: dy")
    assert torch.all(dy[~_kl_counted(values, indices)] == 0), f"{what}: dy must be 0 on slots that do not count"


def kl_values_grad_bound(values, target, indices, a, dy, dy_bound, g, g_bound, ref, out_dtype) -> torch.Tensor:
    """The gradient reaching the values, grad = a * dy + mass * s * (g - sum_i g_i s_i) (lig's _dy_vjp
    in fp32 torch ops; g is the gradient arriving at dy, a at the loss), against its float64 value.

    The fp32 softmax s_j = exp(v_j - m) / z: the subtraction, exp and division put about
    (|v_j - m| + 3) 2^-24 on s_j's relative error, z adds its terms' worst and K - 1 additions; the
    products and sums of the formula add about 2K + 6 more, so n = 2 max|v - m| + 2K + 12 per row,
    over abs = |a dy| + mass s (|g| + sum_i |g_i| s_i). Inputs with their own error add it
    propagated: |a| dy_bound (lig's dy) and mass s (g_bound + sum_i g_bound_i s_i); an exp that
    underflows adds its subnormal spacing 2^-149, times the factors it meets; then one rounding
    to out_dtype."""
    counted = _kl_counted(values, indices)
    f64 = torch.float64
    zero = torch.zeros((), dtype=f64)
    v = torch.where(counted, values.double(), torch.tensor(float("-inf"), dtype=f64))
    has = counted.any(-1, keepdim=True)
    s = torch.where(counted, torch.softmax(torch.where(has, v, 0.0), -1), zero)
    p = torch.where(counted, target.double(), zero)
    mass = p.sum(-1, keepdim=True)
    m = torch.where(has, v.amax(-1, keepdim=True), 0.0)
    spread = torch.where(counted, v - m, zero).abs().amax(-1, keepdim=True) if v.shape[-1] else mass * 0
    n = 2 * spread + 2 * v.shape[-1] + 12
    ga = torch.where(counted, g.double().abs(), zero)
    gb = torch.where(counted, torch.as_tensor(g_bound, dtype=f64).expand(ga.shape), zero)
    dya = torch.where(counted, dy.double().abs(), zero)
    abs_sum = abs(a) * dya + mass * s * (ga + (ga * s).sum(-1, keepdim=True))
    inherited = abs(a) * dy_bound + mass * s * (gb + (gb * s).sum(-1, keepdim=True))
    underflow = 4 * TINY[torch.float32] * (1 + mass * (ga + ga.sum(-1, keepdim=True)) + abs(a))
    bound = EPS[out_dtype] * ref.abs() + accumulated(n, abs_sum) + inherited + underflow + TINY[out_dtype]
    return torch.where(counted, bound, zero)
