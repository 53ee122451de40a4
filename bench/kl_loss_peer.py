"""The fused KL loss benchmark's data and its PyTorch peer (run_kl_bench.py drives both).

    python kl_loss_peer.py prepare --out DIR [shape]      the inputs, as raw files in DIR
    python kl_loss_peer.py peer --data DIR --dtype bf16|fp32 --threads T --reps R [--dump] [shape]
    python kl_loss_peer.py reference --data DIR --rows 0,5,... [shape]

shape: --seq S --heads N1 --dm Dm --dr Dr --idx-heads Nidx1 --dim D --topk K (B = 1, Nidx2 = 1).

Data (prepare), seed 0, every value rounded to bf16 (round to nearest even, torch's .to()):
  - the indexer: query_index [S,Nidx1,D] and key_index [S,1,D] ~ N(0,1), weights [S,Nidx1] ~ N(0,1)
    * Nidx1^-0.5 * D^-0.5 (lig-bench's data);
  - the main attention (MLA, one latent key head): key [S,1,Dm] ~ N(0,1) with key_index added to its
    first D dims, query [S,N1,Dm] = 2 * N(0,1) with query_index's head h % Nidx1 added to its first
    D dims (the main attention partly agrees with the indexer, and is sharper than unit logits),
    query_rope [S,N1,Dr], key_rope [S,1,Dr] ~ N(0,1); scale = 1/sqrt(Dm + Dr);
  - sparse_indices [S,1,K] INT32: the causal top-K of the indexer's own scores (DeepSeek's reference
    selection: all visible keys scored, topk(min(K, t+1)), the rest -1);
  - softmax_max, softmax_sum [1,1,S,N1] FLOAT32: the main attention's statistics over the selected
    slots (max of scale * scores and the sum of exp(scale * scores - max)), in fp32 from the bf16
    values, so the head-mean target sums to 1 per row (to fp32 rounding) and the loss is a real
    KL divergence.

The peer (peer), timed from the input tensors to the three gradients, in blocks of query rows
(rows r0..r1 use only the first min(K, r1) slots, the rest being -1 for causal rows < K):
  no_grad: gather the key latent + rope at the selected slots [rows, K', Dm+Dr], einsum (bmm) the
  N1 heads' scores, P = exp(scale * s - max) / sum, head_mean target p, masked to the counted slots;
  with autograd: gather key_index at the slots, einsum the index scores, ReLU, weighted head sum
  I, masked log_softmax, KL = sum xlogy(p, p) - p * log y, backward per block (dQ and dW of a block
  are its own leaves; dK accumulates in an fp32 leaf across blocks, exact).
  --dtype bf16: the products in bf16 (torch's bf16 GEMMs, fp32 sums), the softmax and KL in fp32;
  --dtype fp32: every input converted to fp32 inside the timed region.
  One warm-up (the whole problem, or the first --warmup-rows rows), then --reps runs, by the wall clock and by the process's CPU time; prints one JSON
  object (medians, times, loss, peak RSS).
reference: float64 autograd of the same loss for the sample rows (dQ, dW rows and each row's loss
term), independent of both lig and the peer's blocking.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch


# the shape flags and their defaults (DeepSeek-V3.2's training shape)
SHAPE_DEFAULTS = {"seq": 4096, "heads": 128, "dm": 512, "dr": 64, "idx_heads": 64, "dim": 128, "topk": 2048}


def shape_args(ap):
    for name, default in SHAPE_DEFAULTS.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)


def scale_of(a):
    return 1.0 / float(a.dm + a.dr) ** 0.5


def save_bf16(path, t):
    t.contiguous().to(torch.bfloat16).view(torch.int16).numpy().tofile(path)


def load(data, name, dtype, shape):
    path = os.path.join(data, name)
    if dtype == "bf16":
        return torch.from_numpy(np.fromfile(path, dtype=np.int16)).view(torch.bfloat16).reshape(shape)
    np_dt = {"i32": np.int32, "f32": np.float32}[dtype]
    return torch.from_numpy(np.fromfile(path, dtype=np_dt)).reshape(shape)


def load_inputs(a):
    S, N1, Dm, Dr, Ni, D, K = a.seq, a.heads, a.dm, a.dr, a.idx_heads, a.dim, a.topk
    x = {
        "q": load(a.data, "query.bin", "bf16", (S, N1, Dm)),
        "k": load(a.data, "key.bin", "bf16", (S, Dm)),
        "qi": load(a.data, "query_index.bin", "bf16", (S, Ni, D)),
        "ki": load(a.data, "key_index.bin", "bf16", (S, D)),
        "w": load(a.data, "weights.bin", "bf16", (S, Ni)),
        "idx": load(a.data, "sparse_indices.bin", "i32", (S, K)).long(),
        "smax": load(a.data, "softmax_max.bin", "f32", (S, N1)),
        "ssum": load(a.data, "softmax_sum.bin", "f32", (S, N1)),
    }
    x["qr"] = load(a.data, "query_rope.bin", "bf16", (S, N1, Dr)) if Dr else torch.zeros(S, N1, 0, dtype=torch.bfloat16)
    x["kr"] = load(a.data, "key_rope.bin", "bf16", (S, Dr)) if Dr else torch.zeros(S, 0, dtype=torch.bfloat16)
    return x


def rows_per_block(a, itemsize):
    """The largest per-block tensors: gathered keys [rows, K, Dm+Dr] and scores [rows, N1, K]."""
    per_row = a.topk * max((a.dm + a.dr) * itemsize, a.heads * 4)
    return int(max(8, min(a.seq, (a.block_mib << 20) // per_row)))


# ---- prepare ---------------------------------------------------------------------------------

def prepare(a):
    S, N1, Dm, Dr, Ni, D, K = a.seq, a.heads, a.dm, a.dr, a.idx_heads, a.dim, a.topk
    g = torch.Generator().manual_seed(0)
    bf = torch.bfloat16
    qi = torch.randn(S, Ni, D, generator=g).to(bf)
    ki = torch.randn(S, D, generator=g).to(bf)
    w = (torch.randn(S, Ni, generator=g) * (Ni ** -0.5) * (D ** -0.5)).to(bf)
    k = torch.randn(S, Dm, generator=g)
    k[:, :min(D, Dm)] += ki.float()[:, :min(D, Dm)]
    k = k.to(bf)
    q = torch.empty(S, N1, Dm, dtype=bf)
    heads = torch.arange(N1) % Ni
    for r0 in range(0, S, 256):  # in blocks: the fp32 temporaries stay small
        r1 = min(S, r0 + 256)
        blk = 2.0 * torch.randn(r1 - r0, N1, Dm, generator=g)
        blk[:, :, :min(D, Dm)] += qi[r0:r1, heads, :min(D, Dm)].float()
        q[r0:r1] = blk.to(bf)
    qr = torch.randn(S, N1, Dr, generator=g).to(bf)
    kr = torch.randn(S, Dr, generator=g).to(bf)
    scale = scale_of(a)

    # causal top-K of the indexer's scores (the selection has no gradient; bf16 products suffice)
    idx = torch.full((S, K), -1, dtype=torch.int32)
    for r0 in range(0, S, 64):
        r1 = min(S, r0 + 64)
        L = r1
        s = torch.einsum("thd,sd->ths", qi[r0:r1], ki[:L]).float().clamp_min_(0)
        I = torch.einsum("ths,th->ts", s, w[r0:r1].float())
        I.masked_fill_(torch.arange(L)[None, :] > torch.arange(r0, r1)[:, None], float("-inf"))
        kk = min(K, L)
        val, ind = I.topk(kk, dim=1)
        ind = torch.where(torch.isinf(val), torch.full_like(ind, -1), ind)
        idx[r0:r1, :kk] = ind.to(torch.int32)

    # the main attention's statistics over the selected slots
    kf = torch.cat([k, kr], 1)
    smax = torch.empty(S, N1)
    ssum = torch.empty(S, N1)
    for r0 in range(0, S, 32):
        r1 = min(S, r0 + 32)
        kk = min(K, r1)
        ic = idx[r0:r1, :kk].long()
        valid = (ic >= 0) & (ic <= torch.arange(r0, r1)[:, None])
        keys = kf[ic.clamp_min(0)]
        qf = torch.cat([q[r0:r1], qr[r0:r1]], 2)
        logits = torch.bmm(qf.float(), keys.float().transpose(1, 2)) * scale  # fp32: exact products
        logits.masked_fill_(~valid[:, None, :], float("-inf"))
        m = logits.amax(2)
        smax[r0:r1] = m
        ssum[r0:r1] = torch.exp(logits - m[:, :, None]).sum(2)

    os.makedirs(a.out, exist_ok=True)
    for name, t in (("query", q), ("key", k), ("query_rope", qr), ("key_rope", kr), ("query_index", qi),
                    ("key_index", ki), ("weights", w)):
        save_bf16(os.path.join(a.out, name + ".bin"), t)
    idx.numpy().tofile(os.path.join(a.out, "sparse_indices.bin"))
    smax.numpy().tofile(os.path.join(a.out, "softmax_max.bin"))
    ssum.numpy().tofile(os.path.join(a.out, "softmax_sum.bin"))
    print(json.dumps({"scale": scale, "dir": a.out}))


# ---- the peer --------------------------------------------------------------------------------

def peer_step(a, x, cd, rows_limit=None):
    """One full loss + backward from the input tensors (the first rows_limit rows only when given:
    the warm-up); returns (loss, dq, dk, dw)."""
    S, K = min(a.seq, rows_limit or a.seq), a.topk
    scale = scale_of(a)
    f32 = torch.float32
    kf = torch.cat([x["k"], x["kr"]], 1).to(cd)
    ki = x["ki"].to(f32).requires_grad_()  # dK accumulates in fp32 across blocks
    qi_all, w_all = x["qi"].to(cd), x["w"].to(cd)
    dq = torch.empty_like(qi_all)
    dw = torch.empty_like(w_all)
    total = torch.zeros((), dtype=torch.float64)
    rows = rows_per_block(a, 2 if cd == torch.bfloat16 else 4)
    for r0 in range(0, S, rows):
        r1 = min(S, r0 + rows)
        kk = min(K, r1)
        ic = x["idx"][r0:r1, :kk]
        valid = (ic >= 0) & (ic <= torch.arange(r0, r1)[:, None])
        ic = ic.clamp_min(0)
        with torch.no_grad():
            keys = kf[ic]                                              # [rows, K', Dm+Dr]
            qf = torch.cat([x["q"][r0:r1], x["qr"][r0:r1]], 2).to(cd)   # [rows, N1, Dm+Dr]
            s = torch.bmm(qf, keys.transpose(1, 2)).float()             # [rows, N1, K']
            P = torch.exp(s * scale - x["smax"][r0:r1, :, None]) / x["ssum"][r0:r1, :, None]
            p = P.mean(1).masked_fill_(~valid, 0.0)                     # head_mean target
        qi = qi_all[r0:r1].detach().requires_grad_()
        w = w_all[r0:r1].detach().requires_grad_()
        kg = ki[ic].to(cd)                                              # [rows, K', D]
        sc = torch.bmm(qi, kg.transpose(1, 2)).float().relu()          # [rows, Nidx1, K']
        I = torch.einsum("thk,th->tk", sc, w.float()).masked_fill(~valid, float("-inf"))
        logy = torch.log_softmax(I, 1).masked_fill(~valid, 0.0)
        loss = (torch.xlogy(p, p) - p * logy).sum()
        loss.backward()
        dq[r0:r1] = qi.grad
        dw[r0:r1] = w.grad
        total += loss.detach().double()
    return float(total), dq, ki.grad, dw


def peer(a):
    torch.set_num_threads(a.threads)
    x = load_inputs(a)
    cd = {"bf16": torch.bfloat16, "fp32": torch.float32}[a.dtype]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, cpu = [], []
    for r in range(a.reps + 1):  # r = 0: the warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        loss, dq, dk, dw = peer_step(a, x, cd, None if r else a.warmup_rows)
        t1, c1 = time.perf_counter(), time.process_time()
        if r:
            times.append(t1 - t0)
            cpu.append(c1 - c0)  # CPU seconds of all threads (a shared machine's wall clock counts others)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if a.dump:
        tag = "peer_" + a.dtype
        dq.float().numpy().tofile(os.path.join(a.data, tag + "_dq.bin"))
        dk.float().numpy().tofile(os.path.join(a.data, tag + "_dk.bin"))
        dw.float().numpy().tofile(os.path.join(a.data, tag + "_dw.bin"))
    print(json.dumps({"dtype": a.dtype, "threads": a.threads, "reps": a.reps, "median_s": statistics.median(times),
                      "min_s": min(times), "times": times,
                      "median_cpu_s": statistics.median(cpu), "cpu_times": cpu, "loss": loss, "peak_rss_kib": rss,
                      "rss_before_kib": rss_before, "rows_per_block": rows_per_block(a, 2 if a.dtype == "bf16" else 4),
                      "torch": torch.__version__}))


# ---- float64 reference for sample rows -------------------------------------------------------

def reference(a):
    x = load_inputs(a)
    scale = scale_of(a)
    f64 = torch.float64
    kf = torch.cat([x["k"], x["kr"]], 1).to(f64)
    out = {}
    for t in [int(v) for v in a.rows.split(",")]:
        ic = x["idx"][t]
        valid = (ic >= 0) & (ic <= t)
        ic = ic[valid]
        qf = torch.cat([x["q"][t], x["qr"][t]], 1).to(f64)
        s = qf @ kf[ic].T                                               # [N1, n]
        P = torch.exp(s * scale - x["smax"][t, :, None].to(f64)) / x["ssum"][t, :, None].to(f64)
        p = P.mean(0)
        qi = x["qi"][t].to(f64).requires_grad_()
        w = x["w"][t].to(f64).requires_grad_()
        I = ((qi @ x["ki"][ic].to(f64).T).relu() * w[:, None]).sum(0)
        logy = torch.log_softmax(I, 0)
        loss = (torch.xlogy(p, p) - p * logy).sum()
        loss.backward()
        out[str(t)] = {"loss": float(loss.detach()), "sum_p": float(p.sum()), "dq": qi.grad.flatten().tolist(),
                       "dw": w.grad.tolist()}
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    shape_args(p)
    p = sub.add_parser("peer")
    p.add_argument("--data", required=True)
    p.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--block-mib", type=int, default=256)
    p.add_argument("--dump", action="store_true")
    p.add_argument("--warmup-rows", type=int, default=None,
                   help="the warm-up runs the first rows only (torch's first-call costs), not the whole problem")
    shape_args(p)
    p = sub.add_parser("reference")
    p.add_argument("--data", required=True)
    p.add_argument("--rows", required=True)
    shape_args(p)
    a = ap.parse_args()
    {"prepare": prepare, "peer": peer, "reference": reference}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
