"""Context parallelism for the lightning indexer with lig and torch.distributed.

Each rank holds a contiguous slice [r0, r1) of the query rows (and the whole key sequence). With
sparse_mode 3 (right-down causal) the slice's rows are aligned against the keys up to the slice's
end, so a rank runs lig on its slice alone by passing, per batch,

    actual_seq_lengths_query = r1 - r0          (the slice's rows)
    actual_seq_lengths_key   = S2 - S1 + r1     (the keys up to the slice's end)

and the key tensor as it is (nothing copied: the later keys simply do not exist for the slice).
Every rank then runs forward (top-k) -> fused KL step -> backward on its rows; dK is a sum over
query rows, so the ranks all-reduce it; dQ and dW are row-local and are all-gathered.

Which results are bitwise equal to one process computing all rows:
  * indices, values, loss terms, dy, dQ and dW: always (each row's work is independent of the
    others and of the thread count);
  * dK: each rank sums its rows' contributions in fp32, and the all-reduce adds those partial sums,
    which is a different order of floating-point additions than one process summing all rows:
    equal to rounding (a few ulps); bitwise when the sums are exact (grid data, see the tests).

    python context_parallel.py [--world-size 2] [--keys 1024] [--queries 256] [--heads 16] ...
    torchrun --nproc-per-node 2 context_parallel.py ...
"""
from __future__ import annotations

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import lig


def shard(S1: int, world: int, rank: int):
    """The contiguous rows [r0, r1) rank `rank` holds."""
    bounds = [S1 * i // world for i in range(world + 1)]
    return bounds[rank], bounds[rank + 1]


def all_gather_rows(x: torch.Tensor, S1: int, world: int) -> torch.Tensor:
    """Concatenates the ranks' row slices (dim 1) in rank order (gloo needs equal sizes: pad)."""
    width = max(shard(S1, world, r)[1] - shard(S1, world, r)[0] for r in range(world))
    padded = torch.zeros((x.shape[0], width) + tuple(x.shape[2:]), dtype=x.dtype)
    padded[:, : x.shape[1]] = x
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded)
    return torch.cat([p[:, : shard(S1, world, r)[1] - shard(S1, world, r)[0]] for r, p in enumerate(parts)], dim=1)


def problem(args, seed: int):
    """The full problem, identical on every rank: projections of random token features."""
    gen = torch.Generator().manual_seed(seed)
    B, S2, S1, N1, D, F = 2, args.keys, args.queries, args.heads, args.dim, 32
    x = torch.randn(B, S2, F, generator=gen)
    Wq = torch.randn(N1 * D, F, generator=gen) / F**0.5
    Wk = torch.randn(D, F, generator=gen) / F**0.5
    q = (x[:, S2 - S1:] @ Wq.T).view(B, S1, N1, D)
    k = (x @ Wk.T).view(B, S2, 1, D)
    w = torch.rand(B, S1, N1, generator=gen) / (N1 * D) ** 0.5
    teacher = torch.randn(B, S1, S2, generator=gen)  # stands in for the main attention's logits
    return q, k, w, teacher


def train_step(q, k, w, teacher, K, aq=None, ak=None, pre_tokens=lig.INT64_MAX):
    """forward -> KL -> backward for the rows of q (all of them, or a rank's slice)."""
    kw = dict(actual_seq_lengths_query=aq, actual_seq_lengths_key=ak, sparse_mode=3, pre_tokens=pre_tokens)
    idx, val = lig.indexer(q, k, w, K, values_dtype=torch.float32, **kw)
    logits = torch.gather(teacher, 2, idx.long().clamp(min=0)).masked_fill(idx < 0, float("-inf"))
    p = torch.softmax(logits, dim=-1).nan_to_num(0.0)
    loss, dy = lig.indexer_kl_grad(val, p, idx)
    dq, dk, dw = lig.indexer_grad(q, k, dy.to(q.dtype), idx, w, deterministic=True, **kw)
    return idx, loss, dq, dk, dw


def shutdown() -> None:
    """Leaves the process group so that no gloo thread outlives the interpreter (otherwise a gloo
    worker can still be releasing the last collective's tensors while Python finalizes, and the
    process aborts with "terminate called without an active exception")."""
    import gc

    dist.barrier()
    dist.destroy_process_group()
    gc.collect()


def worker(rank: int, world: int, init_method: str, args) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    lig.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    q, k, w, teacher = problem(args, args.seed)
    B, S1, S2 = q.shape[0], q.shape[1], k.shape[1]
    r0, r1 = shard(S1, world, rank)
    # this rank's rows: views, not copies; the keys up to the slice's end are the whole key tensor
    aq, ak = [r1 - r0] * B, [S2 - S1 + r1] * B
    idx, loss, dq, dk, dw = train_step(q[:, r0:r1], k, w[:, r0:r1], teacher[:, r0:r1], args.topk, aq, ak,
                                       args.pre_tokens)
    dist.all_reduce(dk)  # dK: the sum over all ranks' rows
    dist.all_reduce(loss)
    dq, dw, idx = (all_gather_rows(t, S1, world) for t in (dq, dw, idx))
    shutdown()
    if rank != 0:
        return
    # check against one process computing every row
    ref_idx, ref_loss, ref_dq, ref_dk, ref_dw = train_step(q, k, w, teacher, args.topk, pre_tokens=args.pre_tokens)
    same = torch.equal
    err = ((dk - ref_dk).abs().max() / ref_dk.abs().max()).item()
    print(f"{world} ranks x {S1 // world} query rows, {S2} keys, {q.shape[2]} heads, top-k {args.topk}")
    print(f"  indices bitwise equal: {same(idx, ref_idx)} | dQ: {same(dq, ref_dq)} | dW: {same(dw, ref_dw)}")
    print(f"  dK (all-reduced): max |diff| / max |dK| = {err:.2e} (bitwise: {same(dk, ref_dk)})")
    print(f"  loss {loss.item():.6f} vs single process {ref_loss.item():.6f}")
    ok = same(idx, ref_idx) and same(dq, ref_dq) and same(dw, ref_dw) and err < 1e-5
    print("context parallel == single process:", "OK" if ok else "MISMATCH", flush=True)
    if not ok:
        raise SystemExit(1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="lig context parallelism over query rows (gloo)")
    integer_options = {"world-size": 2, "keys": 1024, "queries": 256, "heads": 16, "dim": 64, "topk": 128,
                       "pre-tokens": lig.INT64_MAX, "seed": 0}
    for name, default in integer_options.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    args = ap.parse_args(argv)
    args.queries = min(args.queries, args.keys)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # launched by torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://", args)
        return
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(args.world_size, f"file://{d}/store", args), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()
