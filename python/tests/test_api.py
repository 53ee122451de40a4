"""Errors, threads, version, strides and the binding's no-copy behaviour."""
import importlib.metadata
import os

import numpy as np
import pytest
import torch

import lig
from lig import _lib


def _problem(B=1, S=6, N1=4, N2=1, D=8, K=3, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, S, N1, D, generator=gen).to(dtype)
    k = torch.randn(B, S, N2, D, generator=gen).to(dtype)
    w = torch.rand(B, S, N1, generator=gen).to(dtype)
    shape = (B, S, K) if N2 == 1 else (B, S, N2, K)
    t = torch.arange(S).view((1, S, 1) if N2 == 1 else (1, S, 1, 1))
    idx = (torch.rand(shape, generator=gen) * (t + 1)).floor().to(torch.int32)
    dy = torch.randn(shape, generator=gen).to(dtype)
    return q, k, dy, idx, w


def test_version():
    assert lig.__version__ == "0.1.0" or lig.__version__.count(".") == 2
    assert lig.__version__ == importlib.metadata.version("lig")


def test_errors_carry_the_library_message():
    q, k, dy, idx, w = _problem()
    with pytest.raises(ValueError, match=r"dy: expected shape \[1,6,3\]") as e:
        lig.indexer_grad(q, k, dy[..., :2], idx, w)
    assert isinstance(e.value, lig.LigValueError) and e.value.status == lig.LIG_ERR_PARAM_INVALID
    with pytest.raises(ValueError, match="layout"):
        lig.indexer_grad(q, k, dy, idx, w, layout="bsnd")
    with pytest.raises(ValueError, match="sparse_mode"):
        lig.indexer_grad(q, k, dy, idx, w, sparse_mode=1)
    with pytest.raises(ValueError, match="pre_tokens"):
        lig.indexer_grad(q, k, dy, idx, w, pre_tokens=-1)
    bad = idx.clone()
    bad[0, 5, 1] = 6  # >= Lk in a valid row
    with pytest.raises(ValueError, match="sparse_indices"):
        lig.indexer_grad(q, k, dy, bad, w)
    with pytest.raises(ValueError, match="actual_seq_lengths"):  # TND needs its cumulative ends
        lig.indexer_grad(q[0], k[0], dy[0], idx[0], w[0], layout="TND")
    with pytest.raises(ValueError, match="sparse_count"):
        lig.indexer(q, k, w, 0)
    with pytest.raises(ValueError, match="target"):
        lig.indexer_kl_grad(dy, dy[..., :2])
    with pytest.raises(ValueError, match="query"):  # a dtype combination lig refuses
        lig.indexer_grad(q.half(), k, dy, idx, w)


def test_python_side_argument_errors():
    q, k, dy, idx, w = _problem()
    with pytest.raises(TypeError, match="float64"):
        lig.indexer_grad(q.double(), k, dy, idx, w)
    with pytest.raises(TypeError, match="index_dtype"):
        lig.indexer(q, k, w, 2, index_dtype=torch.int16)
    with pytest.raises(TypeError):
        lig.indexer_grad(q, k, dy, idx, [1.0])
    with pytest.raises(ValueError):
        lig.set_num_threads(-1)


def test_status_mapping():
    with pytest.raises(ValueError):
        _lib.check(_lib.LIG_ERR_PARAM_NULLPTR, "x")
    for status in (_lib.LIG_ERR_RUNTIME, _lib.LIG_ERR_INNER):
        with pytest.raises(RuntimeError) as e:
            _lib.check(status, "x")
        assert not isinstance(e.value, ValueError) and e.value.status == status
    _lib.check(_lib.LIG_SUCCESS, "x")


def test_threads_and_determinism():
    before = lig.get_num_threads()  # the default: nothing in the suite leaves a count set
    q, k, dy, idx, w = _problem(B=2, S=64, N1=8, N2=2, D=32, K=24, dtype=torch.bfloat16, seed=3)
    try:
        results = []
        for n in (1, 2, 3):
            lig.set_num_threads(n)
            assert lig.get_num_threads() == n
            results.append(lig.indexer_grad(q, k, dy, idx, w, deterministic=True))
            results.append(lig.indexer_grad(q, k, dy, idx, w, deterministic=True))
        for r in results[1:]:  # bitwise identical across runs and thread counts
            for a, b in zip(results[0], r):
                assert torch.equal(a.view(torch.int16), b.view(torch.int16))
        nondet = lig.indexer_grad(q, k, dy, idx, w, deterministic=False)
        for a, b in zip(results[0], nondet):
            torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2)
        lig.set_num_threads(0)
        env = os.environ.get("LIG_NUM_THREADS")
        assert lig.get_num_threads() == (int(env) if env else os.sysconf("SC_NPROCESSORS_ONLN"))
        assert lig.get_num_threads() == before
    finally:
        lig.set_num_threads(0)


def test_strided_inputs_are_not_copied(monkeypatch):
    """Non-contiguous views (and a stride-0 broadcast) are described in place, not copied."""
    q, k, dy, idx, w = _problem(S=8)
    seen = []
    real = _lib.Descriptors._create

    def spy(t):
        seen.append((t.data_ptr(), t.stride()))
        return real(t)

    monkeypatch.setattr(_lib.Descriptors, "_create", staticmethod(spy))
    qt = q.transpose(1, 2).contiguous().transpose(1, 2)  # [B,S,N1,D] view over [B,N1,S,D] storage
    wb = w[:, :1, :].expand_as(w)  # stride 0 over rows
    out = lig.indexer_grad(qt, k, dy, idx, wb)
    assert (qt.data_ptr(), qt.stride()) in seen and (wb.data_ptr(), wb.stride()) in seen
    ref = lig.indexer_grad(q, k, dy, idx, w[:, :1, :].expand_as(w).contiguous())
    for a, b in zip(out, ref):
        assert torch.equal(a, b)


def test_numpy_inputs_including_negative_strides():
    q, k, dy, idx, w = _problem()
    ref = lig.indexer_grad(q, k, dy, idx, w)
    qn = np.ascontiguousarray(q.numpy()[:, ::-1])[:, ::-1]  # negative stride: copied for lig
    out = lig.indexer_grad(qn, k.numpy(), dy.numpy(), idx.numpy(), w.numpy())
    for a, b in zip(out, ref):
        assert torch.equal(a, b)


def test_int64_lengths_and_tnd_roundtrip():
    """The same problem as BSND with lengths and as TND with cumulative ends."""
    q, k, dy, idx, w = _problem(B=2, S=6)
    aq, ak = [4, 6], [5, 6]
    bsnd = lig.indexer_grad(q, k, dy, idx.clamp(max=3), w, actual_seq_lengths_query=aq,
                            actual_seq_lengths_key=torch.tensor(ak), sparse_mode=0)
    cat = lambda x, n: torch.cat([x[0, : n[0]], x[1, : n[1]]])  # noqa: E731
    tnd = lig.indexer_grad(cat(q, aq), cat(k, ak), cat(dy, aq), cat(idx.clamp(max=3), aq), cat(w, aq),
                           actual_seq_lengths_query=torch.tensor([4, 10], dtype=torch.int32),
                           actual_seq_lengths_key=[5, 11], layout="TND", sparse_mode=0)
    assert torch.equal(cat(bsnd[0], aq), tnd[0])
    assert torch.equal(cat(bsnd[2], aq), tnd[2])
    assert torch.equal(cat(bsnd[1], ak), tnd[1])


def test_concurrent_calls_from_python_threads():
    """ctypes releases the GIL: calls from several threads run at once; each thread gets its own
    error message (lig_get_last_error is per thread)."""
    import threading

    problems = [_problem(B=1, S=32, N1=8, D=16, K=8, seed=s) for s in range(4)]
    expected = [lig.indexer_grad(*p, deterministic=True) for p in problems]
    results, errors = {}, {}

    def good(i):
        for _ in range(5):
            results[i] = lig.indexer_grad(*problems[i], deterministic=True)

    def bad(i):
        q, k, dy, idx, w = problems[0]
        for _ in range(5):
            try:
                lig.indexer_grad(q, k, dy[..., : i + 1], idx, w)
            except ValueError as e:
                errors[i] = str(e)

    threads = [threading.Thread(target=good, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=bad, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        for a, b in zip(results[i], expected[i]):
            assert torch.equal(a, b)
    for i in range(3):
        assert f"dy: expected shape [1,32,8] (like sparse_indices), got [1,32,{i + 1}]" in errors[i], errors[i]
