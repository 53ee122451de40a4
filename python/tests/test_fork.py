"""lig in child processes (docs/contract.md: fork safety) and under the caller's floating-point mode.

A forked child inherits lig's thread pool state but none of its threads: the library must not wait
for them. Python programs fork through multiprocessing, DataLoader workers and process pools that
compute golden data; spawn is the other start method they use. In both, the children's results must
be those of the parent, bit for bit (deterministic=True, the same thread count)."""
import multiprocessing

import pytest
import torch

import lig
import _fork_worker

# A hung child fails the test after this long instead of blocking the suite (a child's calls take
# well under a second; a spawned child imports torch first).
CHILD_TIMEOUT_S = 60


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_children_match_the_parent(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"SKIPPED test_children_match_the_parent: no {method} start method on this platform")
    # The parent's pool has run (its threads exist) when the children are forked.
    expected = _fork_worker.run_ops()
    pool = multiprocessing.get_context(method).Pool(2, initializer=_fork_worker.child_init)
    try:
        pending = [pool.apply_async(_fork_worker.run_ops) for _ in range(2)]
        try:
            results = [p.get(timeout=CHILD_TIMEOUT_S) for p in pending]
        except multiprocessing.TimeoutError:
            pytest.fail(f"a {method} child did not finish lig's calls within {CHILD_TIMEOUT_S} s (hang)")
    finally:
        pool.terminate()
        pool.join()
    names = ("indices", "values", "d_query", "d_key", "d_weights", "loss", "kl dy")
    for child, got in enumerate(results):
        for name, e, g in zip(names, expected, got):
            assert e.dtype == g.dtype and torch.equal(e, g), f"{method} child {child}: {name} differs from the parent's"
    # and the parent's pool still works after the fork
    for name, e, g in zip(names, expected, _fork_worker.run_ops()):
        assert torch.equal(e, g), f"parent after {method}: {name}"


def _tiny_problem():
    """Normal fp32 inputs whose products are subnormal (1e-20 * 1e-20 = 1e-40 < 2^-126): with
    flush-to-zero or denormals-are-zero on lig's threads the scores q.k, hence the values, dW and
    (through the ReLU's S > 0) dQ and dK, and the KL step's dy would be 0."""
    gen = torch.Generator().manual_seed(3)
    B, S, N1, D, K = 1, 64, 4, 16, 8
    q = torch.rand(B, S, N1, D, generator=gen) * 1e-20
    k = torch.rand(B, S, 1, D, generator=gen) * 1e-20
    w = torch.rand(B, S, N1, generator=gen) + 0.5
    dy = torch.rand(B, S, K, generator=gen)
    idx = (torch.rand(B, S, K, generator=gen) * torch.arange(1, S + 1).view(1, S, 1)).floor().to(torch.int32)
    values = torch.zeros(B, S, K)
    # targets: subnormal fp32 values (as input and as dy = softmax * mass - target)
    target = torch.rand(B, S, K, generator=gen) * 1e-39
    return q, k, w, dy, idx, values, target


def _tiny_results(problem):
    q, k, w, dy, idx, values, target = problem
    lig.set_num_threads(2)
    try:
        out = lig.indexer(q, k, w, 8)
        grads = lig.indexer_grad(q, k, dy, idx, w)
        kl = lig.indexer_kl_grad(values, target, idx)
    finally:
        lig.set_num_threads(0)
    return (*out, *grads, *kl)


def _flushes() -> bool:
    """Whether this thread flushes subnormal results (torch's small CPU ops run on the caller)."""
    tiny = torch.tensor([1e-20], dtype=torch.float32)
    return (tiny * tiny).item() == 0.0


def test_callers_flush_denormal_changes_nothing():
    """torch.set_flush_denormal(True) sets FTZ/DAZ on the calling thread; lig computes with the
    default floating-point mode on every thread of a call and leaves the caller's mode as it was."""
    problem = _tiny_problem()  # made once, before the flush: torch's own ops would flush the targets
    plain = _tiny_results(problem)
    names = ("indices", "values", "d_query", "d_key", "d_weights", "loss", "kl dy")
    # the data do exercise subnormals: these results have elements below the normal range, and
    # dQ and dK (normal) are nonzero only where a subnormal score passed the ReLU
    result = dict(zip(names, plain))
    for name in ("values", "d_weights", "kl dy"):
        r = result[name][torch.isfinite(result[name])].abs()
        assert ((r > 0) & (r < torch.finfo(torch.float32).tiny)).any(), f"{name}: no subnormal result"
    assert result["d_query"].any() and result["d_key"].any()
    if not torch.set_flush_denormal(True):
        pytest.skip("SKIPPED test_callers_flush_denormal_changes_nothing: torch.set_flush_denormal unsupported")
    try:
        assert _flushes()
        flushed = _tiny_results(problem)
        still_on = _flushes()
    finally:
        torch.set_flush_denormal(False)
    assert not _flushes()
    for name, a, b in zip(names, plain, flushed):
        assert torch.equal(a, b), f"{name} changed under the caller's flush-denormal setting"
    assert still_on, "lig's call turned the caller's flush-denormal setting off"
