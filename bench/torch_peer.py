"""The PyTorch peer: the same LightningIndexerGrad computed the way users write it today.

Dense formulation with autograd: gather the selected keys [S1, K, D], per-head scores
[S1, N1, K], ReLU, weighted sum over heads, then backward of sum(I * dy). Times forward +
backward (autograd needs both to produce the gradient) and reports the peak RSS of the
process. One configuration per process (run by run_bench.py), under an address-space cap so
that running out of memory is an exception, not the kernel's OOM killer.

    python torch_peer.py --seq 2048 --heads 64 --dim 128 --topk 2048 --dtype bf16 --threads 2
"""
import argparse
import json
import resource
import statistics
import sys
import time


def make_indices(torch, S, K, gen):
    """Row t selects min(t+1, K) distinct causal keys, then -1: the counts lig-bench uses."""
    idx = torch.full((S, K), -1, dtype=torch.int64)
    chunk = 256
    for t0 in range(0, S, chunk):
        t1 = min(S, t0 + chunk)
        rows = torch.arange(t0, t1)
        noise = torch.rand((t1 - t0, S), generator=gen)
        noise[torch.arange(S)[None, :] > rows[:, None]] = -1.0  # not visible
        take = min(K, S)
        top = torch.topk(noise, take, dim=1).indices
        valid = torch.gather(noise, 1, top) >= 0
        idx[t0:t1, :take] = torch.where(valid, top, torch.full_like(top, -1))
    return idx


def run(args):
    import torch

    torch.set_num_threads(args.threads)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    gen = torch.Generator().manual_seed(0)
    S, N1, D, K = args.seq, args.heads, args.dim, args.topk
    q = (torch.rand((S, N1, D), generator=gen) * 2 - 1).to(dtype).requires_grad_()
    k = (torch.rand((S, D), generator=gen) * 2 - 1).to(dtype).requires_grad_()
    w = (torch.rand((S, N1), generator=gen) * 0.05).to(dtype).requires_grad_()
    dy = ((torch.rand((S, K), generator=gen) * 2 - 1) * 0.01).to(dtype)
    idx = make_indices(torch, S, K, gen)
    mask = idx >= 0
    counted = int(mask.sum())
    safe = idx.clamp(min=0)

    def step():
        q.grad = k.grad = w.grad = None
        kg = k[safe]                                     # [S, K, D]
        s = torch.einsum("thd,tkd->thk", q, kg)          # [S, N1, K]
        index_scores = (torch.relu(s) * w[:, :, None]).sum(dim=1)  # [S, K]
        index_scores = torch.where(mask, index_scores, torch.zeros_like(index_scores))
        (index_scores * dy).sum().backward()

    times = []
    for rep in range(args.reps + 1):
        t0 = time.perf_counter()
        step()
        dt = time.perf_counter() - t0
        if rep > 0:  # the first run is the warm-up
            times.append(dt)
    median = statistics.median(times)
    G = N1  # one key head
    return {
        "ok": True,
        "median_s": median,
        "gflops": 6.0 * G * D * counted / median * 1e-9,
        "counted_slots": counted,
        "torch_version": torch.__version__,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--topk", type=int, default=2048)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--mem-limit-gib", type=float, default=20.0)
    args = p.parse_args()
    limit = int(args.mem_limit_gib * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out = {"S": args.seq, "N1": args.heads, "D": args.dim, "K": args.topk, "dtype": args.dtype,
           "threads": args.threads}
    try:
        out.update(run(args))
    except (RuntimeError, MemoryError) as e:  # allocation failures under the cap
        out.update({"ok": False, "error": "out of memory: " + str(e).splitlines()[0][:200]})
    out["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
