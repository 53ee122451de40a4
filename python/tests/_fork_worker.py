"""Worker of test_fork.py: the calls the parent and its children make (a module of its own so that
spawned children can import it)."""
import torch

import lig
from _reference import grid


def child_init():
    """torch's own intra-op pool (OpenMP) does not survive a fork: a forked child's first parallel
    torch op hangs. torch's DataLoader workers run at 1 torch thread for that reason; so do these
    children, whose lig calls keep their 2 threads (lig.set_num_threads below)."""
    torch.set_num_threads(1)


def run_ops():
    """Forward, backward and KL step on 2 threads; a problem large enough to be split over both
    (the children must use lig's thread pool, which a fork leaves without its threads)."""
    lig.set_num_threads(2)
    gen = torch.Generator().manual_seed(11)
    B, S, N1, D, K = 2, 96, 8, 64, 24
    q = torch.randn(B, S, N1, D, generator=gen).to(torch.bfloat16)
    k = torch.randn(B, S, 1, D, generator=gen).to(torch.bfloat16)
    w = (torch.randn(B, S, N1, generator=gen) / 8).to(torch.bfloat16)
    idx, val = lig.indexer(q, k, w, K, values_dtype=torch.float32)
    dy = grid(gen, idx.shape).to(torch.bfloat16)
    grads = lig.indexer_grad(q, k, dy, idx, w, deterministic=True)
    target = torch.softmax(val.masked_fill(idx < 0, float("-inf")) * 0.5, -1)
    loss, kl_dy = lig.indexer_kl_grad(val, target, idx)
    return (idx, val, *grads, loss, kl_dy)
