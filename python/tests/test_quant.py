"""The quantized forward's Python side (docs/contract.md 2.4, docs/inference.md): lig.quant_lightning_indexer,
lig.fp8_paged_mqa_topk, lig.act_quant and lig.indexer_k_quant_and_cache.

Everything is compared with float64 references written here, never with lig's own code path:
- the scores: decode the codes to float64, dot, times the key and query scales, ReLU, times the
  weights, summed over the heads of a key head; the top-k by descending score with ties to the
  lower key (a stable sort). lig computes in fp32, within contract 2.4's bound
  |I - I_exact| <= 2 (D + G + 4) 2^-24 sum |w sq sk q_d k_d|, so index sets are compared exactly
  wherever the reference's scores around the cut differ by more than that bound, and everywhere
  no key that scores clearly better than a selected one may be left out;
- the quantizers: amax, the fp32 scale (DeepSeek's product with fp32(1/448), vLLM's quotient by
  448; "ue8m0" the next power of two by frexp), the fp32 quotient and the round to nearest even
  onto e4m3's grid, re-derived in float64 (fp32 results of +, *, / computed in float64 and rounded
  once are the correctly rounded fp32 results: 53 >= 2 * 24 + 2).
"""
from __future__ import annotations

import math
import shutil
from typing import List, Optional

import pytest
import torch

import lig
from _reference import INT64_MAX, visible
from test_kernel_sets import forced

SETS = lig.kernel_sets()
BF16_SETS = {"avx512bf16", "amx-bf16"}  # sets whose FP8 products run on bf16 units (contract 2.4)
FP8 = torch.float8_e4m3fn
F32_1_448 = float(torch.tensor(1.0 / 448.0, dtype=torch.float32))  # DeepSeek's fp8_max_inv in fp32


# ---- float64 references -------------------------------------------------------------------------


def f32(x: torch.Tensor) -> torch.Tensor:
    """float64 values rounded once to fp32 (nearest even), kept in float64."""
    return x.to(torch.float32).to(torch.float64)


def e4m3_round(v: torch.Tensor) -> torch.Tensor:
    """float64 -> the nearest e4m3fn value (ties to even), as float64: 3 mantissa bits, exponents
    from -6 (subnormals spaced 2^-9), saturated at 448; NaN stays NaN, zeros keep their sign."""
    a = v.abs()
    _, e = torch.frexp(torch.where(a > 0, a, torch.ones_like(a)))  # a = m 2^e, m in [0.5, 1)
    ulp = torch.pow(2.0, (e - 1).clamp(min=-6).to(torch.float64) - 3)
    r = torch.clamp(torch.round(a / ulp) * ulp, max=448.0)  # torch.round: half to even
    return torch.where(torch.isnan(v), v, torch.copysign(r, v))


def reference_block_quant(x: torch.Tensor, block: int, divide: bool, ue8m0: bool):
    """(y as float64 e4m3 values, s float64): the quantizers' arithmetic re-derived in float64."""
    x64 = x.to(torch.float64)
    blocks = x64.unflatten(-1, (x64.shape[-1] // block, block))
    amax = torch.clamp(blocks.abs().amax(-1), min=f32(torch.tensor(1e-4, dtype=torch.float64)).item())
    s = f32(amax / 448.0) if divide else f32(amax * F32_1_448)
    if ue8m0:
        m, e = torch.frexp(s)
        s = torch.where(m == 0.5, s, torch.pow(2.0, e.to(torch.float64)))
    y = e4m3_round(torch.clamp(f32(blocks / s.unsqueeze(-1)), -448.0, 448.0))
    return y.flatten(-2), s


def _group_scores(q, k, w, sq, sk, G):
    """One row against its batch's keys, float64: (I [N2, Lk], abs [N2, Lk]) where abs is
    sum_h sum_d |w sq sk q_d k_d| (the bound's sum). q [N1,D], k [Lk,N2,D], w/sq [N1], sk [Lk,N2]."""
    N1, D = q.shape
    N2 = k.shape[1]
    dots = torch.einsum("gcd,sgd->gcs", q.view(N2, G, D), k)  # [N2,G,Lk]
    absd = torch.einsum("gcd,sgd->gcs", q.abs().view(N2, G, D), k.abs())
    scale = sk.t().unsqueeze(1) * sq.view(N2, G, 1)  # [N2,G,Lk]
    x = dots * scale
    I = torch.where(x > 0, w.view(N2, G, 1) * x, torch.zeros((), dtype=torch.float64)).sum(1)
    return I, (w.abs().view(N2, G, 1) * scale.abs() * absd).sum(1)


def check_selection(idx, val, ref, bound, vis, K, what, stats):
    """One (row, key head): lig's (idx [K], val [K]) against the reference scores ref [Lk] (bound
    [Lk], visibility vis [Lk])."""
    nvis = int(vis.sum())
    take = min(K, nvis)
    idx = idx.to(torch.int64)
    val = val.to(torch.float64)
    assert torch.all(idx[take:] == -1) and torch.all(torch.isneginf(val[take:])), f"{what}: padding"
    sel = idx[:take]
    assert torch.all(sel >= 0) and len(set(sel.tolist())) == take, f"{what}: indices {sel.tolist()}"
    assert torch.all(vis[sel]), f"{what}: an invisible key selected: {sel.tolist()}"
    err = (val[:take] - ref[sel]).abs()
    assert torch.all(err <= bound[sel]), f"{what}: values off by {err.max().item():.3g} > bound"
    # lig's own order: descending values, equal values by the lower key
    for j in range(take - 1):
        assert val[j] > val[j + 1] or (val[j] == val[j + 1] and sel[j] < sel[j + 1]), f"{what}: order at {j}"
    if take == 0:
        return
    low = (ref[sel] + bound[sel]).min()
    left = vis.clone()
    left[sel] = False
    assert not torch.any(left & (ref - bound > low)), f"{what}: a clearly better key was left out"
    masked = torch.where(vis, ref, torch.tensor(float("-inf"), dtype=torch.float64))
    order = torch.sort(masked, descending=True, stable=True).indices
    if take < nvis:
        a, b = order[take - 1], order[take]
        if ref[a] - bound[a] <= ref[b] + bound[b]:
            stats["unclear"] += 1
            return
    assert set(sel.tolist()) == set(order[:take].tolist()), f"{what}: the selected set differs at a clear cut"
    stats["clear"] += 1


class Problem:
    """A quantized problem: the arguments of lig.quant_lightning_indexer and, per batch, the
    float64 rows and keys the reference scores (keys read through the table for PA_BSND)."""

    def __init__(self, seed, code, layout_q, layout_k, with_sq=True, mode=3, pre=INT64_MAX, nxt=INT64_MAX,
                 B=2, S1=5, S2=13, N1=4, N2=2, D=32, K=7, block_size=4, w_dtype=torch.float32,
                 s_dtype=torch.float32):
        g = torch.Generator().manual_seed(seed)
        self.K, self.mode, self.pre, self.nxt, self.G = K, mode, pre, nxt, N1 // N2

        def codes(shape):
            if code == torch.int8:
                return torch.randint(-128, 128, shape, generator=g).to(torch.int8)
            return (torch.randn(shape, generator=g) * 3).to(FP8)

        def scales(shape):
            return (torch.rand(shape, generator=g) + 0.5).to(s_dtype)

        lq = [S1, max(S1 - 2, 0)][:B] + [S1] * max(B - 2, 0)
        lk = [S2, max(S2 - 4, 0)][:B] + [S2] * max(B - 2, 0)
        self.lq, self.lk = lq, lk
        if layout_q == "BSND":
            q, w = codes((B, S1, N1, D)), torch.randn(B, S1, N1, generator=g).to(w_dtype)
            aq_arg, rows = lq, [(b, t) for b in range(B) for t in range(S1)]
        else:
            ends = [sum(lq[: b + 1]) for b in range(B)]
            T1 = ends[-1] + 2  # two rows past the last end: invalid
            q, w = codes((T1, N1, D)), torch.randn(T1, N1, generator=g).to(w_dtype)
            aq_arg, rows = ends, [(r,) for r in range(T1)]
        sq = scales(w.shape) if with_sq else None
        # keys: per batch [Lk, N2, D] codes and [Lk, N2] scales, with a repeated key (an exact tie)
        kb = [codes((n, N2, D)) for n in lk]
        sb = [scales((n, N2)) for n in lk]
        for b in range(B):
            if lk[b] > 3:
                kb[b][3], sb[b][3] = kb[b][1], sb[b][1]
        self.keys = [(x.to(torch.float64), s.to(torch.float64)) for x, s in zip(kb, sb)]
        table = None
        if layout_k == "BSND":
            key = torch.zeros((B, S2, N2, D), dtype=code)
            ks = torch.full((B, S2, N2), 7.0, dtype=s_dtype)  # rows past Lk are never read
            for b in range(B):
                key[b, : lk[b]], ks[b, : lk[b]] = kb[b], sb[b]
            ak_arg = lk
        elif layout_k == "TND":
            key, ks = torch.cat(kb + [codes((1, N2, D))]), torch.cat(sb + [scales((1, N2))])
            ak_arg = [sum(lk[: b + 1]) for b in range(B)]
        else:  # PA_BSND: the batches' blocks shuffled over a larger cache, one spare table column
            per = [-(-n // block_size) for n in lk]
            nblocks = sum(per) + 3
            perm = torch.randperm(nblocks, generator=g)
            key = codes((nblocks, block_size, N2, D))
            ks = scales((nblocks, block_size, N2))
            table = torch.full((B, max(per) + 1), 0, dtype=torch.int32)
            used = 0
            for b in range(B):
                for j in range(per[b]):
                    blk = int(perm[used])
                    used += 1
                    table[b, j] = blk
                    n = min(block_size, lk[b] - j * block_size)
                    key[blk, :n] = kb[b][j * block_size: j * block_size + n]
                    ks[blk, :n] = sb[b][j * block_size: j * block_size + n]
            ak_arg = lk
        self.args = (q, key, w, sq, ks)
        self.kwargs = dict(actual_seq_lengths_query=aq_arg, actual_seq_lengths_key=ak_arg, block_table=table,
                           layout_query=layout_q, layout_key=layout_k, sparse_count=K, sparse_mode=mode,
                           pre_tokens=pre, next_tokens=nxt)
        self.layout_q, self.rows = layout_q, rows
        self.q64, self.w64 = q.to(torch.float64), w.to(torch.float64)
        self.sq64 = sq.to(torch.float64) if with_sq else torch.ones(w.shape, dtype=torch.float64)

    def where(self, pos):
        """(batch, local row, Lq) of an output row position, or None when the row is invalid."""
        if self.layout_q == "BSND":
            b, t = pos
            return (b, t, self.lq[b]) if t < self.lq[b] else None
        (r,), start = pos, 0
        for b, n in enumerate(self.lq):
            if r < start + n:
                return b, r - start, n
            start += n
        return None

    def check(self, idx, val, what=""):
        """lig's outputs ([.., N2, K]) against the reference; returns the cut statistics."""
        stats = {"clear": 0, "unclear": 0}
        D = self.q64.shape[-1]
        for pos in self.rows:
            loc = self.where(pos)
            here = f"{what} row {pos}"
            if loc is None:
                assert torch.all(idx[pos] == -1) and torch.all(torch.isneginf(val[pos])), f"{here}: invalid row"
                continue
            b, t, Lq = loc
            k64, sk64 = self.keys[b]
            Lk = k64.shape[0]
            I, abs_sum = _group_scores(self.q64[pos], k64, self.w64[pos], self.sq64[pos], sk64, self.G)
            bound = 2 * (D + self.G + 4) * 2.0**-24 * abs_sum
            vis = visible(t, Lq, Lk, torch.arange(Lk), self.mode, self.pre, self.nxt)
            for g in range(I.shape[0]):
                check_selection(idx[pos][g], val[pos][g], I[g], bound[g], vis, self.K, f"{here} head {g}", stats)
        return stats


def _run(p: Problem, **extra):
    return lig.quant_lightning_indexer(*p.args, **p.kwargs, return_value=True, **extra)


CONFIGS = [  # (layout_query, layout_key)
    ("BSND", "BSND"), ("TND", "TND"), ("BSND", "PA_BSND"), ("TND", "PA_BSND"),
]


@pytest.mark.parametrize("code", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("layouts", CONFIGS, ids=lambda c: "-".join(c))
@pytest.mark.parametrize("with_sq", [True, False], ids=["sq", "no_sq"])
def test_matches_float64_reference(code, layouts, with_sq):
    totals = {"clear": 0, "unclear": 0}
    for seed, mode, pre, nxt in ((1, 3, INT64_MAX, INT64_MAX), (2, 0, INT64_MAX, INT64_MAX), (3, 0, 4, 2),
                                 (4, 3, 5, INT64_MAX)):
        p = Problem(seed, code, *layouts, with_sq=with_sq, mode=mode, pre=pre, nxt=nxt)
        idx, val = _run(p)
        lead = (2, 5) if layouts[0] == "BSND" else (p.args[0].shape[0],)
        assert idx.shape == lead + (2, p.K) and idx.dtype == torch.int32 and val.dtype == torch.float32
        for k, v in p.check(idx, val, f"mode {mode}").items():
            totals[k] += v
    # the exact comparison is not vacuous: most cuts are clear
    assert totals["clear"] > 3 * totals["unclear"], totals


@pytest.mark.parametrize("w_dtype,s_dtype", [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)])
@pytest.mark.parametrize("values_dtype", [torch.float32, torch.bfloat16])
def test_other_weight_scale_and_value_dtypes(w_dtype, s_dtype, values_dtype):
    p = Problem(11, FP8, "BSND", "PA_BSND", w_dtype=w_dtype, s_dtype=s_dtype)
    idx, val = _run(p, values_dtype=values_dtype)
    assert val.dtype == values_dtype
    if values_dtype == torch.float32:
        p.check(idx, val)
    else:  # the fp32 scores rounded once: the same indices, the values those of float32 rounded
        idx32, val32 = _run(p)
        assert torch.equal(idx, idx32) and torch.equal(val, val32.to(values_dtype))


def test_single_key_head_larger_d_and_indices_only():
    p = Problem(5, torch.int8, "BSND", "BSND", N1=8, N2=1, D=160, S1=4, S2=40, K=16)
    idx, val = _run(p)
    p.check(idx, val)
    only = lig.quant_lightning_indexer(*p.args, **p.kwargs)  # return_value=False: indices alone
    assert isinstance(only, torch.Tensor) and torch.equal(only, idx)


@pytest.mark.parametrize("name", SETS)
def test_every_kernel_set(name):
    """Each set this CPU has, against the reference; INT8 gives the same bytes on every set, FP8
    on every set without bf16 units (contract 2.4)."""
    with forced(name):
        for code in (FP8, torch.int8):
            for layouts in CONFIGS:
                p = Problem(21, code, *layouts, D=48)
                idx, val = _run(p)
                p.check(idx, val, name)
                if code == torch.int8 or name not in BF16_SETS:
                    with forced("scalar"):
                        sidx, sval = _run(p)
                    assert torch.equal(idx, sidx) and torch.equal(val, sval), f"{name} differs from scalar"


def _decode_problem(seed, B, next_n, H, D, block_kv, ctx: List[int], spare=2):
    """q, a fused cache written by lig.indexer_k_quant_and_cache over shuffled blocks (with
    padding tokens of slot -1 between), weights, context_lens, block_table, and the bf16 keys."""
    g = torch.Generator().manual_seed(seed)
    per = [-(-n // block_kv) for n in ctx]
    nblocks = sum(per) + spare
    perm = torch.randperm(nblocks, generator=g)
    table = torch.zeros(B, max(per) + 1, dtype=torch.int32)
    used = 0
    for b in range(B):
        for j in range(per[b]):
            table[b, j] = perm[used]
            used += 1
    keys = [(torch.randn(n, D, generator=g) * (1 + b)).to(torch.bfloat16) for b, n in enumerate(ctx)]
    slots, k_all = [], []
    for b, n in enumerate(ctx):
        for s in range(n):
            slots.append(int(table[b, s // block_kv]) * block_kv + s % block_kv)
            k_all.append(keys[b][s])
            if s % 5 == 2:  # a padding token, skipped
                slots.append(-1)
                k_all.append(torch.full((D,), 1e4, dtype=torch.bfloat16))
    cache = torch.full((nblocks, block_kv, D + 4), 0xAB, dtype=torch.uint8)
    lig.indexer_k_quant_and_cache(torch.stack(k_all), cache, torch.tensor(slots), D, None)
    q = (torch.randn(B, next_n, H, D, generator=g) * 2).to(FP8)
    w = torch.randn(B * next_n, H, generator=g)
    return q, cache, w, torch.tensor(ctx, dtype=torch.int32), table, keys, slots, k_all


@pytest.mark.parametrize("next_n", [1, 2, 3])
def test_cache_writer_then_paged_topk_round_trip(next_n):
    """Keys written with indexer_k_quant_and_cache, selected with fp8_paged_mqa_topk: the cache
    bytes are the float64 quantizer's, untouched bytes keep their value, and the selection is
    quant_lightning_indexer's on the same keys laid out contiguously (bit for bit) and within the
    reference's bound."""
    B, H, D, block_kv, ctx, topk = 3, 8, 64, 8, [37, 8, 20], 12
    q, cache, w, lens, table, keys, slots, k_all = _decode_problem(7, B, next_n, H, D, block_kv, ctx)
    # the cache bytes, by the layout's definition
    written = torch.zeros(cache.shape, dtype=torch.bool)
    codes = torch.zeros(B, max(ctx), 1, D, dtype=FP8)
    scales = torch.zeros(B, max(ctx), 1)
    for b, n in enumerate(ctx):
        y, s = reference_block_quant(keys[b], D, divide=True, ue8m0=False)
        for t in range(n):
            blk, o = int(table[b, t // block_kv]), t % block_kv
            flat = cache[blk].reshape(-1)
            got_codes = flat[o * D:(o + 1) * D].view(FP8).to(torch.float64)
            got_scale = flat[block_kv * D + 4 * o: block_kv * D + 4 * o + 4].view(torch.float32).to(torch.float64)
            assert torch.equal(got_codes, y[t]) and torch.equal(got_scale, s[t]), f"batch {b} key {t}"
            w_flat = written[blk].reshape(-1)
            w_flat[o * D:(o + 1) * D] = True
            w_flat[block_kv * D + 4 * o: block_kv * D + 4 * o + 4] = True
            codes[b, t, 0] = y[t].to(FP8)
            scales[b, t, 0] = s[t].to(torch.float32)
    assert torch.all(cache[~written] == 0xAB), "bytes of slots nobody wrote changed"
    idx, val = lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens, table, topk, return_values=True)
    assert idx.shape == (B * next_n, topk) and idx.dtype == torch.int32 and val.dtype == torch.float32
    assert torch.equal(lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens, table, topk), idx)
    # the same keys, contiguous: quant_lightning_indexer with S1 = next_n rows at the end of each context
    ridx, rval = lig.quant_lightning_indexer(q, codes, w.view(B, next_n, H), None, scales,
                                             actual_seq_lengths_key=lens, sparse_count=topk, return_value=True)
    assert torch.equal(idx, ridx.view(B * next_n, topk)) and torch.equal(val, rval.view(B * next_n, topk))
    # against the float64 reference: row (b, i) sees keys < ctx[b] - next_n + i + 1
    stats = {"clear": 0, "unclear": 0}
    q64, w64 = q.to(torch.float64), w.to(torch.float64).view(B, next_n, H)
    for b, n in enumerate(ctx):
        k64, s64 = codes[b, :n].to(torch.float64), scales[b, :n].to(torch.float64)
        for i in range(next_n):
            I, abs_sum = _group_scores(q64[b, i], k64, w64[b, i], torch.ones(H, dtype=torch.float64), s64, H)
            vis = torch.arange(n) < n - next_n + i + 1
            check_selection(idx[b * next_n + i], val[b * next_n + i], I[0], 2 * (D + H + 4) * 2.0**-24 * abs_sum[0],
                            vis, topk, f"row ({b},{i})", stats)
    assert stats["clear"] > stats["unclear"], stats


def _cache_keys(cache, table, b, n, D, block_kv):
    """Batch b's first n keys read back from the fused cache by its layout: (codes [n,1,D] as
    float64, scales [n,1] float64)."""
    codes, scales = [], []
    for t in range(n):
        flat = cache[int(table[b, t // block_kv])].reshape(-1)
        o = t % block_kv
        codes.append(flat[o * D:(o + 1) * D].view(FP8).to(torch.float64))
        scales.append(flat[block_kv * D + 4 * o: block_kv * D + 4 * o + 4].view(torch.float32).to(torch.float64))
    return torch.stack(codes).view(n, 1, D), torch.stack(scales).view(n, 1)


@pytest.mark.parametrize("next_n", [1, 3])
def test_paged_topk_two_d_context_lens(next_n):
    """context_lens [B, next_n] (DeepGEMM's 2-D form): row (b, i) sees keys < context_lens[b, i],
    against the float64 reference; the 1-D form's lengths written out in 2-D give its bytes."""
    B, H, D, block_kv, ctx, topk = 3, 8, 64, 8, [37, 8, 20], 9
    q, cache, w, lens, table, *_ = _decode_problem(81, B, next_n, H, D, block_kv, ctx)
    g = torch.Generator().manual_seed(82)
    lens2 = torch.stack([torch.randint(0, n + 1, (next_n,), generator=g) for n in ctx]).to(torch.int32)
    lens2[0, -1], lens2[1, 0] = ctx[0], 0  # a whole context, an empty row
    idx, val = lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens2, table, topk, return_values=True)
    assert idx.shape == (B * next_n, topk)
    stats = {"clear": 0, "unclear": 0}
    q64, w64 = q.to(torch.float64), w.to(torch.float64).view(B, next_n, H)
    for b, n in enumerate(ctx):
        k64, s64 = _cache_keys(cache, table, b, n, D, block_kv)
        for i in range(next_n):
            I, abs_sum = _group_scores(q64[b, i], k64, w64[b, i], torch.ones(H, dtype=torch.float64), s64, H)
            vis = torch.arange(n) < int(lens2[b, i])
            check_selection(idx[b * next_n + i], val[b * next_n + i], I[0], 2 * (D + H + 4) * 2.0**-24 * abs_sum[0],
                            vis, topk, f"row ({b},{i})", stats)
    assert stats["clear"] > 0, stats
    one_d = lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens, table, topk, return_values=True)
    as_2d = (lens[:, None] - next_n + 1 + torch.arange(next_n)[None, :]).clamp_min(0).to(torch.int32)
    two_d = lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, as_2d, table, topk, return_values=True)
    assert torch.equal(one_d[0], two_d[0]) and torch.equal(one_d[1], two_d[1])


@pytest.mark.parametrize("name", SETS)
def test_thread_count_determinism(name):
    """Bitwise the same for 1, 2 and 3 threads and from run to run, per kernel set: a prefill
    problem and a decode row against many keys (which splits its keys across threads)."""
    p = Problem(31, FP8, "BSND", "PA_BSND", S1=24, S2=300, K=40, block_size=16)
    pi = Problem(32, torch.int8, "TND", "TND", S1=24, S2=300, K=40)
    q, cache, w, lens, table, *_ = _decode_problem(9, 1, 1, 16, 128, 64, [4000], spare=0)
    results = []
    try:
        with forced(name):
            for threads in (1, 2, 3, 2):
                lig.set_num_threads(threads)
                results.append((*_run(p), *_run(pi),
                                *lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens, table, 256, True)))
    finally:
        lig.set_num_threads(0)
    for r in results[1:]:
        for a, b in zip(results[0], r):
            assert torch.equal(a, b)


# ---- act_quant and the cache writer's quantization --------------------------------------------


def _assert_same_fp8(y: torch.Tensor, ref: torch.Tensor, what: str):
    got = y.to(torch.float64)
    same = (got == ref) | (torch.isnan(got) & torch.isnan(ref))
    same &= torch.signbit(got) == torch.signbit(ref)
    assert torch.all(same), f"{what}: {int((~same).sum())} codes differ, first at {(~same).nonzero()[0].tolist()}"


def _quant_inputs():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 6, 128, generator=g)
    x[0, 0] = 0.0  # a zero block: amax clamped to 1e-4, every code +0
    x[0, 1] = -0.0
    x[0, 2, :] = torch.randn(128, generator=g) * 1e-3
    x[0, 2, 5] = 3.0  # the rest are far below 3 / 448: fp8 subnormals and zeros
    x[0, 3] = torch.randn(128, generator=g) * 1e-40  # fp32 subnormal inputs, amax clamped
    x[0, 4] = torch.arange(128) * 3.5 - 220.0  # the max element: x / s rounds to 448
    x[1, 0] = torch.full((128,), 448.0 * 2.0**-3)  # every element the max
    # halfway cases for a power-of-two scale: amax 448 gives s = 1 (ue8m0 too)
    x[1, 1, 0] = 448.0
    x[1, 1, 1:17] = torch.tensor([1.0625, 1.1875, 17.0, 19.0, 0.5 + 2**-5, 2**-9 * 1.5, 2**-9 * 2.5, -2**-10,
                                  -2**-10 * 3, 2**-6 + 2**-10, 240.0, 232.0, 104.0, -1.0625, 3.0 + 2**-3, 1e-3])
    return x


@pytest.mark.parametrize("scale_fmt", [None, "ue8m0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_act_quant_matches_float64_rederivation(scale_fmt, dtype):
    x = _quant_inputs()
    if dtype != torch.float32:
        x = x.clamp(-6e4, 6e4).to(dtype)
    for block in (128, 32):
        y, s = lig.act_quant(x, block, scale_fmt)
        ry, rs = reference_block_quant(x, block, divide=False, ue8m0=scale_fmt == "ue8m0")
        assert y.dtype == FP8 and y.shape == x.shape and s.dtype == torch.float32
        assert s.shape == x.shape[:-1] + (128 // block,)
        assert torch.equal(s.to(torch.float64), rs)
        _assert_same_fp8(y, ry, f"block {block}")
    if dtype == torch.float32:
        y, s = lig.act_quant(x, 128, scale_fmt)
        assert torch.all(y[0, 0].to(torch.float32) == 0) and not torch.signbit(y[0, 0].to(torch.float32)).any()
        assert torch.all(torch.signbit(y[0, 1].to(torch.float32)))  # -0 keeps its sign
        assert y[0, 3].to(torch.float32).abs().max() == 0  # fp32 subnormals: amax clamped, codes 0
        if scale_fmt is None:  # the cases the data were made for
            assert float(s[0, 0]) == float(torch.tensor(1e-4) * torch.tensor(F32_1_448))
            assert y[0, 4].to(torch.float32).abs().max() == 448.0
            sub = y[0, 2].to(torch.float32).abs()
            assert ((sub > 0) & (sub < 2**-6)).any()  # fp8 subnormal codes


def test_act_quant_block_sizes_shapes_and_nan():
    x = torch.randn(3, 21)
    y, s = lig.act_quant(x, 7)
    ry, rs = reference_block_quant(x, 7, divide=False, ue8m0=False)
    assert s.shape == (3, 3) and torch.equal(s.double(), rs)
    _assert_same_fp8(y, ry, "block 7")
    y, s = lig.act_quant(x.t().contiguous().t(), 7)  # a strided input reads the same
    assert torch.equal(s.double(), rs)
    x[1, 3] = float("nan")
    y, s = lig.act_quant(x, 7)
    assert torch.isnan(s[1, 0]) and torch.isnan(y[1, :7].float()).all() and not torch.isnan(s[1, 1:]).any()


@pytest.mark.parametrize("scale_fmt", [None, "", "ue8m0"])
@pytest.mark.parametrize("quant_block_size", [64, 32])
def test_cache_writer_quantization_and_layout(scale_fmt, quant_block_size):
    """vLLM's layout with several scales per token: each block's codes, then its scales; the
    quotient scale (not DeepSeek's product), and nothing else written."""
    g = torch.Generator().manual_seed(5)
    D, bs, nb = 64, 4, 5
    k = torch.randn(9, D, generator=g).to(torch.bfloat16)
    k[2] = 0.0
    k[4, :32] = torch.linspace(-448.0, 448.0, 32)  # scale exactly 1 in its first quant block
    slots = torch.tensor([17, 3, -1, 0, 8, -5, 19, 4, 12])
    stride = D + D // quant_block_size * 4
    cache = torch.full((nb, bs, stride), 0x5C, dtype=torch.uint8)
    lig.indexer_k_quant_and_cache(k, cache, slots, quant_block_size, scale_fmt)
    ry, rs = reference_block_quant(k, quant_block_size, divide=True, ue8m0=scale_fmt == "ue8m0")
    n_s = D // quant_block_size
    expect = torch.full((nb, bs * stride), 0x5C, dtype=torch.uint8)
    for t, slot in enumerate(slots.tolist()):
        if slot < 0:
            continue
        blk, o = divmod(slot, bs)
        expect[blk, o * D:(o + 1) * D] = ry[t].to(FP8).view(torch.uint8)
        expect[blk, bs * D + o * n_s * 4: bs * D + (o + 1) * n_s * 4] = rs[t].to(torch.float32).view(torch.uint8)
    assert torch.equal(cache.reshape(nb, -1), expect)


def test_cache_writer_into_a_strided_cache():
    """Blocks of a larger allocation (vLLM's caches may have a block stride of their own)."""
    D, bs = 16, 2
    big = torch.zeros(6, bs * (D + 4) + 8, dtype=torch.uint8)
    cache = big[:, : bs * (D + 4)].view(6, bs, D + 4)
    k = torch.randn(3, D)
    lig.indexer_k_quant_and_cache(k, cache, torch.tensor([11, 0, 5]), D, "ue8m0")
    assert torch.all(big[:, bs * (D + 4):] == 0)
    ry, rs = reference_block_quant(k, D, divide=True, ue8m0=True)
    block = cache[5].reshape(-1)  # slot 11: block 5, offset 1
    assert torch.equal(block[D: 2 * D].view(FP8).double(), ry[0])
    assert torch.equal(block[bs * D + 4: bs * D + 8].view(torch.float32).double(), rs[0])


# ---- named errors --------------------------------------------------------------------------------


def test_quant_indexer_errors_name_the_parameter(no_allocation):
    p = Problem(41, FP8, "BSND", "PA_BSND")
    q, key, w, sq, ks = p.args
    kw = dict(p.kwargs)
    cases = [
        (TypeError, "query: expected dtype float8_e4m3fn or int8", lambda: lig.quant_lightning_indexer(
            q.float(), key, w, sq, ks, **kw)),
        (TypeError, "key_dequant_scale: expected dtype float32 or float16", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks.double(), **kw)),
        (lig.LigValueError, 'layout_key: expected', lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **{**kw, "layout_key": "PA_TND"})),
        (lig.LigValueError, "block_table: expected a", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **{**kw, "block_table": None})),
        (lig.LigValueError, "metadata: expected None", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **kw, metadata=torch.zeros(4))),
        (lig.LigValueError, "cmp_ratio: expected 1", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **kw, cmp_ratio=4)),
        (lig.LigValueError, "query_dtype: expected None", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **kw, query_dtype=torch.int8)),
        (lig.LigValueError, "sparse_count: expected a value >= 1", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **{**kw, "sparse_count": 0})),
        (lig.LigValueError, "key: expected rank 4", lambda: lig.quant_lightning_indexer(
            q, key[0], w, sq, ks, **kw)),
    ]
    for exc, message, call in cases:
        with pytest.raises(exc, match=message):
            call()
    assert no_allocation == []
    # the library's checks (after the outputs exist, before anything is written)
    for message, call in [
        ("query_quant_mode", lambda: lig.quant_lightning_indexer(q, key, w, sq, ks, 1, **kw)),
        ("key", lambda: lig.quant_lightning_indexer(q, key.view(torch.int8), w, sq, ks, **kw)),
        ("key_dequant_scale", lambda: lig.quant_lightning_indexer(q, key, w, sq, ks[:, :2], **kw)),
        ("block_table", lambda: lig.quant_lightning_indexer(
            q, key, w, sq, ks, **{**kw, "block_table": kw["block_table"] + 100})),
    ]:
        with pytest.raises(lig.LigValueError, match=message):
            call()


def test_paged_topk_errors_name_the_parameter():
    q, cache, w, lens, table, *_ = _decode_problem(43, 2, 2, 4, 16, 4, [9, 7])
    c4 = cache.unsqueeze(2)
    cases = [
        ("q: expected dtype float8_e4m3fn", lambda: lig.fp8_paged_mqa_topk(q.float(), c4, w, lens, table, 3)),
        ("kv_cache: expected shape", lambda: lig.fp8_paged_mqa_topk(q, cache, w, lens, table, 3)),
        ("kv_cache: expected dtype uint8", lambda: lig.fp8_paged_mqa_topk(q, c4.view(FP8), w, lens, table, 3)),
        ("weights: expected shape", lambda: lig.fp8_paged_mqa_topk(q, c4, w[:3], lens, table, 3)),
        ("context_lens: expected shape \\[2\\] or \\[2,2\\]", lambda: lig.fp8_paged_mqa_topk(
            q, c4, w, lens.view(2, 1).expand(2, 3), table, 3)),
        ("context_lens: expected values in .* got 100 at batch 1 row 0", lambda: lig.fp8_paged_mqa_topk(
            q, c4, w, torch.tensor([[9, 9], [100, 7]], dtype=torch.int32), table, 3)),
        ("context_lens: expected values in", lambda: lig.fp8_paged_mqa_topk(
            q, c4, w, torch.tensor([9, 100], dtype=torch.int32), table, 3)),
        ("block_table: expected shape", lambda: lig.fp8_paged_mqa_topk(q, c4, w, lens, table[:1], 3)),
        ("topk: expected a value >= 1", lambda: lig.fp8_paged_mqa_topk(q, c4, w, lens, table, 0)),
        ("block_table", lambda: lig.fp8_paged_mqa_topk(q, c4, w, lens, table + 50, 3)),  # the library's check
        ("kv_cache: expected each block", lambda: lig.fp8_paged_mqa_topk(
            q, torch.zeros(5, 20, 4, 1, dtype=torch.uint8).permute(0, 2, 3, 1), w, lens, table, 3)),
    ]
    for message, call in cases:
        with pytest.raises((lig.LigValueError, TypeError), match=message):
            call()


def test_cache_writer_errors_write_nothing():
    D = 16
    cache = torch.full((3, 4, D + 4), 7, dtype=torch.uint8)
    before = cache.clone()
    k = torch.randn(4, D)
    for message, call in [
        ("slot_mapping: expected slots below num_blocks \\* block_size = 12 .* got 12 at position 2",
         lambda: lig.indexer_k_quant_and_cache(k, cache, torch.tensor([0, 1, 12, -1]), D, None)),
        ("slot_mapping: expected distinct slots .* got slot 5 at positions 1 and 3",
         lambda: lig.indexer_k_quant_and_cache(k, cache, torch.tensor([0, 5, -1, 5]), D, None)),
        ("slot_mapping: expected shape", lambda: lig.indexer_k_quant_and_cache(k, cache, torch.tensor([0, 1]), D,
                                                                             None)),
        ("quant_block_size = 5", lambda: lig.indexer_k_quant_and_cache(k, cache, torch.tensor([0, 1, 2, 3]), 5, None)),
        ("kv_cache: expected shape \\[num_blocks,block_size,24\\]", lambda: lig.indexer_k_quant_and_cache(
            k, cache, torch.tensor([0, 1, 2, 3]), 8, None)),
        ("scale_fmt: expected None", lambda: lig.indexer_k_quant_and_cache(k, cache, torch.tensor([0, 1, 2, 3]), D,
                                                                          "e8m0")),
    ]:
        with pytest.raises(lig.LigValueError, match=message):
            call()
        assert torch.equal(cache, before)
    with pytest.raises(TypeError, match="kv_cache: expected dtype uint8"):
        lig.indexer_k_quant_and_cache(k, cache.view(torch.int8), torch.tensor([0, 1, 2, 3]), D, None)


def test_act_quant_errors():
    with pytest.raises(lig.LigValueError, match="x: expected a last dimension divisible by block_size = 128"):
        lig.act_quant(torch.randn(2, 100))
    with pytest.raises(lig.LigValueError, match="scale_fmt"):
        lig.act_quant(torch.randn(2, 128), scale_fmt="ue4m3")
    with pytest.raises(TypeError, match="x: expected dtype float32"):
        lig.act_quant(torch.randn(2, 128).double())
    with pytest.raises(TypeError, match="block_size: expected an int"):
        lig.act_quant(torch.randn(2, 128), 128.0)


# ---- torch.compile and opcheck ---------------------------------------------------------------------

BACKENDS = ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a C++ compiler"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_compile_fullgraph(backend):
    q, cache, w, lens, table, keys, slots, k_all = _decode_problem(51, 2, 2, 4, 32, 8, [19, 12])
    p = Problem(52, FP8, "TND", "PA_BSND")
    k_new = torch.stack(k_all)
    slots_t = torch.tensor(slots)

    def fn(q, cache, w, lens, table, k_new, slots_t, pq, pk, pw, psq, psk, pt, pak):
        lig.indexer_k_quant_and_cache(k_new, cache, slots_t, k_new.shape[1], "ue8m0")
        idx, val = lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens, table, 6, return_values=True)
        idx2 = lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, torch.stack([lens - 1, lens], 1), table, 6)
        y, s = lig.act_quant(k_new.float(), 16, "ue8m0")
        qi, qv = lig.quant_lightning_indexer(pq, pk, pw, psq, psk, actual_seq_lengths_query=p.kwargs[
            "actual_seq_lengths_query"], actual_seq_lengths_key=pak, block_table=pt, layout_query="TND",
            layout_key="PA_BSND", sparse_count=5, return_value=True)
        return idx, val, idx2, y.view(torch.uint8), s, qi, qv

    args = [q, cache.clone(), w, lens, table, k_new, slots_t, *p.args, p.kwargs["block_table"],
            torch.tensor(p.kwargs["actual_seq_lengths_key"])]
    eager_cache = args[1].clone()
    eager = fn(*args[:1], eager_cache, *args[2:])
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=backend)
    got_cache = args[1].clone()
    got = compiled(*args[:1], got_cache, *args[2:])
    assert torch.equal(got_cache, eager_cache)  # the cache writer's in-place write survives compilation
    for a, b in zip(eager, got):
        assert torch.equal(a, b)


def test_opcheck():
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    p = Problem(61, torch.int8, "BSND", "PA_BSND")
    q, key, w, sq, ks = p.args
    kw = p.kwargs
    for return_value in (True, False):
        torch.library.opcheck(torch.ops.lig.quant_indexer.default,
                              (q, key, w, sq, ks, None, torch.tensor(kw["actual_seq_lengths_key"]), kw["block_table"],
                               0, 0, "BSND", "PA_BSND", 5, 3, INT64_MAX, INT64_MAX, return_value, torch.float32),
                              test_utils=utils)
    dq, cache, dw, lens, table, *_ = _decode_problem(62, 2, 2, 4, 16, 4, [9, 7])
    # (test_schema compares the inputs before and after with arithmetic torch lacks for float8 q)
    torch.library.opcheck(torch.ops.lig.fp8_paged_mqa_topk.default, (dq, cache.unsqueeze(2), dw, lens, table, 4, True),
                          test_utils=utils[1:])
    lens2 = torch.tensor([[9, 4], [0, 7]], dtype=torch.int32)  # per-row context lengths
    torch.library.opcheck(torch.ops.lig.fp8_paged_mqa_topk.default, (dq, cache.unsqueeze(2), dw, lens2, table, 4, True),
                          test_utils=utils[1:])
    torch.library.opcheck(torch.ops.lig.indexer_k_quant_and_cache.default,
                          (torch.randn(3, 16), cache.clone(), torch.tensor([0, 9, -1]), 16, None), test_utils=utils)


def test_fake_kernels_shape_and_validate():
    from torch._subclasses.fake_tensor import FakeTensorMode

    p = Problem(71, FP8, "TND", "TND")
    q, key, w, sq, ks = p.args
    with FakeTensorMode() as mode:
        fq, fk, fw, fsq, fks = (mode.from_tensor(t) for t in (q, key, w, sq, ks))
        idx, val = torch.ops.lig.quant_indexer(fq, fk, fw, fsq, fks, mode.from_tensor(torch.tensor([5, 8])),
                                               mode.from_tensor(torch.tensor([13, 22])), None, 0, 0, "TND", "TND", 9,
                                               3, INT64_MAX, INT64_MAX, False, torch.float32)
        assert idx.shape == (q.shape[0], 2, 9) and idx.dtype == torch.int32 and val.numel() == 0
        with pytest.raises(TypeError, match="query: expected dtype"):
            torch.ops.lig.quant_indexer(fq.float(), fk, fw, fsq, fks, None, None, None, 0, 0, "TND", "TND", 9, 3,
                                        INT64_MAX, INT64_MAX, False, torch.float32)


def test_paged_topk_reads_the_cache_in_place(monkeypatch):
    """The library is handed views into the cache's own bytes: the codes at its start, the scales
    block_kv * D bytes in, with the fused layout's strides (no copy)."""
    from lig import _lib

    q, cache, w, lens, table, *_ = _decode_problem(81, 2, 1, 4, 32, 8, [20, 9])
    seen = []
    real = _lib.Descriptors._create

    def spy(t):
        seen.append((t.data_ptr(), t.dtype, tuple(t.shape), t.stride()))
        return real(t)

    monkeypatch.setattr(_lib.Descriptors, "_create", staticmethod(spy))
    lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), w, lens, table, 5)
    nb, bk, row = cache.shape
    assert (cache.data_ptr(), FP8, (nb, bk, 1, 32), (bk * row, 32, 32, 1)) in seen
    assert (cache.data_ptr() + bk * 32, torch.float32, (nb, bk, 1), (bk * row // 4, 1, 1)) in seen


def test_first_calls_do_not_import_dynamo():
    """As for the other ops (test_api): calling these functions loads nothing torch.compile needs
    (a fresh interpreter; each function once)."""
    import subprocess
    import sys

    script = "\n".join([
        "import sys, torch, lig",
        "k = torch.randn(8, 16); cache = torch.zeros(2, 4, 20, dtype=torch.uint8)",
        "lig.indexer_k_quant_and_cache(k, cache, torch.arange(8), 16, 'ue8m0')",
        "q, s = lig.act_quant(torch.randn(1, 1, 2, 16), 16)",
        "table, lens = torch.tensor([[1, 0]], dtype=torch.int32), torch.tensor([8], dtype=torch.int32)",
        "lig.fp8_paged_mqa_topk(q, cache.unsqueeze(2), torch.rand(1, 2), lens, table, 4)",
        "keys = cache[:, :, :16].view(torch.float8_e4m3fn).reshape(1, 8, 1, 16)",
        "lig.quant_lightning_indexer(q, keys, torch.rand(1, 1, 2), None, torch.rand(1, 8, 1), sparse_count=4)",
        "print(sorted(m for m in sys.modules if m.startswith(('torch._dynamo', 'torch._inductor'))))",
    ])
    loaded = subprocess.check_output([sys.executable, "-c", script], text=True, timeout=120)
    assert loaded.strip() == "[]", loaded


def _int8_fp32_order(q, k, w, sq, sk, G):
    """Contract 2.4's evaluation order for INT8, step by step in fp32 (torch's fp32 operations are
    IEEE's): the exact integer dot rounded once, times sk, times sq, w * x where x > 0, the heads
    added in head order from +0. q [N1,D], k [Lk,N2,D] integer-valued float64; w, sq [N1] and sk
    [Lk,N2] fp32. Returns [N2, Lk] fp32."""
    N1, D = q.shape
    N2 = k.shape[1]
    dots = torch.einsum("hd,sgd->hgs", q.to(torch.int64), k.to(torch.int64))  # exact integers
    out = torch.zeros(N2, k.shape[0], dtype=torch.float32)
    for h in range(N1):
        g = h // G
        x = dots[h, g].to(torch.float32) * sk[:, g]
        x = x * sq[h]
        out[g] = out[g] + torch.where(x > 0, w[h] * x, torch.zeros((), dtype=torch.float32))
    return out


@pytest.mark.parametrize("name", SETS)
def test_int8_values_are_the_contracts_fp32_order(name):
    """INT8 values equal, bit for bit, contract 2.4's fp32 steps evaluated here one by one."""
    p = Problem(91, torch.int8, "BSND", "PA_BSND", D=72)
    with forced(name):
        idx, val = _run(p)
    w, sq = p.args[2], p.args[3]
    for pos in p.rows:
        loc = p.where(pos)
        if loc is None:
            continue
        b = loc[0]
        k64, sk64 = p.keys[b]
        exact = _int8_fp32_order(p.q64[pos], k64, w[pos], sq[pos], sk64.to(torch.float32), p.G)
        for g in range(exact.shape[0]):
            sel = idx[pos][g][idx[pos][g] >= 0].long()
            assert torch.equal(val[pos][g][: sel.numel()], exact[g][sel]), f"{name} row {pos} head {g}"
