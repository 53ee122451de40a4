"""lig.sparse_indexer_kl_loss (docs/contract.md 2.5) against a float64 reference written here: the
main attention's probabilities P from its softmax statistics, the target (head_mean or l1), the
indexer's scores and their softmax over the counted slots, the KL loss with 0 log 0 = 0, all in
float64 torch, and the gradients of query_index, key_index and weights by float64 autograd of that
loss (nobody's hand-written derivative).

The bound. lig computes in fp32 what the reference computes in float64; the comparison allows, per
element, the first-order propagation of fp32's roundings (Higham 3.1), doubled:
- the exponent of P[h,j] (scale * S - m - log z) is off by at most
  eps_S = 2^-24 (C_ACC (Dm + Dr) scale sum_d |q_d k_d| + 2 |a| + |a - m| + 4 + C_ACC N1): the
  score's fp32 sum, the roundings of scale * S and of the subtraction, expf and the division, and
  the fp32 sum of the slot's mass over the heads; P's relative error is that much;
- the indexer's score I[j] is off by at most C_ACC (D + G) 2^-24 sum_h |w| sum_d |qi_d ki_d| (the
  forward's bound, _tol.score_steps);
- loss: sum |d loss / d exponent| eps_S + sum |d loss / d I| eps_I (both derivatives by float64
  autograd), plus the final rounding 2^-24 |loss| and the double parts' 1e-12;
- dI = y sum(p) - p: its error follows from p's and y's (softmax: relative eps_I + sum_i y_i
  eps_I_i), plus its rounding to fp32;
- the gradients: _tol.reference_grad_bounds' accumulation bound of lig's backward for dy = dI, plus
  sum |w| |dI error| |k| (the same sums of |products| with dy = the dI bound), then one rounding
  into the output dtype.
A wrong formula (a missing 1/N1, y - p for the gradient, a slot counted twice or not at all) is off
by far more than this; the tests also check that the gradients are not trivially small.
"""
import dataclasses
import math
import shutil
import zlib
from typing import List, Optional

import pytest
import torch

import lig
from _reference import INT64_MAX, as_rows, counted_mask, geometry, sparse_scores, visible
from _tol import C_ACC, U32, accumulated, assert_within, element_bound, reference_grad_bounds, score_steps
from test_kernel_sets import forced

SETS = lig.kernel_sets()
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
F64 = torch.float64
GARBAGE_INDEX = 123456789  # in rows outside the valid lengths: never read


@dataclasses.dataclass
class Problem:
    layout: str
    qi: torch.Tensor
    ki: torch.Tensor
    w: torch.Tensor
    idx: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    qr: Optional[torch.Tensor]
    kr: Optional[torch.Tensor]
    smax: torch.Tensor
    ssum: torch.Tensor
    lse: torch.Tensor
    scale: float
    aq: Optional[List[int]]
    ak: Optional[List[int]]
    mode: int = 3
    pre: int = INT64_MAX
    nxt: int = INT64_MAX

    def args(self, with_lse=False):
        """The positional arguments of lig.sparse_indexer_kl_loss, up to and including scale."""
        if with_lse:
            return (self.qi, self.ki, self.w, self.idx, self.q, self.k, None, None, self.scale)
        return (self.qi, self.ki, self.w, self.idx, self.q, self.k, self.smax, self.ssum, self.scale)

    def kwargs(self, with_lse=False, **more):
        kw = dict(query_rope=self.qr, key_rope=self.kr, layout=self.layout, sparse_mode=self.mode,
                  actual_seq_lengths_query=self.aq, actual_seq_lengths_key=self.ak, pre_tokens=self.pre,
                  next_tokens=self.nxt)
        if with_lse:
            kw["softmax_lse"] = self.lse
        kw.update(more)
        return kw

    def op_args(self, target="head_mean", deterministic=True, with_lse=False):
        """The arguments of torch.ops.lig.sparse_indexer_kl_loss (the C operator's order)."""
        lengths = [None if a is None else torch.tensor(a, dtype=torch.int64) for a in (self.aq, self.ak)]
        stats = (None, None, self.lse) if with_lse else (self.smax, self.ssum, None)
        return (self.q, self.k, self.qi, self.ki, self.w, self.idx, *stats, self.qr, self.kr, *lengths, self.scale,
                self.layout, self.mode, self.pre, self.nxt, target, deterministic)

    def leaves(self):
        """Copies of query_index, key_index, weights that require grad."""
        return [t.detach().clone().requires_grad_(True) for t in (self.qi, self.ki, self.w)]


def _fp32(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32))


def _main_scores(p: Problem, rows_keys, rows=slice(None)):
    """float64 S = query . key + rope, and sum_d |query_d key_d| (+ rope), [R, ..., N1], of the
    (flattened) query rows `rows` with the key rows `rows_keys` [R, ...]."""
    N1, Dm = p.q.shape[-2], p.q.shape[-1]
    mq = p.q.double().reshape(-1, N1, Dm)[rows]
    mk = p.k.double().reshape(-1, Dm)
    extra = "".join("abc"[: rows_keys.dim() - 1])
    S = torch.einsum(f"rhd,r{extra}d->r{extra}h", mq, mk[rows_keys])
    A = torch.einsum(f"rhd,r{extra}d->r{extra}h", mq.abs(), mk.abs()[rows_keys])
    if p.qr is not None:
        Dr = p.qr.shape[-1]
        qr, kr = p.qr.double().reshape(-1, N1, Dr)[rows], p.kr.double().reshape(-1, Dr)
        S = S + torch.einsum(f"rhd,r{extra}d->r{extra}h", qr, kr[rows_keys])
        A = A + torch.einsum(f"rhd,r{extra}d->r{extra}h", qr.abs(), kr.abs()[rows_keys])
    return S, A


def make_problem(seed, dtype, layout="BSND", stats="sparse", B=2, S1=9, S2=11, N1=8, Dm=24, Dr=8, Ni=4, N2i=1,
                 D=16, K=10, lengths=True, index_dtype=torch.int32, mode=3, pre=INT64_MAX, nxt=INT64_MAX) -> Problem:
    """Gaussian data; indices with -1 padding, duplicates, masked (invisible) keys and garbage in
    invalid rows; the statistics of the main attention over the counted slots ("sparse", N2i = 1)
    or over every visible key ("dense"), rounded to fp32 as an attention kernel writes them."""
    gen = torch.Generator().manual_seed(seed)
    if layout == "BSND":
        aq = [int(torch.randint(0, S1 + 1, (), generator=gen)) for _ in range(B)] if lengths else None
        ak = [int(torch.randint(0, S2 + 1, (), generator=gen)) for _ in range(B)] if lengths else None
        if lengths:
            aq[0], ak[0] = S1, S2  # one full batch
        lead_q, lead_k = (B, S1), (B, S2)
    else:
        qlen = [int(torch.randint(0, S1 + 1, (), generator=gen)) for _ in range(B)]
        klen = [int(torch.randint(0, S2 + 1, (), generator=gen)) for _ in range(B)]
        qlen[0], klen[0] = S1, S2
        aq = [sum(qlen[: b + 1]) for b in range(B)]
        ak = [sum(klen[: b + 1]) for b in range(B)]
        lead_q, lead_k = (aq[-1] + 2,), (ak[-1] + 1,)  # rows past the last end: invalid
    randn = lambda *shape: torch.randn(*shape, generator=gen)  # noqa: E731
    qi = randn(*lead_q, Ni, D).to(dtype)
    ki = randn(*lead_k, N2i, D).to(dtype)
    w = (randn(*lead_q, Ni) / 4).to(dtype)
    q = (2 * randn(*lead_q, N1, Dm)).to(dtype)
    k = randn(*lead_k, 1, Dm).to(dtype)
    qr = (2 * randn(*lead_q, N1, Dr)).to(dtype) if Dr else None
    kr = randn(*lead_k, 1, Dr).to(dtype) if Dr else None
    scale = 1.0 / math.sqrt(Dm + Dr)

    geo = geometry(layout, qi.shape, ki.shape, aq, ak)
    R = geo.rows
    idx = torch.full((R, N2i, K), -1, dtype=torch.int64)
    for r in range(R):
        if not geo.valid[r]:
            idx[r] = GARBAGE_INDEX
            continue
        lk = int(geo.Lk[r])
        s = torch.arange(lk)
        vis = visible(int(geo.t[r]), int(geo.Lq[r]), lk, s, mode, pre, nxt)
        seen, hidden = s[vis], s[~vis]
        for g in range(N2i):
            for j in range(K):
                u = float(torch.rand((), generator=gen))
                if seen.numel() == 0 or u < 0.15:
                    continue  # padding
                if u < 0.25 and hidden.numel():
                    idx[r, g, j] = hidden[torch.randint(0, hidden.numel(), (), generator=gen)]  # masked
                elif u < 0.4 and j > 0 and idx[r, g, j - 1] >= 0:
                    idx[r, g, j] = idx[r, g, j - 1]  # duplicate
                else:
                    idx[r, g, j] = seen[torch.randint(0, seen.numel(), (), generator=gen)]
    slots_shape = lead_q + ((K,) if N2i == 1 else (N2i, K))
    p = Problem(layout, qi, ki, w, idx.reshape(slots_shape).to(index_dtype), q, k, qr, kr, None, None, None, scale,
                aq, ak, mode, pre, nxt)

    # the main attention's statistics, in float64 from the rounded inputs, then rounded to fp32
    scale32 = _fp32(scale)
    m = torch.zeros(R, N1, dtype=F64)
    z = torch.ones(R, N1, dtype=F64)
    counted = counted_mask(geo, idx, mode, pre, nxt)
    for r in range(R):
        if not geo.valid[r]:
            continue
        lk, off = int(geo.Lk[r]), int(geo.key_offset[r])
        if stats == "dense":
            s = torch.arange(lk)
            keys = s[visible(int(geo.t[r]), int(geo.Lq[r]), lk, s, mode, pre, nxt)]
        else:
            assert stats == "sparse" and N2i == 1, "sparse statistics: one index key head"
            keys = idx[r, 0][counted[r, 0]]  # every counted slot, a duplicate once per slot
        if keys.numel() == 0:
            continue
        S, _ = _main_scores(p, (keys + off).view(1, -1), rows=slice(r, r + 1))
        a = scale32 * S[0]  # [n, N1]
        m[r] = a.amax(0)
        z[r] = torch.exp(a - m[r]).sum(0)
    stat_shape = (B, 1, lead_q[1], N1) if layout == "BSND" else (1, lead_q[0], N1)
    p.smax = m.float().reshape(stat_shape)
    p.ssum = z.float().reshape(stat_shape)
    p.lse = (m + torch.log(z)).float().reshape(stat_shape)
    return p


@dataclasses.dataclass
class Reference:
    loss: torch.Tensor
    grads: list  # d query_index, d key_index, d weights (float64)
    dI: torch.Tensor
    loss_bound: float
    dI_bound: torch.Tensor


def reference(p: Problem, target: str, with_lse=False) -> Reference:
    """The float64 loss of contract 2.5, its gradients by autograd, and the bounds of the module's
    docstring."""
    n2 = p.ki.shape[-2]
    N1, Dm = p.q.shape[-2], p.q.shape[-1]
    Dr = p.qr.shape[-1] if p.qr is not None else 0
    geo = geometry(p.layout, p.qi.shape, p.ki.shape, p.aq, p.ak)
    leaves = [t.detach().double().requires_grad_(True) for t in (p.qi, p.ki, p.w)]
    q_r, k_r, w_r, idx_r = as_rows(p.layout, *leaves, p.idx, n2)
    R, K = idx_r.shape[0], idx_r.shape[-1]
    counted = counted_mask(geo, idx_r, p.mode, p.pre, p.nxt)  # [R,N2,K]
    zero = torch.zeros((), dtype=F64)

    # the indexer: I, with a zero perturbation whose gradient is dI
    e_I = torch.zeros(R, n2, K, dtype=F64, requires_grad=True)
    I = sparse_scores(q_r, k_r, w_r, idx_r, counted, geo.key_offset) + e_I
    has = counted.any(-1, keepdim=True)
    logits = torch.where(counted, I, torch.where(has, float("-inf"), 0.0))
    logy = torch.log_softmax(logits, -1)

    # the teacher: P[h,j] at every counted slot, with a zero perturbation of its exponent
    rows = torch.where(counted, idx_r.to(torch.int64) + geo.key_offset.view(-1, 1, 1), 0).clamp(0, max(
        p.k.reshape(-1, Dm).shape[0] - 1, 0))
    S, A = _main_scores(p, rows)  # [R,N2,K,N1]
    scale32 = _fp32(p.scale)
    a = scale32 * S
    view = lambda t: t.double().reshape(R, 1, 1, N1)  # noqa: E731
    if with_lse:
        shift, logz = view(p.lse), zero
    else:
        shift, logz = view(p.smax), torch.log(view(p.ssum))
    e_S = torch.zeros(R, n2, K, N1, dtype=F64, requires_grad=True)
    expo = torch.where(counted.unsqueeze(-1), a - shift - logz + e_S, float("-inf"))
    Q = torch.exp(expo).sum(-1)  # [R,N2,K], 0 where not counted
    if target == "head_mean":
        pt = Q / N1 if N1 else Q * 0
    else:
        T = Q.sum(-1, keepdim=True)
        pt = torch.where(T > 0, Q / torch.where(T > 0, T, 1.0), zero)
    pos = counted & (pt > 0)
    terms = torch.where(pos, pt * (torch.log(torch.where(pos, pt, 1.0)) - torch.where(pos, logy, 0.0)), zero)
    loss = terms.sum()
    g = torch.autograd.grad(loss, leaves + [e_I, e_S], allow_unused=True)
    grads = [gi if gi is not None else torch.zeros_like(t) for gi, t in zip(g[:3], leaves)]
    dI = g[3] if g[3] is not None else torch.zeros(R, n2, K, dtype=F64)
    dS = g[4] if g[4] is not None else torch.zeros(R, n2, K, N1, dtype=F64)

    # error bounds (module docstring)
    cnt4 = counted.unsqueeze(-1)
    eps_S = U32 * (C_ACC * (Dm + Dr) * scale32 * A + 2 * a.abs() + (a - shift).abs() + 4 + C_ACC * N1)
    eps_S = torch.where(cnt4, eps_S, zero)
    G = p.qi.shape[-2] // n2
    abs_I = sparse_scores(q_r.detach().abs(), k_r.detach().abs(), w_r.detach().abs(), idx_r, counted,
                          geo.key_offset, act=lambda s: s)
    eps_I = torch.where(counted, accumulated(score_steps(p.qi.shape[-1], G), abs_I), zero)
    loss = loss.detach()
    loss_bound = 2 * float((dS.abs() * eps_S).sum() + (dI.abs() * eps_I).sum()) + 2 * U32 * abs(float(loss)) \
        + 1e-12 * float(terms.detach().abs().sum()) + 1e-30
    with torch.no_grad():
        P = torch.exp(expo)
        dQ = (P * eps_S).sum(-1)
        if target == "head_mean":
            dp = dQ / max(N1, 1)
        else:
            T = Q.sum(-1, keepdim=True)
            safe = torch.where(T > 0, T, 1.0)
            dp = torch.where(T > 0, dQ / safe + Q * dQ.sum(-1, keepdim=True) / safe**2, zero)
        y = torch.where(counted, logy.exp(), zero)
        M, dM = pt.sum(-1, keepdim=True), dp.sum(-1, keepdim=True)
        dy = y * (eps_I + (y * eps_I).sum(-1, keepdim=True))
        dI_bound = torch.where(counted, 2 * (dy * M + y * dM + dp) + U32 * dI.abs(), zero)
    return Reference(loss.detach(), grads, dI, loss_bound, dI_bound)


def assert_matches(p: Problem, target: str, loss, grads, what: str, with_lse=False) -> Reference:
    """lig's loss and gradients (d query_index, d key_index, d weights) against the reference."""
    ref = reference(p, target, with_lse)
    assert loss.dtype == torch.float32 and loss.shape == (), f"{what}: loss {loss.dtype} {tuple(loss.shape)}"
    err = abs(float(loss) - float(ref.loss))
    assert err <= ref.loss_bound, f"{what}: loss {float(loss)!r}, reference {float(ref.loss)!r}, error {err:.3g}, " \
                                  f"bound {ref.loss_bound:.3g}"
    args = (p.layout, p.qi, p.ki, None, p.idx, p.w, p.aq, p.ak, p.mode, p.pre, p.nxt)

    def bounds(dy):
        a = list(args)
        a[3] = dy
        return reference_grad_bounds(*a)

    acc = bounds(ref.dI)
    prop = bounds(ref.dI_bound)
    for name, out, want, (_, abs_sum, n), (_, abs_prop, _) in zip(("d_query_index", "d_key_index", "d_weights"),
                                                                     grads, ref.grads, acc, prop):
        assert out is not None and out.dtype == p.qi.dtype and out.shape == want.shape, f"{what} {name}"
        bound = element_bound(out.dtype, want, n, abs_sum) + 2 * abs_prop
        assert_within(out, want, bound, f"{what} {name}", abs_sum + abs_prop)
    return ref


def lig_loss_and_grads(p: Problem, target="head_mean", with_lse=False, scale_by=1.0, **kw):
    """lig's loss, and the gradients autograd's backward gives query_index, key_index, weights."""
    qi, ki, w = p.leaves()
    loss = lig.sparse_indexer_kl_loss(qi, ki, w, *p.args(with_lse)[3:], **p.kwargs(with_lse, target=target, **kw))
    (loss * scale_by).backward()
    return loss.detach(), [qi.grad, ki.grad, w.grad]


# ---- against the reference ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("stats", ["sparse", "dense"])
@pytest.mark.parametrize("target", ["head_mean", "l1"])
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_matches_float64_reference(layout, target, stats, dtype):
    """Both layouts with sequence lengths, both targets, statistics from sparse and from dense
    attention, every dtype; indices with -1 padding, duplicates, masked keys, garbage in invalid rows."""
    seed = zlib.crc32(f"{layout} {target} {stats} {dtype}".encode()) % 1000
    p = make_problem(seed, dtype, layout=layout, stats=stats, index_dtype=torch.int64 if seed % 2 else torch.int32)
    loss, grads = lig_loss_and_grads(p, target)
    ref = assert_matches(p, target, loss, grads, f"{layout} {target} {stats} {dtype}")
    # the problem exercises the loss: a loss and gradients far from trivial
    assert float(ref.loss) > 0.05 and ref.grads[0].abs().max() > 1e-2 and ref.grads[2].abs().max() > 1e-2


def test_padding_duplicates_and_masked_keys_count_as_the_contract_says():
    """The slots the reference counts are the contract's: a duplicate counts once per slot, -1 and a
    masked key not at all. Counting them otherwise changes the loss by far more than its bound."""
    p = make_problem(7, torch.float32, stats="dense", lengths=False)
    idx = p.idx.to(torch.int64)
    assert (idx == -1).any(), "padding"
    assert (idx[..., 1:] == idx[..., :-1]).logical_and(idx[..., 1:] >= 0).any(), "duplicates"
    geo = geometry(p.layout, p.qi.shape, p.ki.shape, p.aq, p.ak)
    idx_r = idx.reshape(geo.rows, 1, -1)
    masked = (idx_r >= 0) & ~counted_mask(geo, idx_r, p.mode, p.pre, p.nxt)
    assert masked.any(), "masked keys"
    loss, grads = lig_loss_and_grads(p)
    ref = assert_matches(p, "head_mean", loss, grads, "contract slots")
    # dedupe the duplicates (later copies to -1): another loss, outside the bound
    dedup = idx.clone()
    dedup[..., 1:][(idx[..., 1:] == idx[..., :-1]) & (idx[..., 1:] >= 0)] = -1
    q2 = dataclasses.replace(p, idx=dedup.to(p.idx.dtype))
    other = reference(q2, "head_mean")
    assert abs(float(other.loss) - float(ref.loss)) > 100 * ref.loss_bound


def test_targets_agree_with_sparse_statistics_and_differ_with_dense():
    """Statistics over the same slots: sum p = 1 (up to the statistics' fp32 rounding), so the two
    targets give the same loss; dense statistics leave mass elsewhere and they differ."""
    p = make_problem(11, torch.float32, stats="sparse")
    a, _ = lig_loss_and_grads(p, "head_mean")
    b, _ = lig_loss_and_grads(p, "l1")
    assert abs(float(a) - float(b)) <= 1e-4 * abs(float(a))
    p = make_problem(11, torch.float32, stats="dense")
    a, _ = lig_loss_and_grads(p, "head_mean")
    b, _ = lig_loss_and_grads(p, "l1")
    assert abs(float(a) - float(b)) > 1e-2 * abs(float(a))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_softmax_lse_path(dtype):
    """softmax_lse instead of softmax_max / softmax_sum (which are then None): the reference with
    the lse, and the same loss as the max / sum path up to both bounds."""
    p = make_problem(21, dtype, stats="dense", layout="TND")
    loss, grads = lig_loss_and_grads(p, "l1", with_lse=True)
    ref = assert_matches(p, "l1", loss, grads, f"lse {dtype}", with_lse=True)
    loss2, _ = lig_loss_and_grads(p, "l1")
    ref2 = reference(p, "l1")
    assert abs(float(loss) - float(loss2)) <= ref.loss_bound + ref2.loss_bound + abs(float(ref.loss - ref2.loss))


def test_without_rope_several_index_key_heads_and_the_band():
    """No rope tensors; Nidx2 = 2 index key heads (G = 2); sparse_mode 0 with a token band."""
    p = make_problem(31, torch.bfloat16, stats="dense", Dr=0, Ni=4, N2i=2, mode=0, pre=3, nxt=1, lengths=False)
    assert p.qr is None and p.idx.dim() == 4
    for target in ("head_mean", "l1"):
        loss, grads = lig_loss_and_grads(p, target)
        assert_matches(p, target, loss, grads, f"band {target}")


def test_units_without_counted_slots_add_nothing():
    """Every slot padding (or in invalid rows): loss 0 and every gradient exactly 0."""
    p = make_problem(41, torch.float32, stats="dense")
    p.idx.fill_(-1)
    loss, grads = lig_loss_and_grads(p)
    assert float(loss) == 0.0 and all(bool((g == 0).all()) for g in grads)


def test_backward_scales_the_gradients_of_the_one_call():
    """The gradients are the C call's, scaled by the incoming gradient: times 1 they are the op's
    outputs bit for bit, times 2 exactly twice those, times 0.3 each rounded once from fp32."""
    for dtype in DTYPES:
        p = make_problem(51, dtype, stats="sparse")
        loss, d_qi, d_ki, d_w32 = torch.ops.lig.sparse_indexer_kl_loss(*p.op_args())
        assert d_w32.dtype == torch.float32
        outs = (d_qi, d_ki, d_w32.to(dtype))
        loss1, g1 = lig_loss_and_grads(p)
        assert torch.equal(loss1, loss)
        for a, b in zip(g1, outs):
            assert torch.equal(a, b)
        _, g2 = lig_loss_and_grads(p, scale_by=2.0)
        for a, b in zip(g2, outs):
            assert torch.equal(a, 2 * b)
        _, g3 = lig_loss_and_grads(p, scale_by=0.3)
        for a, b in zip(g3, (d_qi, d_ki, d_w32)):
            assert torch.equal(a, (b.float() * torch.tensor(0.3)).to(dtype))


# ---- kernel sets, determinism -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", SETS)
def test_every_kernel_set_matches_float64_reference(name, dtype):
    """Each kernel set this CPU has, at a head shape wider than the kernels' tiles."""
    p = make_problem(61, dtype, stats="sparse", N1=16, Dm=64, Dr=16, Ni=8, D=32, K=40, S1=20, S2=48)
    with forced(name):
        for target in ("head_mean", "l1"):
            loss, grads = lig_loss_and_grads(p, target)
            assert_matches(p, target, loss, grads, f"{name} {dtype} {target}")


def _bits(t):
    return t.view(torch.int16) if t.dtype in (torch.bfloat16, torch.float16) else t


@pytest.mark.parametrize("name", SETS)
def test_deterministic_is_bitwise_across_runs_and_thread_counts(name):
    """deterministic=True: the loss and the three gradients, the same bits for 1, 2, 3 threads and
    run after run, per kernel set. (About 40 MFLOP: several threads' worth even at the library's
    default threshold of 4 MFLOP a thread; the suite runs with LIG_MIN_FLOPS_PER_THREAD=0 anyway.)"""
    for dtype in (torch.bfloat16, torch.float32):
        p = make_problem(71, dtype, stats="dense", N1=32, Dm=128, Dr=32, N2i=2, Ni=4, S1=24, S2=40, K=32,
                         lengths=False)
        results = []
        try:
            with forced(name):
                for threads in (1, 2, 3, 2, 1):
                    lig.set_num_threads(threads)
                    results.append(torch.ops.lig.sparse_indexer_kl_loss(*p.op_args(deterministic=True)))
        finally:
            lig.set_num_threads(0)
        for r in results[1:]:
            for a, b in zip(results[0], r):
                assert torch.equal(_bits(a), _bits(b)), f"{name} {dtype}"
        # deterministic=False sums d_key_index in another order only: the loss and the other two are the same
        with forced(name):
            other = torch.ops.lig.sparse_indexer_kl_loss(*p.op_args(deterministic=False))
        for i in (0, 1, 3):
            assert torch.equal(_bits(other[i]), _bits(results[0][i]))


# ---- autograd and torch.compile ------------------------------------------------------------------


@pytest.mark.parametrize("which", ["query", "key", "query_rope", "key_rope", "softmax_max", "softmax_sum",
                                   "softmax_lse"])
def test_main_attention_requiring_grad_is_refused_by_name(which):
    p = make_problem(81, torch.float32)
    with_lse = which == "softmax_lse"
    qi, ki, w = p.leaves()
    args = list(p.args(with_lse))
    kw = p.kwargs(with_lse)
    named = {"query": 4, "key": 5, "softmax_max": 6, "softmax_sum": 7}
    if which in named:
        args[named[which]] = args[named[which]].clone().requires_grad_(True)
    else:
        kw[which] = kw[which].clone().requires_grad_(True)
    args[:3] = qi, ki, w
    with pytest.raises(RuntimeError, match=rf"lig.sparse_indexer_kl_loss: {which} requires grad.*detach"):
        lig.sparse_indexer_kl_loss(*args, **kw)
    assert qi.grad is None
    with torch.no_grad():  # nothing to differentiate: no refusal
        lig.sparse_indexer_kl_loss(*args, **kw)


def test_several_main_tensors_requiring_grad_are_all_named():
    p = make_problem(82, torch.float32)
    q, k = p.q.clone().requires_grad_(True), p.k.clone().requires_grad_(True)
    with pytest.raises(RuntimeError, match="query, key require grad"):
        lig.sparse_indexer_kl_loss(p.qi, p.ki, p.w, p.idx, q, k, p.smax, p.ssum, p.scale, **p.kwargs())
    # the op itself, called directly, refuses in its backward
    args = list(p.op_args())
    args[2] = p.qi.clone().requires_grad_(True)
    args[0] = q
    loss = torch.ops.lig.sparse_indexer_kl_loss(*args)[0]
    with pytest.raises(RuntimeError, match="query requires grad"):
        loss.backward()


def test_no_second_derivative():
    """The gradients are not differentiable again: a double backward raises rather than giving 0."""
    p = make_problem(83, torch.float32)
    qi, ki, w = p.leaves()
    loss = lig.sparse_indexer_kl_loss(qi, ki, w, *p.args()[3:], **p.kwargs())
    (g,) = torch.autograd.grad(loss, qi, create_graph=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        g.sum().backward()
    # a gradient reaching the op's gradient outputs is refused too (only the op returns them)
    args = list(p.op_args())
    args[2] = p.qi.clone().requires_grad_(True)
    outs = torch.ops.lig.sparse_indexer_kl_loss(*args)
    with pytest.raises(RuntimeError, match="no second-order derivative"):
        (outs[0] + outs[1].sum()).backward()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph(backend):
    if backend == "inductor" and not (shutil.which("g++") or shutil.which("c++")):
        pytest.skip("inductor needs a C++ compiler")
    torch._dynamo.reset()
    p = make_problem(91, torch.float32, stats="dense")
    rest, kw = p.args()[3:], p.kwargs(target="l1")

    def step(qi, ki, w):
        return 2.0 * lig.sparse_indexer_kl_loss(qi, ki, w, *rest, **kw) + 0.5 * (w * w).sum()

    compiled = torch.compile(step, fullgraph=True, backend=backend)
    results = []
    for fn in (step, compiled):
        qi, ki, w = p.leaves()
        out = fn(qi, ki, w)
        out.backward()
        results.append((out.detach(), qi.grad, ki.grad, w.grad))
    for e, g in zip(*results):
        if backend == "aot_eager":
            assert torch.equal(e, g)
        else:  # inductor may fuse the torch ops around lig's call (w * w): roundings
            torch.testing.assert_close(g, e, rtol=1e-6, atol=1e-7)


def test_opcheck():
    """Schema, fake-tensor and autograd-registration checks of both ops."""
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    p = make_problem(92, torch.float32)
    args = list(p.op_args())
    args[2] = p.qi.clone().requires_grad_(True)
    torch.library.opcheck(torch.ops.lig.sparse_indexer_kl_loss.default, tuple(args), test_utils=utils)
    torch.library.opcheck(torch.ops.lig.sparse_indexer_kl_loss.default, tuple(p.op_args("l1", with_lse=True)),
                          test_utils=utils)
    _, dq, dk, dw = torch.ops.lig.sparse_indexer_kl_loss(*p.op_args())
    torch.library.opcheck(torch.ops.lig.sparse_indexer_kl_loss_backward.default,
                          (torch.tensor(1.5), dq, dk, dw, None, torch.zeros_like(dk), None), test_utils=utils)


# ---- errors ---------------------------------------------------------------------------------------


def _edit(p: Problem, **changes):
    """lig.sparse_indexer_kl_loss's keyword arguments for p, with `changes` applied."""
    kw = dict(query_index=p.qi, key_index=p.ki, weights=p.w, sparse_indices=p.idx, query=p.q, key=p.k,
              softmax_max=p.smax, softmax_sum=p.ssum, scale=p.scale, **p.kwargs())
    kw.update(changes)
    return kw


# (changes, exception, pattern): refused in Python, before any output is allocated
PYTHON_ERRORS = [
    (dict(query_index=None), TypeError, "query_index: expected a torch.Tensor"),
    (dict(weights=torch.zeros(2, 9, 4, dtype=torch.float64)), TypeError, "weights: expected dtype float32, float16"),
    (dict(sparse_indices=torch.zeros(2, 9, 10)), TypeError, "sparse_indices: expected dtype int32 or int64"),
    (dict(softmax_max=torch.zeros(2, 1, 9, 8, dtype=torch.float16)), TypeError, "softmax_max: expected dtype float32"),
    (dict(softmax_sum=None), lig.LigValueError, "softmax_sum: expected a tensor \\(or softmax_lse instead\\)"),
    (dict(softmax_max=None, softmax_sum=None), lig.LigValueError, "softmax_max: expected a tensor"),
    (dict(softmax_lse="lse"), lig.LigValueError, "softmax_max: expected None when softmax_lse is given"),
    (dict(key_rope=None), lig.LigValueError, "key_rope: expected a tensor \\(query_rope is given"),
    (dict(query_rope=None), lig.LigValueError, "query_rope: expected a tensor \\(key_rope is given"),
    (dict(layout="SBH"), lig.LigValueError, 'layout: expected "BSND" or "TND"'),
    (dict(layout="TND"), lig.LigValueError, "query_index: expected rank 3"),
    (dict(key_index=torch.zeros(1, 11, 1, 16)), lig.LigValueError,
     "key_index: expected shape \\[2,11,1,16\\] \\(batch and D like query_index\\)"),
    (dict(key_index=torch.zeros(2, 11, 3, 16)), lig.LigValueError, "key_index: expected a head count N2 that divides"),
    (dict(key_index=torch.zeros(2, 11, 1, 16, dtype=torch.bfloat16)), lig.LigValueError,
     "key_index: expected dtype float32 \\(like query_index\\), got bfloat16"),
    (dict(weights=torch.zeros(2, 9, 3)), lig.LigValueError, "weights: expected shape \\[2,9,4\\]"),
    (dict(target="kl"), lig.LigValueError, 'target: expected "head_mean" or "l1", got "kl"'),
    (dict(target=1), TypeError, "target: expected a str"),
    (dict(scale=True), TypeError, "scale: expected a float"),
    (dict(scale="0.1"), TypeError, "scale: expected a float"),
    (dict(sparse_mode=3.0), TypeError, "sparse_mode: expected an int"),
    (dict(deterministic=1), TypeError, "deterministic: expected a bool"),
    (dict(actual_seq_lengths_key=[9, 2.5]), TypeError, "actual_seq_lengths_key\\[1\\]: expected an int"),
]


@pytest.mark.parametrize("changes,exc,pattern", PYTHON_ERRORS, ids=[p[2][:40] for p in PYTHON_ERRORS])
def test_argument_errors_are_named_before_any_allocation(no_allocation, changes, exc, pattern):
    p = make_problem(101, torch.float32)
    if changes.get("softmax_lse") == "lse":
        changes = dict(softmax_lse=p.lse)
    no_allocation.clear()
    with pytest.raises(exc, match=pattern) as e:
        lig.sparse_indexer_kl_loss(**_edit(p, **changes))
    assert no_allocation == [], "an output was allocated before the error"
    if isinstance(e.value, lig.LigError):
        assert e.value.status in (lig.LIG_ERR_PARAM_INVALID, lig.LIG_ERR_PARAM_NULLPTR)


def _library_errors(p: Problem):
    """(changes, pattern): arguments the library refuses (LIG_ERR_PARAM_INVALID), by name."""
    B, S1, N1 = p.q.shape[0], p.q.shape[1], p.q.shape[2]
    bad_idx = p.idx.clone()
    bad_idx[0, 0, 0] = p.ki.shape[1]  # past the keys of a valid row: phase 2
    return [
        (dict(key=torch.zeros(B, p.k.shape[1], 2, p.k.shape[3])), "key: "),
        (dict(query=p.q.to(torch.bfloat16)), "query: expected dtype FLOAT32"),
        (dict(query_rope=p.qr[:, :, :4].contiguous()), "query_rope: "),
        (dict(softmax_sum=torch.ones(B, 1, S1, N1 + 1)), "softmax_sum: "),
        (dict(scale=float("inf")), "scale: expected a finite value"),
        (dict(scale=1e300), "scale: expected a finite value"),
        (dict(sparse_mode=1), "sparse_mode"),
        (dict(pre_tokens=-1), "pre_tokens"),
        (dict(actual_seq_lengths_query=[S1 + 1, 0]), "actual_seq_lengths_query"),
        (dict(sparse_indices=bad_idx), "sparse_indices"),
    ]


def test_library_errors_are_named_and_nothing_is_returned():
    p = make_problem(102, torch.float32, lengths=False)
    for changes, pattern in _library_errors(p):
        result = None
        with pytest.raises(lig.LigValueError, match=pattern) as e:
            result = lig.sparse_indexer_kl_loss(**_edit(p, **changes))
        assert result is None
        assert e.value.status == lig.LIG_ERR_PARAM_INVALID, (pattern, str(e.value))
        assert "lig_sparse_indexer_grad_kl_loss" in str(e.value)
