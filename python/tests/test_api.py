"""Errors, threads, version, strides and the binding's no-copy behaviour."""
import importlib.metadata
import os

import numpy as np
import pytest
import torch

import lig
from lig import _capi, _lib
from _tol import assert_grads_within, reference_grad_bounds


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


def test_counts_are_validated_before_allocating(no_allocation):
    """sparse_count -3 used to reach torch.empty ("negative dimension"); 2.5 was truncated to 2."""
    q, k, dy, idx, w = _problem()
    with pytest.raises(lig.LigValueError, match=r"sparse_count: expected a value >= 1, got -3") as e:
        lig.indexer(q, k, w, -3)
    assert e.value.status == lig.LIG_ERR_PARAM_INVALID
    with pytest.raises(lig.LigValueError, match="sparse_count"):  # the op itself, not only the wrapper
        torch.ops.lig.indexer(q, k, w, -3, None, None, "BSND", 3, lig.INT64_MAX, lig.INT64_MAX, torch.int32, None,
                              True)
    for bad in (2.5, True, "2", torch.tensor(2.0)):
        with pytest.raises(TypeError, match=r"sparse_count: expected an int"):
            lig.indexer(q, k, w, bad)
    with pytest.raises(TypeError, match=r"pre_tokens: expected an int, got float 2.5"):
        lig.indexer_grad(q, k, dy, idx, w, pre_tokens=2.5)
    with pytest.raises(TypeError, match=r"sparse_mode: expected an int"):
        lig.indexer(q, k, w, 2, sparse_mode=3.0)
    with pytest.raises(TypeError, match=r"actual_seq_lengths_key\[0\]: expected an int, got float"):
        lig.indexer(q, k, w, 2, actual_seq_lengths_key=[5.5])
    with pytest.raises(TypeError, match=r"deterministic: expected a bool"):
        lig.indexer_grad(q, k, dy, idx, w, deterministic="no")
    with pytest.raises(TypeError, match=r"n: expected an int"):
        lig.set_num_threads(1.5)
    with pytest.raises(lig.LigValueError, match=r'layout: expected "BSND" or "TND", got "bsnd"'):
        lig.indexer(q, k, w, 2, layout="bsnd")
    with pytest.raises(lig.LigValueError, match=r"query: expected rank 3 \(\[T1,N1,D\], layout TND\), got rank 4"):
        lig.indexer(q, k, w, 2, layout="TND")
    assert no_allocation == []
    # integers of other kinds are fine
    assert lig.indexer(q, k, w, np.int64(2))[0].shape[-1] == 2
    assert lig.indexer(q, k, w, torch.tensor(2))[0].shape[-1] == 2


def test_dtype_errors_list_what_each_argument_accepts(no_allocation):
    """A float64 query used to get "expected dtype float32, float16, bfloat16, int32 or int64"."""
    q, k, dy, idx, w = _problem()
    floats = r"expected dtype float32, float16 or bfloat16, got torch\.{}"
    ints = r"expected dtype int32 or int64, got torch\.{}"
    cases = [
        (lambda: lig.indexer_grad(q.double(), k, dy, idx, w), "query: " + floats.format("float64")),
        (lambda: lig.indexer_grad(q.int(), k, dy, idx, w), "query: " + floats.format("int32")),
        (lambda: lig.indexer_grad(q, k, dy.long(), idx, w), "dy: " + floats.format("int64")),
        (lambda: lig.indexer_grad(q, k, dy, idx.float(), w), "sparse_indices: " + ints.format("float32")),
        (lambda: lig.indexer(q, k, w.double(), 2), "weights: " + floats.format("float64")),
        (lambda: lig.indexer(q, k, w, 2, actual_seq_lengths_query=torch.tensor([3.0])),
         "actual_seq_lengths_query: " + ints.format("float32")),
        (lambda: lig.indexer_kl_grad(dy.double(), dy), "sparse_values: " + floats.format("float64")),
        (lambda: lig.indexer_kl_grad(dy, dy.int()), "target: " + floats.format("int32")),
        (lambda: lig.indexer_kl_grad(dy, dy, idx.half()), "sparse_indices: " + ints.format("float16")),
        (lambda: lig.indexer_grad(q, k, dy, idx, w, d_weights_dtype=torch.float64),
         r"d_weights_dtype: expected torch\.float32, torch\.float16 or torch\.bfloat16, got torch\.float64"),
        (lambda: lig.indexer_kl_grad(dy, dy, dy_dtype=torch.int32), r"dy_dtype: expected torch\.float32"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()
    assert no_allocation == []


def test_fake_implementations_validate_too():
    """Under torch.compile the fake (meta) rules see the arguments first: same checks."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    q, k, dy, idx, w = _problem()
    with FakeTensorMode() as mode:
        fq, fk, fw = (mode.from_tensor(t) for t in (q, k, w))
        with pytest.raises(lig.LigValueError, match="sparse_count"):
            torch.ops.lig.indexer(fq, fk, fw, -3, None, None, "BSND", 3, lig.INT64_MAX, lig.INT64_MAX, torch.int32,
                                  None, True)
        with pytest.raises(TypeError, match="query: expected dtype float32, float16 or bfloat16"):
            torch.ops.lig.indexer(fq.double(), fk, fw, 2, None, None, "BSND", 3, lig.INT64_MAX, lig.INT64_MAX,
                                  torch.int32, None, True)


def test_status_mapping():
    with pytest.raises(ValueError):
        _lib.check(_capi.LIG_ERR_PARAM_NULLPTR, "x")
    for status in (_capi.LIG_ERR_RUNTIME, _capi.LIG_ERR_INNER):
        with pytest.raises(RuntimeError) as e:
            _lib.check(status, "x")
        assert not isinstance(e.value, ValueError) and e.value.status == status
    _lib.check(_capi.LIG_SUCCESS, "x")


def test_threads_and_determinism():
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
        # not bitwise (the order of dK's additions varies), but as accurate: every element of
        # both within its bound of the float64 reference
        nondet = lig.indexer_grad(q, k, dy, idx, w, deterministic=False)
        bounds = reference_grad_bounds("BSND", q, k, dy, idx, w, None, None, 3, lig.INT64_MAX, lig.INT64_MAX)
        assert_grads_within(results[0], bounds, "deterministic")
        assert_grads_within(nondet, bounds, "deterministic=False")
    finally:
        lig.set_num_threads(0)


def test_deterministic_by_default():
    """Without `deterministic`, the backward (called directly or through autograd) is bitwise
    identical across runs and thread counts."""
    q, k, dy, idx, w = _problem(B=2, S=96, N1=8, N2=1, D=32, K=48, seed=11)
    direct, through_autograd = [], []
    try:
        for n in (1, 2, 3, 2, 3):
            lig.set_num_threads(n)
            direct.append(lig.indexer_grad(q, k, dy, idx, w))
            leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, w)]
            sel, val = lig.lightning_indexer(*leaves, 5)
            torch.where(sel >= 0, val, 0.0).sum().backward()
            through_autograd.append([t.grad for t in leaves])
    finally:
        lig.set_num_threads(0)
    for results in (direct, through_autograd):
        for r in results[1:]:
            for a, b in zip(results[0], r):
                assert torch.equal(a, b)


def test_thread_count_follows_torch(monkeypatch):
    """lig uses torch.get_num_threads() unless a count was chosen for lig (set_num_threads, or
    LIG_NUM_THREADS); the count reaches the library before each call."""
    monkeypatch.delenv("LIG_NUM_THREADS", raising=False)
    torch_threads = torch.get_num_threads()
    q, k, dy, idx, w = _problem()
    try:
        for n in (3, 1, 5):
            torch.set_num_threads(n)
            assert lig.get_num_threads() == n
            _capi.lig_set_num_threads(7)  # what a stale library count would be
            lig.indexer_grad(q, k, dy, idx, w)
            assert _capi.lig_get_num_threads() == n
        lig.set_num_threads(2)  # the user's choice wins over torch's
        torch.set_num_threads(4)
        lig.indexer_grad(q, k, dy, idx, w)
        assert lig.get_num_threads() == 2 and _capi.lig_get_num_threads() == 2
        lig.set_num_threads(0)  # back to following torch
        assert lig.get_num_threads() == 4
        monkeypatch.setenv("LIG_NUM_THREADS", "6")  # the environment wins over torch
        lig.indexer_grad(q, k, dy, idx, w)
        assert lig.get_num_threads() == 6 and _capi.lig_get_num_threads() == 6
        monkeypatch.setenv("LIG_NUM_THREADS", "zero")  # ignored, as the library ignores it
        assert lig.get_num_threads() == 4
    finally:
        torch.set_num_threads(torch_threads)
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
    # bitwise comparisons need a fixed summation order for dK: deterministic, whatever the default
    out = lig.indexer_grad(qt, k, dy, idx, wb, deterministic=True)
    assert (qt.data_ptr(), qt.stride()) in seen and (wb.data_ptr(), wb.stride()) in seen
    ref = lig.indexer_grad(q, k, dy, idx, w[:, :1, :].expand_as(w).contiguous(), deterministic=True)
    for a, b in zip(out, ref):
        assert torch.equal(a, b)


def test_numpy_inputs_including_negative_strides():
    q, k, dy, idx, w = _problem()
    ref = lig.indexer_grad(q, k, dy, idx, w, deterministic=True)
    qn = np.ascontiguousarray(q.numpy()[:, ::-1])[:, ::-1]  # negative stride: copied for lig
    out = lig.indexer_grad(qn, k.numpy(), dy.numpy(), idx.numpy(), w.numpy(), deterministic=True)
    for a, b in zip(out, ref):
        assert torch.equal(a, b)


def test_int64_lengths_and_tnd_roundtrip():
    """The same problem as BSND with lengths and as TND with cumulative ends."""
    q, k, dy, idx, w = _problem(B=2, S=6)
    aq, ak = [4, 6], [5, 6]
    bsnd = lig.indexer_grad(q, k, dy, idx.clamp(max=3), w, actual_seq_lengths_query=aq,
                            actual_seq_lengths_key=torch.tensor(ak), sparse_mode=0, deterministic=True)
    cat = lambda x, n: torch.cat([x[0, : n[0]], x[1, : n[1]]])  # noqa: E731
    tnd = lig.indexer_grad(cat(q, aq), cat(k, ak), cat(dy, aq), cat(idx.clamp(max=3), aq), cat(w, aq),
                           actual_seq_lengths_query=torch.tensor([4, 10], dtype=torch.int32),
                           actual_seq_lengths_key=[5, 11], layout="TND", sparse_mode=0, deterministic=True)
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


def test_first_calls_do_not_import_dynamo():
    """The ops' first calls load nothing torch.compile needs: torch._dynamo (and inductor) cost
    about 1 s to import, which torch.library.custom_op would pay at the first call of any op
    (python/README.md, First call; bench/first_call.py times it). A fresh interpreter, as a user's
    script has: each op once, forward and backward through autograd."""
    import subprocess
    import sys

    code = (
        "import sys, torch, lig\n"
        "q = torch.randn(1, 8, 4, 16, requires_grad=True); k = torch.randn(1, 8, 1, 16); w = torch.rand(1, 8, 4)\n"
        "idx, val = lig.lightning_indexer(q, k, w, 4)\n"
        "p = torch.softmax(val.detach().masked_fill(idx < 0, float('-inf')), -1)\n"
        "lig.indexer_kl_loss(val, p, idx).backward()\n"
        "lig.indexer_paged(q.detach(), k.view(8, 1, 1, 16), torch.arange(8).view(1, 8), w, 4, [8])\n"
        "assert q.grad is not None\n"
        "print(sorted(m for m in sys.modules if m.startswith(('torch._dynamo', 'torch._inductor'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
