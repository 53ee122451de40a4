"""Worker of test_distributed.py (a module of its own so that spawned processes can import it)."""
import torch
import torch.distributed as dist

import lig
from _reference import grid
from _tol import EPS, TINY, accumulated, assert_within, reference_grad_bounds


def _rows(S1, world, rank):
    return S1 * rank // world, S1 * (rank + 1) // world


def _gather_rows(x, S1, world):
    width = max(_rows(S1, world, r)[1] - _rows(S1, world, r)[0] for r in range(world))
    pad = torch.zeros((x.shape[0], width) + tuple(x.shape[2:]), dtype=x.dtype)
    pad[:, : x.shape[1]] = x
    parts = [torch.empty_like(pad) for _ in range(world)]
    dist.all_gather(parts, pad)
    return torch.cat([p[:, : _rows(S1, world, r)[1] - _rows(S1, world, r)[0]] for r, p in enumerate(parts)], 1)


def _problem(cfg):
    gen = torch.Generator().manual_seed(cfg["seed"])
    B, S1, S2, N1, N2, D, K = (cfg[n] for n in ("B", "S1", "S2", "N1", "N2", "D", "K"))
    make = (lambda s: grid(gen, s)) if cfg["grid"] else (lambda s: torch.randn(s, generator=gen, dtype=torch.float64))
    q, k, w = make((B, S1, N1, D)), make((B, S2, N2, D)), make((B, S1, N1))
    dt = cfg["dtype"]
    return q.to(dt), k.to(dt), w.to(dt)


def _step(q, k, w, cfg, aq=None, ak=None):
    """forward (top-k) -> dy (a fixed function of the selected key) -> backward, for q's rows."""
    kw = dict(actual_seq_lengths_query=aq, actual_seq_lengths_key=ak, sparse_mode=3, pre_tokens=cfg["pre"])
    idx, val = lig.indexer(q, k, w, cfg["K"], values_dtype=torch.float32, **kw)
    dq, dk, dw = lig.indexer_grad(q, k, _dy(idx, q.dtype), idx, w, deterministic=cfg["det"], **kw)
    return idx, val, dq, dk, dw


def _dy(idx, dtype):
    """dy: a fixed function of the selected key (NaN in padded slots, which nobody reads)."""
    return torch.where(idx >= 0, ((idx.long() * 7) % 9 - 4).to(torch.float32) / 8,
                       torch.full((), float("nan"))).to(dtype)


CONFIGS = [
    # grid data: every fp32 sum is exact, so even the all-reduced dK is bitwise equal
    dict(B=2, S1=24, S2=40, N1=4, N2=1, D=16, K=8, grid=True, dtype=torch.float32, det=True, pre=lig.INT64_MAX),
    dict(B=1, S1=33, S2=33, N1=6, N2=2, D=12, K=5, grid=True, dtype=torch.float32, det=False, pre=9),
    # Gaussian data: dK differs from one process by the order of its fp32 additions (a few ulps)
    dict(B=2, S1=32, S2=64, N1=8, N2=1, D=32, K=16, grid=False, dtype=torch.float32, det=True, pre=lig.INT64_MAX),
    dict(B=1, S1=40, S2=48, N1=4, N2=2, D=24, K=12, grid=False, dtype=torch.bfloat16, det=False, pre=20),
]


def shutdown():
    """Leaves the process group so that no gloo thread outlives the interpreter.

    Without the barrier and the collection, a gloo worker thread can still be releasing the last
    collective's tensors while Python finalizes; it then needs the GIL and the process aborts
    ("terminate called without an active exception") -- a PyTorch shutdown race, not lig's.
    """
    import gc

    dist.barrier()
    dist.destroy_process_group()
    gc.collect()


def worker(rank, world, init_method):
    import datetime

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    lig.set_num_threads(1)
    gathered = []
    for n, cfg in enumerate(CONFIGS):
        c = {**cfg, "seed": n}
        q, k, w = _problem(c)
        B, S1, S2 = q.shape[0], q.shape[1], k.shape[1]
        r0, r1 = _rows(S1, world, rank)
        # this rank's rows (views); the keys up to the slice's end are the whole key tensor
        idx, val, dq, dk, dw = _step(q[:, r0:r1], k, w[:, r0:r1], c, [r1 - r0] * B, [S2 - S1 + r1] * B)
        dk = dk.float()
        dist.all_reduce(dk)
        idx, val, dq, dw = (_gather_rows(t.float() if t.is_floating_point() else t, S1, world)
                            for t in (idx, val, dq, dw))
        gathered.append((c, q, k, w, idx, val, dq, dk, dw))
    shutdown()
    if rank != 0:
        return
    lig.set_num_threads(2)
    for n, (c, q, k, w, idx, val, dq, dk, dw) in enumerate(gathered):
        r_idx, r_val, r_dq, r_dk, r_dw = _step(q, k, w, c)
        where = f"config {n} ({c['dtype']}, grid={c['grid']}, det={c['det']})"
        assert torch.equal(idx, r_idx), f"{where}: indices"
        assert torch.equal(val, r_val), f"{where}: values"
        assert torch.equal(dq, r_dq.float()), f"{where}: dQ not bitwise equal"
        assert torch.equal(dw, r_dw.float()), f"{where}: dW not bitwise equal"
        assert r_dk.abs().max() > 0
        if c["grid"]:
            assert torch.equal(dk, r_dk.float()), f"{where}: dK not bitwise equal on exact data"
        else:
            # each rank: its part of the sum accumulated in fp32 and rounded into the dtype (at most
            # eps |part| + the fp32 bound of its terms); then the parts added in fp32 (world - 1
            # more roundings on every path). The parts may cancel, so their roundings are bounded
            # by eps * abs (sum of the parts' |terms|) rather than eps |dK|.
            ref, abs_sum, n = reference_grad_bounds("BSND", q, k, _dy(r_idx, q.dtype), r_idx, w, None, None, 3,
                                                    c["pre"], lig.INT64_MAX)[1]
            dt = c["dtype"]
            bound = EPS[dt] * abs_sum + accumulated(n + world, abs_sum) + world * TINY[dt]
            assert_within(dk, ref, bound, f"{where}: dK summed over the ranks", abs_sum)
