"""The PyTorch peer of the quantized forward: what an inference engine falls back to on the
CPU, on the very inputs lig-quant-bench / lig-decode-bench dumped (--dump DIR). run_quant_bench.py
drives it.

    python quant_peer.py prefill --data DIR --seq S [--dump-rows R] [--rows r] [common]
    python quant_peer.py decode  --data DIR --batch 1,16 --ctx 8192,65536 --next-n 1,2 [common]
    common: --forms fp8,int8 --variants bf16,fp32 --threads 1,2 --reps 3 [--fp32-reps n] [--warmup 1]
            [--chunk-elems 16777216]   (every combination of the lists, one process)

Inputs (raw files, see the benches' headers): q codes [rows, N1, D] (FLOAT8_E4M3FN or INT8), the key
cache's codes [keys, D] and fp32 scales [keys], the fp32 weights [rows, N1] with the query scales
folded in (as DeepSeek does), and lig's selections (quantized and bf16) of the same inputs.

The formulation (DeepSeek's reference indexer, as SGLang's CPU fallback runs it), timed from the
codes to the top-k indices, in blocks of query rows so that the logits stay bounded (about
--chunk-elems fp32 values per block; a block of rows scores only the keys its last row sees):
    k = k_codes.to(dt) * k_scale[:, None]              (dequantize: the key cache, every call)
    q = q_codes.to(dt)                                 (the query scales are in the weights)
    logits = relu(q.reshape(rows * N1, D) @ k.T)       (dt matmul)
    I = sum_h w[:, h] * logits[:, h, :]                (a batched [1 x N1] @ [N1 x keys] product, fp32)
    I = -inf where key > the row's last visible key;  topk(I, min(K, visible)), -1 past it
dt: bf16 (torch's bf16 GEMM, its bf16 output) or fp32 (every operand converted to fp32). Decode runs
the same per sequence (its next_n rows against its C keys). Each variant: --warmup untimed runs, then
--reps timed, by the wall clock and by the process's CPU time; torch.set_num_threads(threads).

Printed per (variant, threads), one JSON object per line: the times and their medians, and the
agreement of the peer's selection with lig's on the same quantized inputs (agree_lig: the mean over
the rows that see more than K keys of |peer & lig| / K; below 1 only where scores tie or the bf16
rounding of the keys and logits reorders keys near the cut) and its recall against lig's bf16
selection (recall_bf16, the quality an engine's fallback gets).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

N1, D, K = 64, 128, 2048


def load(path, dtype, shape):
    if not os.path.exists(path):
        sys.exit("%s: missing; dump the inputs first (lig-quant-bench / lig-decode-bench --dump DIR with the same shape)" % path)
    a = np.fromfile(path, dtype=dtype)
    want = int(np.prod(shape))
    if a.size != want:
        sys.exit("%s: %d values, expected %d (shape %s): the dump does not match these flags" % (path, a.size, want, shape))
    return torch.from_numpy(a).reshape(shape)


def codes(t, form):
    return t.view(torch.float8_e4m3fn) if form == "fp8" else t.view(torch.int8)


def select(q, k_codes, k_scale, w, first_visible, dt, chunk_elems):
    """q: [rows, N1, D] codes; row i sees keys [0, first_visible + i). Returns int32 [rows, K]."""
    rows = q.shape[0]
    k = k_codes.to(dt) * k_scale.to(dt)[:, None]
    out = torch.full((rows, K), -1, dtype=torch.int32)
    block = max(1, chunk_elems // (N1 * (first_visible + rows)))
    for r0 in range(0, rows, block):
        r1 = min(rows, r0 + block)
        keys = first_visible + r1 - 1
        logits = torch.relu(q[r0:r1].to(dt).reshape((r1 - r0) * N1, D) @ k[:keys].T)
        scores = torch.bmm(w[r0:r1, None, :], logits.view(r1 - r0, N1, keys).float()).squeeze(1)
        vis = first_visible + torch.arange(r0, r1)
        scores.masked_fill_(torch.arange(keys)[None, :] >= vis[:, None], float("-inf"))
        n = min(K, keys)
        val, idx = torch.topk(scores, n, dim=1)
        idx = idx.to(torch.int32)
        idx[val == float("-inf")] = -1
        out[r0:r1, :n] = idx
    return out


def agreement(got, want, visible):
    """mean over the rows that see more than K keys of |got & want| / |want|"""
    rates = []
    for i in np.nonzero(visible > K)[0]:
        w = want[i][want[i] >= 0]
        rates.append(np.isin(w, got[i]).mean() if w.size else 1.0)
    return float(np.mean(rates)) if rates else 1.0


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return out, wall, cpu


def problems(a, f):
    """(shape, run(dt), lig's quantized selection, lig's bf16 selection, visible keys per row) per shape asked."""
    if a.mode == "prefill":
        S = a.seq
        R = a.dump_rows or S
        rows = min(a.rows or R, R)
        pre = os.path.join(a.data, "prefill-S%d-R%d-" % (S, R))
        q = codes(load(pre + f + "-q.u8", np.uint8, (R, N1, D)), f)[R - rows:]
        k = codes(load(pre + f + "-k.u8", np.uint8, (S, D)), f)
        sk = load(pre + f + "-sk.f32", np.float32, (S,))
        w = load(pre + f + "-w.f32", np.float32, (R, N1))[R - rows:]
        lig_q = load(pre + f + "-idx.i32", np.int32, (R, K)).numpy()[R - rows:]
        lig_b = load(pre + "bf16-idx.i32", np.int32, (R, K)).numpy()[R - rows:]
        first = S - rows + 1
        yield ({"S": S, "rows": rows}, lambda dt: select(q, k, sk, w, first, dt, a.chunk_elems), lig_q, lig_b,
               first + np.arange(rows))
        return
    for B in (int(x) for x in a.batch.split(",")):
        for C in (int(x) for x in a.ctx.split(",")):
            pre = os.path.join(a.data, "decode-B%d-C%d-" % (B, C))
            k = codes(load(pre + f + "-k.u8", np.uint8, (B, C, D)), f)
            sk = load(pre + f + "-sk.f32", np.float32, (B, C))
            for n in (int(x) for x in a.next_n.split(",")):
                pre_n = pre + "n%d-" % n
                q = codes(load(pre_n + f + "-q.u8", np.uint8, (B, n, N1, D)), f)
                w = load(pre_n + f + "-w.f32", np.float32, (B, n, N1))
                lig_q = load(pre_n + f + "-idx.i32", np.int32, (B * n, K)).numpy()
                lig_b = load(pre_n + "bf16-idx.i32", np.int32, (B * n, K)).numpy()
                first = C - n + 1
                run = lambda dt, q=q, k=k, sk=sk, w=w, first=first, B=B: torch.cat(
                    [select(q[b], k[b], sk[b], w[b], first, dt, a.chunk_elems) for b in range(B)])
                yield {"B": B, "ctx": C, "next_n": n}, run, lig_q, lig_b, np.tile(first + np.arange(n), B)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["prefill", "decode"])
    ap.add_argument("--data", required=True)
    ap.add_argument("--forms", default="fp8,int8")
    ap.add_argument("--seq", type=int, help="prefill: S")
    ap.add_argument("--dump-rows", type=int, help="prefill: the rows in the dump (lig-quant-bench --rows; default S)")
    ap.add_argument("--rows", type=int, help="prefill: the last rows of the dump run (default all)")
    ap.add_argument("--batch", default="1", help="decode: B, a list")
    ap.add_argument("--ctx", default="65536", help="decode: C, a list")
    ap.add_argument("--next-n", default="1", help="decode: next_n, a list")
    ap.add_argument("--variants", default="bf16,fp32")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fp32-reps", type=int, default=None, help="timed runs of the fp32 variant (default --reps)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--chunk-elems", type=int, default=1 << 24, help="fp32 logits per block of rows")
    a = ap.parse_args()
    dts = {"bf16": torch.bfloat16, "fp32": torch.float32}
    for f in a.forms.split(","):
        for shape, run, lig_q, lig_b, visible in problems(a, f):
            for t in [int(x) for x in a.threads.split(",")]:
                torch.set_num_threads(t)
                for v in a.variants.split(","):
                    reps = a.fp32_reps if v == "fp32" and a.fp32_reps else a.reps
                    with torch.no_grad():
                        out, wall, cpu = timed(lambda: run(dts[v]), a.warmup, reps)
                    got = out.numpy()
                    res = dict(peer=a.mode, form=f, variant=v, threads=t, **shape, wall_s=wall, cpu_s=cpu,
                               wall_median=statistics.median(wall), cpu_median=statistics.median(cpu),
                               agree_lig=agreement(got, lig_q, visible), recall_bf16=agreement(got, lig_b, visible),
                               torch=torch.__version__)
                    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
