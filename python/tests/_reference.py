"""An independent float64 PyTorch definition of the lightning indexer (docs/contract.md sections 2-4), and the
problem generators the tests share.

The backward reference is torch autograd of the forward definition restricted to the counted
slots (gather the selected keys, einsum, ReLU, weighted sum over the heads of a key head), so it
checks lig's hand-written backward against a derivative nobody wrote by hand.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import torch

INT64_MAX = 2**63 - 1
_BIG = 2**40  # stands in for INT64_MAX in index arithmetic (no overflow)


@dataclasses.dataclass
class Geometry:
    """Per flattened query row: its batch, local row t, validity, Lq, Lk and first key row."""

    batch: torch.Tensor
    t: torch.Tensor
    valid: torch.Tensor
    Lq: torch.Tensor
    Lk: torch.Tensor
    key_offset: torch.Tensor
    rows: int
    key_rows: int


def geometry(layout: str, q_shape, k_shape, aq: Optional[List[int]], ak: Optional[List[int]]) -> Geometry:
    if layout == "BSND":
        B, S1 = q_shape[0], q_shape[1]
        S2 = k_shape[1]
        lq = [aq[b] if aq is not None else S1 for b in range(B)]
        lk = [ak[b] if ak is not None else S2 for b in range(B)]
        batch = torch.arange(B).repeat_interleave(S1)
        t = torch.arange(S1).repeat(B)
        Lq = torch.tensor(lq, dtype=torch.int64)[batch] if B else torch.zeros(0, dtype=torch.int64)
        Lk = torch.tensor(lk, dtype=torch.int64)[batch] if B else torch.zeros(0, dtype=torch.int64)
        valid = t < Lq
        key_offset = batch * S2
        return Geometry(batch, t, valid, Lq, Lk, key_offset, B * S1, B * S2)
    assert layout == "TND"
    T1, T2 = q_shape[0], k_shape[0]
    batch = torch.zeros(T1, dtype=torch.int64)
    t = torch.zeros(T1, dtype=torch.int64)
    valid = torch.zeros(T1, dtype=torch.bool)
    Lq = torch.zeros(T1, dtype=torch.int64)
    Lk = torch.zeros(T1, dtype=torch.int64)
    key_offset = torch.zeros(T1, dtype=torch.int64)
    q0 = k0 = 0
    for b in range(len(aq)):
        for r in range(q0, aq[b]):
            batch[r], t[r], valid[r] = b, r - q0, True
            Lq[r], Lk[r], key_offset[r] = aq[b] - q0, ak[b] - k0, k0
        q0, k0 = aq[b], ak[b]
    return Geometry(batch, t, valid, Lq, Lk, key_offset, T1, T2)


def visible(t, Lq, Lk, s: torch.Tensor, mode: int, pre: int, nxt: int) -> torch.Tensor:
    """Whether batch-local key s is visible from row t of a batch with lengths Lq, Lk (docs/contract.md section 4)."""
    pre, nxt = min(pre, _BIG), min(nxt, _BIG)
    if mode == 0:
        return (s >= t - pre) & (s <= t + nxt)
    assert mode == 3
    end = Lk - Lq + t
    return (s <= end) & (s >= end - pre)


def as_rows(layout, q, k, w, idx_or_dy, n2):
    """Flattens to rows: q [R,N1,D], k [TK,N2,D], w [R,N1], slots [R,N2,K]."""
    D, N1 = q.shape[-1], q.shape[-2]
    q_r = q.reshape(-1, N1, D)
    k_r = k.reshape(-1, n2, D)
    w_r = w.reshape(-1, N1)
    slots = None if idx_or_dy is None else idx_or_dy.reshape(q_r.shape[0], n2, idx_or_dy.shape[-1])
    return q_r, k_r, w_r, slots


def counted_mask(geo: Geometry, idx: torch.Tensor, mode, pre, nxt) -> torch.Tensor:
    """[R,N2,K]: slot counts iff the row is valid, 0 <= idx < Lk and the key is visible."""
    idx = idx.to(torch.int64)
    Lk = geo.Lk.view(-1, 1, 1)
    in_range = (idx >= 0) & (idx < Lk)
    vis = visible(geo.t.view(-1, 1, 1), geo.Lq.view(-1, 1, 1), Lk, idx, mode, pre, nxt)
    return geo.valid.view(-1, 1, 1) & in_range & vis


def pair_scores(q_r, k_r, idx, counted, key_offset):
    """S = q . k of every (slot, query head) pair [R,N2,G,K], differentiable (a slot that does not
    count reads key row 0; callers mask it). Needs R, K and the key rows non-empty."""
    R, N1, D = q_r.shape
    N2 = k_r.shape[1]
    rows = torch.where(counted, idx.to(torch.int64) + key_offset.view(-1, 1, 1), 0).clamp(0, k_r.shape[0] - 1)
    heads = torch.arange(N2).view(1, -1, 1).expand_as(rows)
    kg = k_r[rows, heads]  # [R,N2,K,D]
    return torch.einsum("rgcd,rgjd->rgcj", q_r.view(R, N2, N1 // N2, D), kg)


def sparse_scores(q_r, k_r, w_r, idx, counted, key_offset, act=torch.relu):
    """I at the selected slots [R,N2,K] (0 where not counted), differentiable, any float dtype;
    `act` applied to the pair scores S (the definition's ReLU; _tol passes a fixed mask)."""
    R, N1, _ = q_r.shape
    N2 = k_r.shape[1]
    K = idx.shape[-1]
    if R == 0 or K == 0 or k_r.shape[0] == 0:
        return (q_r.sum() * 0 + k_r.sum() * 0 + w_r.sum() * 0) * torch.zeros(R, N2, K, dtype=q_r.dtype)
    S = pair_scores(q_r, k_r, idx, counted, key_offset)
    I = torch.einsum("rgc,rgcj->rgj", w_r.view(R, N2, N1 // N2), act(S))
    return torch.where(counted, I, torch.zeros((), dtype=I.dtype))


def reference_grad(layout, q, k, dy, idx, w, aq, ak, mode, pre, nxt):
    """float64 (dQ, dK, dW) by autograd of the forward restricted to counted slots."""
    n2 = k.shape[-2]
    geo = geometry(layout, q.shape, k.shape, aq, ak)
    q64 = q.detach().to(torch.float64).requires_grad_(True)
    k64 = k.detach().to(torch.float64).requires_grad_(True)
    w64 = w.detach().to(torch.float64).requires_grad_(True)
    q_r, k_r, w_r, idx_r = as_rows(layout, q64, k64, w64, idx, n2)
    dy_r = dy.detach().to(torch.float64).reshape(idx_r.shape)
    counted = counted_mask(geo, idx_r, mode, pre, nxt)
    I = sparse_scores(q_r, k_r, w_r, idx_r, counted, geo.key_offset)
    loss = (I * torch.where(counted, dy_r, torch.zeros((), dtype=torch.float64))).sum()
    dq, dk, dw = torch.autograd.grad(loss, (q64, k64, w64), allow_unused=True)
    return (
        dq if dq is not None else torch.zeros_like(q64),
        dk if dk is not None else torch.zeros_like(k64),
        dw if dw is not None else torch.zeros_like(w64),
    )


def reference_topk(layout, q, k, w, K, aq, ak, mode, pre, nxt):
    """float64 forward: (indices [R,N2,K] int64, values [R,N2,K] float64) with -1 / -inf padding."""
    n2 = k.shape[-2]
    geo = geometry(layout, q.shape, k.shape, aq, ak)
    q_r, k_r, w_r, _ = as_rows(layout, q.to(torch.float64), k.to(torch.float64), w.to(torch.float64), None, n2)
    R, N1, D = q_r.shape
    G = N1 // n2
    out_idx = torch.full((R, n2, K), -1, dtype=torch.int64)
    out_val = torch.full((R, n2, K), float("-inf"), dtype=torch.float64)
    for r in range(R):
        if not geo.valid[r]:
            continue
        lk, off = int(geo.Lk[r]), int(geo.key_offset[r])
        if lk == 0:
            continue
        keys = k_r[off : off + lk]  # [Lk,N2,D]
        S = torch.einsum("gcd,sgd->gcs", q_r[r].view(n2, G, D), keys)
        I = torch.einsum("gc,gcs->gs", w_r[r].view(n2, G), torch.relu(S))  # [N2,Lk]
        s = torch.arange(lk)
        vis = visible(int(geo.t[r]), int(geo.Lq[r]), lk, s, mode, pre, nxt)
        nvis = int(vis.sum())
        I = torch.where(vis.view(1, -1), I, torch.tensor(float("-inf"), dtype=torch.float64))
        order = torch.sort(I, dim=-1, descending=True, stable=True).indices  # ties: lower index first
        take = min(K, nvis)
        out_idx[r, :, :take] = order[:, :take]
        out_val[r, :, :take] = torch.gather(I, 1, order[:, :take])
    return out_idx, out_val


def reference_kl_graph(v, target, indices=None):
    """float64 (loss, dy) as functions of the float64 leaf `v` (the values), both differentiable:
    loss = sum over rows of KL(p || softmax(I)) over counted slots, dy = d loss / d v by autograd
    with create_graph, so that gradients can flow back through dy."""
    p = target.detach().to(torch.float64)
    counted = (indices >= 0) if indices is not None else (v.detach() != float("-inf"))
    zero = torch.zeros((), dtype=torch.float64)
    logits = torch.where(counted, v, torch.tensor(float("-inf"), dtype=torch.float64))
    logq = torch.log_softmax(logits, dim=-1)
    pc = torch.where(counted, p, zero)
    safe_logq = torch.where(counted, logq, zero)
    plogp = torch.where(pc > 0, pc * torch.log(torch.where(pc > 0, pc, torch.ones((), dtype=torch.float64))), zero)
    terms = plogp - pc * safe_logq
    # rows with no counted slot: log_softmax of all -inf is nan, but pc is 0 there: mask it away.
    loss = torch.where(counted, terms, zero).sum()
    (dv,) = torch.autograd.grad(loss, (v,), create_graph=True, allow_unused=True)
    if dv is None:
        dv = torch.zeros_like(v)
    return loss, torch.where(counted, dv, zero)


def reference_kl(values, target, indices=None):
    """float64 (loss, dy): sum over rows of KL(p || softmax(I)) over counted slots, by autograd."""
    v = values.detach().to(torch.float64).requires_grad_(True)
    loss, dy = reference_kl_graph(v, target, indices)
    return loss.detach(), dy.detach()


def grid(gen: torch.Generator, shape, lo=-4, hi=4, scale=8.0) -> torch.Tensor:
    """Small multiples of 1/scale: every product and sum the tests form is exact in fp32."""
    return torch.randint(lo, hi + 1, tuple(shape), generator=gen).to(torch.float64) / scale


def paged_keys(key_cache: torch.Tensor, block_table: torch.Tensor, lengths: List[int]) -> List[torch.Tensor]:
    """Each batch's keys [Lk, N2, D] read from a paged cache by its definition (docs/contract.md
    section 10): key s of batch b is key_cache[block_table[b, s // block_size], s % block_size].
    Only the table entries and cache rows of keys s < Lk are touched."""
    block_size = key_cache.shape[1]
    out = []
    for b, lk in enumerate(lengths):
        rows = [key_cache[int(block_table[b, s // block_size]), s % block_size] for s in range(lk)]
        out.append(torch.stack(rows) if rows else key_cache.new_zeros((0,) + tuple(key_cache.shape[2:])))
    return out


def reference_topk_paged(layout, q, key_cache, block_table, w, K, aq, lengths, mode, pre, nxt):
    """float64 forward over a paged key cache, as reference_topk: the keys read through the table
    (paged_keys), laid out contiguously for the query's layout (BSND: [B, max Lk, N2, D] with zero
    rows past each length; TND: batches one after the other, with cumulative ends)."""
    keys = [k.to(torch.float64) for k in paged_keys(key_cache, block_table, lengths)]
    n2, d = key_cache.shape[2], key_cache.shape[3]
    if layout == "BSND":
        S2 = max(lengths, default=0)
        k = torch.zeros(len(keys), S2, n2, d, dtype=torch.float64)
        for b, kb in enumerate(keys):
            k[b, : kb.shape[0]] = kb
        return reference_topk(layout, q, k, w, K, aq, list(lengths), mode, pre, nxt)
    k = torch.cat(keys) if keys else torch.zeros(0, n2, d, dtype=torch.float64)
    ends = [sum(lengths[: b + 1]) for b in range(len(lengths))]
    return reference_topk(layout, q, k, w, K, aq, ends, mode, pre, nxt)
