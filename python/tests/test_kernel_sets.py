"""lig.kernel_sets / set_kernel_set / get_kernel_set, and every kernel set this CPU supports
against the float64 reference (docs/contract.md sections 7, 8 and 10)."""
import contextlib
import ctypes
import os

import pytest
import torch
from hypothesis import given, settings

import lig
from lig import _capi, _lib
from _cases import cases, examples, paged_cases
from _reference import as_rows, geometry, visible
from _tol import accumulated, assert_grads_within, element_bound, reference_grad_bounds, score_steps

SETS = lig.kernel_sets()
BIG = lig.INT64_MAX


@contextlib.contextmanager
def forced(name):
    lig.set_kernel_set(name)
    try:
        yield
    finally:
        lig.set_kernel_set(None)


def _plan_kernel_set(dtype: torch.dtype, backward: bool) -> str:
    """Phase 1 of a small problem, through the C API: the kernels its plan runs
    (lig_executor_kernel_set); the executor is destroyed unrun."""
    q = torch.zeros(1, 8, 16, 64, dtype=dtype)
    k = torch.zeros(1, 8, 1, 64, dtype=dtype)
    w = torch.zeros(1, 8, 16, dtype=dtype)
    idx = torch.zeros(1, 8, 4, dtype=torch.int32)
    slots = torch.zeros(1, 8, 4, dtype=dtype)
    size, executor = ctypes.c_uint64(0), ctypes.c_void_p(None)
    with _lib.Descriptors() as d:
        if backward:
            outs = (torch.empty_like(q), torch.empty_like(k), torch.empty_like(w))
            status = _capi.lig_indexer_grad_get_workspace_size(
                d(q, "query"), d(k, "key"), d(slots, "dy"), d(idx, "sparse_indices"), d(w, "weights"), None, None, 0,
                b"BSND", 3, BIG, BIG, True, d(outs[0], "d_query"), d(outs[1], "d_key"), d(outs[2], "d_weights"),
                ctypes.byref(size), ctypes.byref(executor))
        else:
            status = _capi.lig_indexer_get_workspace_size(
                d(q, "query"), d(k, "key"), d(w, "weights"), None, None, b"BSND", 4, 3, BIG, BIG,
                d(idx, "sparse_indices"), d(slots, "sparse_values"), ctypes.byref(size), ctypes.byref(executor))
        _lib.check(status, "phase 1")
        try:
            return _capi.lig_executor_kernel_set(executor).decode()
        finally:
            _capi.lig_destroy_executor(executor)


def _plan_int8_kernel_set() -> str:
    """Phase 1 of a small INT8 problem of lig_quant_indexer (contract 2.4), through the C API: the
    int8 kernels its plan runs (named for their ISA, e.g. "avx512vnni" under avx512bf16)."""
    tensors = [(torch.zeros(1, 8, 16, 64, dtype=torch.int8), _capi.LIG_INT8),  # query
               (torch.zeros(1, 8, 1, 64, dtype=torch.int8), _capi.LIG_INT8),  # key
               (torch.zeros(1, 8, 16), _capi.LIG_FLOAT32),  # weights
               (torch.ones(1, 8, 1), _capi.LIG_FLOAT32),  # key_dequant_scale
               (torch.zeros(1, 8, 1, 4, dtype=torch.int32), _capi.LIG_INT32)]  # sparse_indices
    handles = []
    try:
        for t, dt in tensors:
            shape, strides = (ctypes.c_int64 * t.dim())(*t.shape), (ctypes.c_int64 * t.dim())(*t.stride())
            handles.append(_capi.lig_create_tensor(t.data_ptr(), dt, t.dim(), shape, strides))
            assert handles[-1], _lib.last_error()
        q, k, w, sk, idx = handles
        size, executor = ctypes.c_uint64(0), ctypes.c_void_p(None)
        status = _capi.lig_quant_indexer_get_workspace_size(q, k, w, None, sk, None, None, None, 0, 0, b"BSND", b"BSND",
                                                            4, 3, BIG, BIG, idx, None, ctypes.byref(size),
                                                            ctypes.byref(executor))
        _lib.check(status, "quant phase 1")
        try:
            return _capi.lig_executor_kernel_set(executor).decode()
        finally:
            _capi.lig_destroy_executor(executor)
    finally:
        for h in handles:
            _capi.lig_destroy_tensor(h)


def test_kernel_sets_are_listed_and_can_be_forced():
    assert SETS and SETS[0] == "scalar" and len(set(SETS)) == len(SETS), SETS
    automatic = lig.get_kernel_set()
    if not os.environ.get("LIG_ISA") and not os.environ.get("LIG_DISABLE_SIMD"):
        assert automatic == SETS[-1]  # the widest set the CPU supports
    for name in SETS:
        with forced(name):
            assert lig.get_kernel_set() == name
            # the plans use it: the set itself for at least one dtype (avxvnni differs from avx2 in
            # its int8 kernels only), never a wider one; the int8 kernels of avx512bf16 and amx-bf16
            # are named for their ISA, avx512vnni, which is no set of its own
            used = {_plan_kernel_set(dt, bwd) for dt in (torch.float32, torch.float16, torch.bfloat16)
                    for bwd in (False, True)} | {_plan_int8_kernel_set()}
            assert name in used and all(SETS.index(u) <= SETS.index(name) for u in used if u in SETS), (name, used)
            assert used <= set(SETS) | {"avx512vnni"}, (name, used)
        assert lig.get_kernel_set() == automatic
    for back in (None, ""):
        lig.set_kernel_set("scalar")
        lig.set_kernel_set(back)
        assert lig.get_kernel_set() == automatic


def test_unknown_kernel_set_raises_and_changes_nothing():
    with forced("scalar"):
        for bad in ("avx9000", "AVX2", "neon", "scalar,avx2", " scalar"):
            with pytest.raises(lig.LigValueError) as e:
                lig.set_kernel_set(bad)
            assert e.value.status == lig.LIG_ERR_PARAM_INVALID
            message = str(e.value)
            # the library's message: the setting, the sets this CPU supports, what it got
            assert f'name: expected a kernel set this CPU supports ({",".join(SETS)}), got "{bad}"' in message, message
            assert lig.get_kernel_set() == "scalar"
        with pytest.raises(lig.LigValueError, match="without NUL characters"):
            lig.set_kernel_set("scalar\0avx2")
        for bad in (3, b"avx2", ["avx2"]):
            with pytest.raises(TypeError, match="name: expected a str"):
                lig.set_kernel_set(bad)
        assert lig.get_kernel_set() == "scalar"


@pytest.mark.parametrize("name", SETS)
def test_every_kernel_set_matches_float64_reference(name):
    """Grid data (exact in fp32): each set's forward and backward equal the float64 reference
    rounded to the output dtype, exactly, over the property tests' problems."""
    from test_forward import test_topk_matches_float64_reference
    from test_grad import test_grad_matches_float64_autograd
    from test_paged import test_paged_matches_indexer_and_float64_reference

    @settings(max_examples=examples(120))
    @given(case=cases(max_batch=2, max_rows=20, max_keys=80, max_d=140, max_k=40))
    def both(case):
        test_topk_matches_float64_reference.hypothesis.inner_test(case)
        test_grad_matches_float64_autograd.hypothesis.inner_test(case)

    @settings(max_examples=examples(40))
    @given(pc=paged_cases(max_batch=2, max_rows=12, max_keys=80, max_d=140, max_k=40))
    def paged(pc):
        test_paged_matches_indexer_and_float64_reference.hypothesis.inner_test(pc)

    with forced(name):
        both()
        paged()


def _gaussian(dtype, seed, B=2, S=72, N1=16, N2=1, D=128):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, S, N1, D, generator=gen).to(dtype)
    k = torch.randn(B, S, N2, D, generator=gen).to(dtype)
    w = (torch.randn(B, S, N1, generator=gen) / 8).to(dtype)
    return q, k, w


def _reference_scores(q, k, w, idx, ak):
    """float64 scores of every visible key (-inf elsewhere) per row [N2, Lk], with each score's
    sum of |elementary products| sum_h |w_h| sum_d |q_d k_d| (its error scale, tests/harness/forward_kl_checks.c)."""
    geo = geometry("BSND", q.shape, k.shape, None, ak)
    n2 = k.shape[-2]
    q_r, k_r, w_r, idx_r = as_rows("BSND", q.double(), k.double(), w.double(), idx, n2)
    R, N1, D = q_r.shape
    G = N1 // n2
    scores, scales = [], []
    for r in range(R):
        lk, off = int(geo.Lk[r]), int(geo.key_offset[r])
        qr, kr = q_r[r].view(n2, G, D), k_r[off: off + lk]
        S = torch.einsum("gcd,sgd->gcs", qr, kr)
        I = torch.einsum("gc,gcs->gs", w_r[r].view(n2, G), torch.relu(S))
        vis = visible(int(geo.t[r]), int(geo.Lq[r]), lk, torch.arange(lk), 3, BIG, BIG)
        scores.append(torch.where(vis.view(1, -1), I, float("-inf")))
        scales.append(torch.einsum("gc,gcs->gs", w_r[r].view(n2, G).abs(),
                                   torch.einsum("gcd,sgd->gcs", qr.abs(), kr.abs())))
    return idx_r, scores, scales


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_every_kernel_set_gaussian_data_within_tolerance(name, dtype):
    """Off-grid data at DeepSeek's head shape (D = 128, 16 heads), larger than every kernel's
    tiles, each element against its own bound (_tol.py, tests/harness/forward_kl_checks.c's tolerant_unit): the
    backward against float64 autograd; the forward's values against the float64 scores of the keys
    it chose, in descending order and none below the reference's k-th score, up to both scores'
    fp32 error."""
    for n2, seed in ((1, 5), (2, 6)):
        q, k, w = _gaussian(dtype, seed, N2=n2)
        ak = [72, 50]
        with forced(name):
            idx, val = lig.indexer(q, k, w, 24, actual_seq_lengths_key=ak, values_dtype=torch.float32)
            dy = torch.randn(idx.shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
            outs = lig.indexer_grad(q, k, dy, idx, w, actual_seq_lengths_key=ak)
        bounds = reference_grad_bounds("BSND", q, k, dy, idx, w, None, ak, 3, BIG, BIG)
        assert_grads_within(outs, bounds, f"{name} {dtype} N2={n2}")
        idx_r, scores, scales = _reference_scores(q, k, w, idx, ak)
        val_r = val.reshape(idx_r.shape).double()
        steps = score_steps(q.shape[-1], q.shape[-2] // n2)
        for r, (s, scale) in enumerate(zip(scores, scales)):
            for g in range(n2):
                where = f"{name} {dtype} N2={n2} row {r} head {g}"
                chosen = idx_r[r, g][idx_r[r, g] >= 0].long()
                nvis = int(torch.isfinite(s[g]).sum())
                assert chosen.numel() == min(24, nvis) and len(set(chosen.tolist())) == chosen.numel(), where
                if not chosen.numel():
                    continue
                ref, err = s[g][chosen], accumulated(steps, scale[g][chosen])
                got = val_r[r, g, : chosen.numel()]
                bad = ~((got - ref).abs() <= element_bound(torch.float32, ref, steps, scale[g][chosen]))
                assert not bad.any(), f"{where}: value {got[bad][0].item()!r}, reference {ref[bad][0].item()!r}"
                assert ((ref[1:] - err[1:]) <= (ref[:-1] + err[:-1])).all(), f"{where}: not in descending order"
                # the reference's k-th score (ties to the lower key): every chosen key scores at least
                # that, up to both scores' error
                kth_key = torch.sort(s[g], descending=True, stable=True).indices[chosen.numel() - 1]
                kth, kth_err = s[g][kth_key], accumulated(steps, scale[g][kth_key])
                low = ref + err < kth - kth_err
                assert not low.any(), f"{where}: key {chosen[low][0].item()} scores {ref[low][0].item()!r}, " \
                                      f"below the k-th score {kth.item()!r}"


@pytest.mark.parametrize("name", SETS)
def test_each_kernel_set_is_bitwise_reproducible(name):
    """Within one set, with deterministic=True: the same bits from run to run and for 1, 2 and 3
    threads (backward, forward, paged forward)."""
    q, k, w = _gaussian(torch.bfloat16, 9, B=2, S=96, N1=8, N2=2, D=64)
    key_cache = k.reshape(2 * 96 // 8, 8, 2, 64)  # blocks of 8 rows, batch 0's first
    table = torch.arange(24, dtype=torch.int32).view(2, 12)
    results = []
    try:
        with forced(name):
            for threads in (1, 2, 3, 2):
                lig.set_num_threads(threads)
                idx, val = lig.indexer(q, k, w, 40)
                dy = torch.randn(idx.shape, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
                grads = lig.indexer_grad(q, k, dy, idx, w, deterministic=True)
                paged = lig.indexer_paged(q, key_cache, table, w, 40, [96, 96])
                results.append((idx, val, *grads, *paged))
    finally:
        lig.set_num_threads(0)
    for r in results[1:]:
        for a, b in zip(results[0], r):
            assert torch.equal(a.view(torch.int16) if a.dtype == torch.bfloat16 else a,
                               b.view(torch.int16) if b.dtype == torch.bfloat16 else b)
    # the paged forward reads the same keys as the contiguous one: the same bits
    assert torch.equal(results[0][0], results[0][5]) and torch.equal(results[0][1], results[0][6])
