"""CUDA tensors (docs/contract.md 6.5, docs/cuda.md): the same ops on the GPU, run on
torch.cuda.current_stream(), compared with the CPU backend. Each test needs a CUDA device and a
liblig built with -DLIG_CUDA=ON (pip install ./python -Ccmake.define.LIG_CUDA=ON); without them it
is skipped by name, with the reason."""
import pytest
import torch

import lig
from _reference import reference_kl
from _tol import assert_kl_within

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="SKIPPED test_cuda: no CUDA device")


def _grid(shape, gen, dtype):
    # multiples of 1/8: every fp32 sum is exact, so both backends agree bit for bit
    return (torch.randint(-8, 9, shape, generator=gen).float() / 8).to(dtype)


def _case(dtype, S=9, N1=4, D=16, K=5):
    gen = torch.Generator().manual_seed(0)
    q = _grid((2, S, N1, D), gen, dtype)
    k = _grid((2, S, 1, D), gen, dtype)
    w = _grid((2, S, N1), gen, dtype)
    return q, k, w, K


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cuda_forward_backward_kl_match_cpu(dtype):
    q, k, w, K = _case(dtype)
    idx_c, val_c = lig.indexer(q, k, w, K, layout="BSND", sparse_mode=3)
    dev = [t.cuda() for t in (q, k, w)]
    idx_g, val_g = lig.indexer(*dev, K, layout="BSND", sparse_mode=3)
    assert idx_g.device.type == "cuda"
    assert torch.equal(idx_g.cpu(), idx_c) and torch.equal(val_g.cpu(), val_c)
    dy = _grid(tuple(idx_c.shape), torch.Generator().manual_seed(1), dtype)
    for det in (True, False):
        ref = lig.indexer_grad(q, k, dy, idx_c, w, layout="BSND", sparse_mode=3, deterministic=det)
        got = lig.indexer_grad(*dev[:2], dy.cuda(), idx_g, dev[2], layout="BSND", sparse_mode=3,
                               deterministic=det)
        for r, g in zip(ref, got):
            assert torch.equal(g.cpu(), r)
    # the KL step's softmax is not exact on grid data: both backends within the bounds of the
    # float64 reference (each row in double, rounded once)
    target = torch.softmax(val_c.float().masked_fill(idx_c < 0, -1e30), -1)
    ref_loss, ref_dy = reference_kl(val_c, target, idx_c)
    for where, (v, t, i) in (("cpu", (val_c, target, idx_c)), ("cuda", (val_g, target.cuda(), idx_g))):
        loss, dy = lig.indexer_kl_grad(v, t, i)
        assert loss.device.type == dy.device.type == where
        assert_kl_within(val_c, target, idx_c, loss.cpu(), dy.cpu(), ref_loss, ref_dy, f"{where} {dtype} KL")


def test_cuda_bad_index_raises_and_writes_nothing(monkeypatch):
    """The index check runs on the device after the outputs are allocated: the error must come
    before any write to them (and to the inputs)."""
    q, k, w, K = _case(torch.float32)
    idx, _ = lig.indexer(q, k, w, K, layout="BSND", sparse_mode=3)
    idx[0, 3, 1] = 99  # a key past the batch's length
    inputs = [t.cuda() for t in (q, k, torch.ones(idx.shape), idx, w)]
    # every output the op allocates (with torch.empty) holds a known pattern, kept as a snapshot;
    # the workspace (uint8, also from torch.empty) is the library's to write: it holds the status
    outputs = []
    real_empty = torch.empty

    def filled_empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(-3.25)
            outputs.append((t, t.clone()))
        return t

    before = [t.clone() for t in inputs]
    monkeypatch.setattr(torch, "empty", filled_empty)
    # the call only enqueues; the verdict is read without a synchronisation, so it raises in
    # lig.check_errors() (or at a later lig call once the work has completed)
    lig.indexer_grad(*inputs, layout="BSND", sparse_mode=3)
    with pytest.raises(lig.LigValueError, match="sparse_indices: expected values in"):
        lig.check_errors()
    lig.check_errors()  # read once: nothing left
    monkeypatch.undo()
    torch.cuda.synchronize()
    # d_query, d_key and d_weights, allocated before the device-side check runs
    assert [tuple(t.shape) for t, _ in outputs] == [tuple(q.shape), tuple(k.shape), tuple(w.shape)]
    for n, (t, snapshot) in enumerate(outputs):
        assert torch.equal(t, snapshot), f"output {n} was written"
    for n, (t, snapshot) in enumerate(zip(inputs, before)):
        assert torch.equal(t, snapshot), f"input {n} changed"


def test_cuda_mixing_devices_is_refused_by_name():
    q, k, w, K = _case(torch.float32)
    with pytest.raises(lig.LigValueError, match="key: expected a tensor on the device of query"):
        lig.indexer(q.cuda(), k, w.cuda(), K, layout="BSND", sparse_mode=3)


def _training_step(q, k, w, p, K):
    idx, val = lig.indexer(q, k, w, K, layout="BSND", sparse_mode=3)
    loss, dy = lig.indexer_kl_grad(val, p, idx)
    return (loss, idx) + tuple(lig.indexer_grad(q, k, dy, idx, w, layout="BSND", sparse_mode=3))


def test_cuda_graph_captures_a_training_step():
    """Phase 2 enqueues only and the package reads no verdict while the stream is capturing, so the
    forward, the KL step and the backward can be captured into one CUDA graph; its replay must give
    the eager step's results bit for bit (deterministic mode)."""
    q, k, w, K = (t.cuda() if torch.is_tensor(t) else t for t in _case(torch.bfloat16))
    p = torch.softmax(torch.randn(q.shape[0], q.shape[1], K, generator=torch.Generator().manual_seed(2)), -1).cuda()
    eager = _training_step(q, k, w, p, K)
    lig.check_errors()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
        _training_step(q, k, w, p, K)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _training_step(q, k, w, p, K)
    graph.replay()
    torch.cuda.synchronize()
    for name, e, c in zip(("loss", "indices", "d_query", "d_key", "d_weights"), eager, captured):
        assert torch.equal(e, c), f"{name}: the replayed graph differs from the eager step"
    lig.check_errors()
