"""Context parallelism: query rows split over 2 gloo processes == one process (see _cp_worker)."""
import os

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

import _cp_worker


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed gloo")
def test_context_parallel_matches_single_process(tmp_path):
    """Each rank holds a contiguous slice of the query rows (sparse_mode 3: the slice aligned against
    the keys up to its end, via actual_seq_lengths_query/_key); dK all-reduced, dQ/dW gathered.

    indices, values, dQ and dW are bitwise equal to the single process (they are row-local); dK is
    bitwise equal on grid data (exact sums) and equal to a few ulps otherwise (the all-reduce adds
    per-rank partial sums, a different order of fp32 additions)."""
    mp.spawn(_cp_worker.worker, args=(2, f"file://{os.fspath(tmp_path)}/store"), nprocs=2, join=True)
