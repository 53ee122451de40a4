"""lig.indexer_paged: the forward over a paged key cache (docs/contract.md section 10).

Its results must be bitwise those of lig.indexer on the same keys laid out contiguously, and
match the float64 top-k reference that reads the keys through the block table by definition.
Every block, cache row and table entry the forward must not read holds garbage that would change
the result (or be refused) if it were read. The values are not differentiable (no paged
backward): a gradient asked of them raises.
"""
import shutil

import pytest
import torch
from hypothesis import given, settings

import lig
from _cases import batch_keys, examples, page, paged_cases
from _reference import reference_topk, reference_topk_paged
from _tol import assert_topk_exact

BIG = lig.INT64_MAX


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits, so that equality is bitwise (-0.0 vs 0.0, NaN payloads)."""
    return t.view({torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}[t.dtype]) \
        if t.is_floating_point() else t


def _assert_bitwise(a, b, what):
    assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    bad = (_bits(a) != _bits(b)).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} elements differ, first at {bad[0].tolist()}: " \
                             f"{a[tuple(bad[0])].item()} vs {b[tuple(bad[0])].item()}"


@settings(max_examples=examples(400))
@given(pc=paged_cases())
def test_paged_matches_indexer_and_float64_reference(pc):
    c = pc.base
    idx, val = lig.indexer_paged(c.q, pc.key_cache, pc.block_table, c.w, c.K, pc.lengths_arg, **pc.kwargs(),
                                 index_dtype=c.index_dtype, values_dtype=c.values_dtype)
    # the same keys, contiguous: lig.indexer, bit for bit
    cidx, cval = lig.indexer(c.q, c.k, c.w, c.K, **c.kwargs(), index_dtype=c.index_dtype, values_dtype=c.values_dtype)
    _assert_bitwise(idx, cidx, "sparse_indices")
    _assert_bitwise(val, cval, "sparse_values")
    # the float64 definition, reading the keys through the table (grid data: exact)
    ridx, rval = reference_topk_paged(c.layout, c.q, pc.key_cache, pc.block_table, c.w, c.K, c.aq, pc.lengths,
                                      c.mode, c.pre, c.nxt)
    assert_topk_exact(idx, val, ridx, rval)


@settings(max_examples=examples(40))
@given(pc=paged_cases(max_batch=3, max_rows=24, max_keys=260, max_d=150, max_k=70))
def test_paged_matches_indexer_and_float64_reference_larger(pc):
    test_paged_matches_indexer_and_float64_reference.hypothesis.inner_test(pc)


def _deepseek_problem(layout, dtype, n2, seed, lengths=(0, 1, 77, 200), rows=(0, 1, 13, 40)):
    """Gaussian data (off the grid) at DeepSeek's head shape, scaled down: query, contiguous keys
    (BSND [B,S2,N2,D] with per-batch lengths, or TND with cumulative ends) and weights."""
    gen = torch.Generator().manual_seed(seed)
    N1, D = 16, 128
    B = len(lengths)
    if layout == "BSND":
        S1, S2 = max(rows), max(lengths)
        q = torch.randn(B, S1, N1, D, generator=gen).to(dtype)
        k = torch.randn(B, S2, n2, D, generator=gen).to(dtype)
        w = (torch.randn(B, S1, N1, generator=gen) / 8).to(dtype)
        return q, k, w, list(rows), list(lengths)
    aq = [sum(rows[: b + 1]) for b in range(B)]
    ak = [sum(lengths[: b + 1]) for b in range(B)]
    q = torch.randn(aq[-1] + 2, N1, D, generator=gen).to(dtype)
    k = torch.randn(ak[-1], n2, D, generator=gen).to(dtype)
    w = (torch.randn(aq[-1] + 2, N1, generator=gen) / 8).to(dtype)
    return q, k, w, aq, ak


@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("block_size", [1, 5, 16, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_paged_bitwise_equals_contiguous_deepseek_shapes(layout, block_size, dtype):
    """Several blocks per batch, shuffled, with spare blocks, partly used last blocks, unused table
    columns and an empty batch, all full of garbage; N2 = 1 (DeepSeek) and N2 = 2."""
    for n2, table_dtype, seed in ((1, torch.int32, 1), (2, torch.int64, 2)):
        q, k, w, aq, ak = _deepseek_problem(layout, dtype, n2, seed)
        B = len(aq)
        keys = batch_keys(layout, k, B, ak)
        lengths = [kb.shape[0] for kb in keys]
        cache, table = page(keys, n2, k.shape[-1], dtype, block_size, spare=3, extra=2, table_dtype=table_dtype,
                            gen=torch.Generator().manual_seed(seed))
        for K, mode, pre, nxt in ((48, 3, BIG, BIG), (7, 0, 30, 5)):
            got = lig.indexer_paged(q, cache, table, w, K, lengths, actual_seq_lengths_query=aq, layout=layout,
                                    sparse_mode=mode, pre_tokens=pre, next_tokens=nxt, values_dtype=torch.float32)
            want = lig.indexer(q, k, w, K, actual_seq_lengths_query=aq, actual_seq_lengths_key=ak, layout=layout,
                               sparse_mode=mode, pre_tokens=pre, next_tokens=nxt, values_dtype=torch.float32)
            _assert_bitwise(got[0], want[0], f"N2={n2} K={K} indices")
            _assert_bitwise(got[1], want[1], f"N2={n2} K={K} values")
            assert (got[0] >= 0).any() and (got[0] < 0).any()  # real selections and padding both occur


def _small(layout="BSND", dtype=torch.float32, block_size=4, seed=0):
    """A small paged problem: (q, key_cache, block_table, w, lengths, aq, contiguous k, ak)."""
    gen = torch.Generator().manual_seed(seed)
    lengths = [9, 6]
    if layout == "BSND":
        q = torch.randn(2, 5, 4, 8, generator=gen).to(dtype)
        k = torch.randn(2, 9, 1, 8, generator=gen).to(dtype)
        w = torch.rand(2, 5, 4, generator=gen).to(dtype)
        aq, ak = None, lengths
    else:
        q = torch.randn(10, 4, 8, generator=gen).to(dtype)
        k = torch.randn(15, 1, 8, generator=gen).to(dtype)
        w = torch.rand(10, 4, generator=gen).to(dtype)
        aq, ak = [5, 10], [9, 15]
    keys = batch_keys(layout, k, 2, ak)
    cache, table = page(keys, 1, 8, dtype, block_size, spare=2, extra=1, table_dtype=torch.int32, gen=gen)
    return q, cache, table, w, lengths, aq, k, ak


def test_garbage_would_be_seen():
    """The garbage is not inert: a used table entry pointed at a spare (garbage) block changes the
    result, so the equality tests above would catch a read of anything unused."""
    q, cache, table, w, lengths, aq, k, ak = _small()
    want = lig.indexer(q, k, w, 3, actual_seq_lengths_key=ak)
    got = lig.indexer_paged(q, cache, table, w, 3, lengths)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    used = set(table[0, :3].tolist()) | set(table[1, :2].tolist())
    spare = next(b for b in range(cache.shape[0]) if b not in used)
    bad = table.clone()
    bad[0, 1] = spare
    moved = lig.indexer_paged(q, cache, bad, w, 3, lengths)
    assert not torch.equal(moved[1], want[1])


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_table_entries_of_used_blocks_are_checked(layout):
    q, cache, table, w, lengths, aq, _, _ = _small(layout)
    num_blocks = cache.shape[0]
    for entry in (num_blocks, -1, 2**31 - 1):
        bad = table.clone()
        bad[1, 1] = entry  # batch 1 has 6 keys: blocks 0 and 1 of its row are used
        with pytest.raises(lig.LigValueError, match="block_table") as e:
            lig.indexer_paged(q, cache, bad, w, 3, lengths, actual_seq_lengths_query=aq, layout=layout)
        assert e.value.status == lig.LIG_ERR_PARAM_INVALID
    unused = table.clone()
    unused[1, 2] = num_blocks + 5  # past batch 1's keys: never read
    a = lig.indexer_paged(q, cache, unused, w, 3, lengths, actual_seq_lengths_query=aq, layout=layout)
    b = lig.indexer_paged(q, cache, table, w, 3, lengths, actual_seq_lengths_query=aq, layout=layout)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_paged_argument_errors_before_allocating(no_allocation):
    """Types, dtypes, counts, the layout, the ranks the output's shape comes from and the required
    key lengths are refused, by name, before any output is allocated."""
    q, cache, table, w, lengths, _, _, _ = _small()
    floats = r"expected dtype float32, float16 or bfloat16, got torch\.{}"
    ints = r"expected dtype int32 or int64, got torch\.{}"
    type_errors = [
        (lambda: lig.indexer_paged(q.double(), cache, table, w, 3, lengths), "query: " + floats.format("float64")),
        (lambda: lig.indexer_paged(q, cache.int(), table, w, 3, lengths), "key_cache: " + floats.format("int32")),
        (lambda: lig.indexer_paged(q, cache, table.float(), w, 3, lengths), "block_table: " + ints.format("float32")),
        (lambda: lig.indexer_paged(q, cache, table, w.double(), 3, lengths), "weights: " + floats.format("float64")),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, torch.tensor([9.0, 6.0])),
         "actual_seq_lengths_key: " + ints.format("float32")),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, actual_seq_lengths_query=torch.tensor([1.0, 2.0])),
         "actual_seq_lengths_query: " + ints.format("float32")),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, [9, 6.5]),
         r"actual_seq_lengths_key\[1\]: expected an int, got float"),
        (lambda: lig.indexer_paged(q, cache, table, w, 2.5, lengths), "sparse_count: expected an int"),
        (lambda: lig.indexer_paged(q, cache, table, w, True, lengths), "sparse_count: expected an int"),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, sparse_mode=3.0), "sparse_mode: expected an int"),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, pre_tokens=1.5), "pre_tokens: expected an int"),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, layout=3), "layout: expected a str"),
        (lambda: lig.indexer_paged(q, cache, [[0, 1]], w, 3, lengths), "block_table: expected a torch.Tensor"),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, index_dtype=torch.int16),
         r"index_dtype: expected torch\.int32 or torch\.int64, got torch\.int16"),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, values_dtype=torch.float64),
         r"values_dtype: expected torch\.float32, torch\.float16 or torch\.bfloat16, got torch\.float64"),
    ]
    value_errors = [
        (lambda: lig.indexer_paged(q, cache, table, w, 3, None),
         r"actual_seq_lengths_key: expected a \[B\] tensor of key lengths "
         r"\(required for a paged key cache\), got None"),
        (lambda: lig.indexer_paged(q, cache, table, w, 0, lengths), "sparse_count: expected a value >= 1, got 0"),
        (lambda: lig.indexer_paged(q, cache, table, w, -3, lengths), "sparse_count: expected a value >= 1, got -3"),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, layout="bsnd"),
         'layout: expected "BSND" or "TND", got "bsnd"'),
        (lambda: lig.indexer_paged(q, cache, table, w, 3, lengths, layout="TND"),
         r"query: expected rank 3 \(\[T1,N1,D\], layout TND\), got rank 4 shape \[2,5,4,8\]"),
        (lambda: lig.indexer_paged(q, cache[:, :, 0], table, w, 3, lengths),
         r"key_cache: expected rank 4 \(\[num_blocks,block_size,N2,D\]\), got rank 3 shape \[7,4,8\]"),
        (lambda: lig.indexer_paged(q, cache, table[0], w, 3, lengths),
         r"block_table: expected rank 2 \(\[B,max_blocks_per_seq\]\), got rank 1 shape \[4\]"),
        # the op itself, not only the wrapper
        (lambda: torch.ops.lig.indexer_paged(q, cache, table, w, -3, None, torch.tensor(lengths), "BSND", 3, BIG, BIG,
                                             torch.int32, None), "sparse_count: expected a value >= 1, got -3"),
    ]
    for call, message in type_errors:
        with pytest.raises(TypeError, match=message):
            call()
    for call, message in value_errors:
        with pytest.raises(lig.LigValueError, match=message) as e:
            call()
        assert e.value.status == lig.LIG_ERR_PARAM_INVALID
    assert no_allocation == []


def test_paged_errors_the_library_finds():
    """Shapes relating the arguments, and the lengths, are the library's checks (with its message),
    made before it writes anything."""
    q, cache, table, w, lengths, _, _, _ = _small()
    cases = [
        (dict(key_cache=cache[..., :6]), r"key_cache: expected shape \[7,4,1,8\] \(D like query\), got \[7,4,1,6\]"),
        (dict(block_table=table[:1]), r"block_table: expected shape \[2,4\] \(B like query\), got \[1,4\]"),
        (dict(lengths=[9, 17]), "actual_seq_lengths_key"),  # 17 > 4 blocks of 4
        (dict(lengths=[9]), "actual_seq_lengths_key"),
        (dict(key_cache=cache.expand(-1, -1, 3, -1)), "key_cache: expected a head count N2 that divides"),
        (dict(weights=w[..., :3]), "weights: expected shape"),
        (dict(key_cache=cache.half()), r"key_cache: expected dtype FLOAT32 \(like query\), got FLOAT16"),
    ]
    for change, message in cases:
        args = dict(query=q, key_cache=cache, block_table=table, weights=w, lengths=lengths)
        args.update(change)
        with pytest.raises(lig.LigValueError, match=message) as e:
            lig.indexer_paged(args["query"], args["key_cache"], args["block_table"], args["weights"], 3,
                              args["lengths"])
        assert e.value.status == lig.LIG_ERR_PARAM_INVALID
    # TND: B is the length of actual_seq_lengths_query, and the table needs one row per batch
    tq, tcache, ttable, tw, tlengths, taq, _, _ = _small("TND")
    with pytest.raises(lig.LigValueError, match="block_table: expected shape"):
        lig.indexer_paged(tq, tcache, ttable, tw, 3, tlengths + [0], actual_seq_lengths_query=[5, 8, 10],
                          layout="TND")
    with pytest.raises(lig.LigValueError, match="actual_seq_lengths_query"):  # required for TND
        lig.indexer_paged(tq, tcache, ttable, tw, 3, tlengths, layout="TND")


def test_paged_lengths_forms_and_numpy():
    q, cache, table, w, lengths, _, _, _ = _small()
    want = lig.indexer_paged(q, cache, table, w, 3, lengths)
    for form in (torch.tensor(lengths, dtype=torch.int32), torch.tensor(lengths), tuple(lengths)):
        got = lig.indexer_paged(q, cache, table, w, 3, form)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    got = lig.indexer_paged(q.numpy(), cache.numpy(), table.numpy(), w.numpy(), 3, lengths)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_paged_values_are_not_differentiable():
    """A gradient asked of sparse_values raises; it is never a silent zero. The indices carry no
    gradient; without inputs that require grad the values do not either."""
    q, cache, table, w, lengths, _, _, _ = _small()
    idx, val = lig.indexer_paged(q, cache, table, w, 3, lengths)
    assert not val.requires_grad and not idx.requires_grad
    for leaf in ("query", "key_cache", "weights"):
        inputs = {"query": q.clone(), "key_cache": cache.clone(), "weights": w.clone()}
        inputs[leaf].requires_grad_(True)
        idx, val = lig.indexer_paged(inputs["query"], inputs["key_cache"], table, inputs["weights"], 3, lengths)
        assert val.requires_grad and not idx.requires_grad
        real = torch.where(idx >= 0, val, 0.0)
        with pytest.raises(RuntimeError, match="sparse_values is not differentiable"):
            real.sum().backward()
        assert inputs[leaf].grad is None
        # next to a differentiable term: still refused, not a gradient that silently lacks the values' part
        idx, val = lig.indexer_paged(inputs["query"], inputs["key_cache"], table, inputs["weights"], 3, lengths)
        with pytest.raises(RuntimeError, match="sparse_values is not differentiable"):
            (torch.where(idx >= 0, val, 0.0).sum() + inputs[leaf].sum()).backward()
        assert inputs[leaf].grad is None
        idx, val = lig.indexer_paged(inputs["query"], inputs["key_cache"], table, inputs["weights"], 3, lengths)
        with pytest.raises(RuntimeError, match="lig.lightning_indexer"):
            torch.autograd.grad(torch.where(idx >= 0, val, 0.0).sum(), inputs[leaf])
    # under no_grad (inference, where paged caches live) nothing is recorded
    with torch.no_grad():
        idx, val = lig.indexer_paged(q.clone().requires_grad_(True), cache, table, w, 3, lengths)
    assert not val.requires_grad


def test_refused_gradient_op():
    """lig::indexer_paged_refuse_grad raises for any non-zero or NaN incoming gradient; an all-zero
    one (what torch.compile's backward hands an unused output) gets the exact answer, zeros."""
    q, cache, table, w, lengths, _, _, _ = _small()
    _, val = lig.indexer_paged(q, cache, table, w, 3, lengths)
    for poke in (1.0, -0.5, float("nan"), float("-inf")):
        g = torch.zeros_like(val)
        g[1, 2, 0] = poke
        with pytest.raises(RuntimeError, match="sparse_values is not differentiable"):
            torch.ops.lig.indexer_paged_refuse_grad(g, q, cache, w, True, True, True)
    dq, dc, dw = torch.ops.lig.indexer_paged_refuse_grad(torch.zeros_like(val), q, cache, w, True, True, True)
    assert dq.shape == q.shape and dc.shape == cache.shape and dw.shape == w.shape
    assert not dq.any() and not dc.any() and not dw.any()
    # gradients nobody asked for are not materialised (the key cache can be large)
    dq, dc, dw = torch.ops.lig.indexer_paged_refuse_grad(torch.zeros_like(val), q, cache, w, True, False, False)
    assert dq.shape == q.shape and dc.numel() == 0 and dw.numel() == 0


@pytest.mark.parametrize(
    "backend",
    ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
        shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a C++ compiler"))],
)
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_paged_torch_compile_fullgraph(backend, layout):
    q, cache, table, w, lengths, aq, _, _ = _small(layout, block_size=3)
    lengths_t = torch.tensor(lengths)

    def fn(q, cache, table, w, lengths):
        idx, val = lig.indexer_paged(q, cache, table, w, 4, lengths, actual_seq_lengths_query=aq, layout=layout,
                                     values_dtype=torch.float32)
        return idx, val, (q * torch.where(idx >= 0, 1.0, 0.0).sum()).sum()

    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=backend)
    eager = fn(q, cache, table, w, lengths_t)
    got = compiled(q, cache, table, w, lengths_t)
    assert torch.equal(eager[0], got[0]) and torch.equal(eager[1], got[1])  # lig's outputs: the same call
    if backend == "aot_eager":  # torch's sum in eager's order: the same bits
        assert torch.equal(got[2], eager[2])
    else:
        torch.testing.assert_close(got[2], eager[2], rtol=1e-5, atol=1e-5)  # torch's sum, which inductor may reorder
    # with a query that requires grad: the compiled backward of the differentiable output works
    # (the values' unused gradient is zero), and a gradient through the values is refused
    leaf = q.clone().requires_grad_(True)
    idx, val, other = compiled(leaf, cache, table, w, lengths_t)
    other.backward()
    assert torch.equal(leaf.grad, torch.full_like(q, float((idx >= 0).sum())))
    idx, val, other = compiled(leaf, cache, table, w, lengths_t)
    with pytest.raises(RuntimeError, match="sparse_values is not differentiable"):
        torch.where(idx >= 0, val, 0.0).sum().backward()


def test_paged_opcheck():
    """Schema, fake-tensor and autograd-registration checks of lig::indexer_paged (and of the op
    its backward runs), as for the other ops."""
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    for layout in ("BSND", "TND"):
        q, cache, table, w, lengths, aq, _, _ = _small(layout)
        aq_t = None if aq is None else torch.tensor(aq)
        torch.library.opcheck(torch.ops.lig.indexer_paged.default,
                              (q, cache, table, w, 3, aq_t, torch.tensor(lengths), layout, 3, BIG, BIG, torch.int64,
                               torch.float32), test_utils=utils)
        torch.library.opcheck(torch.ops.lig.indexer_paged.default,
                              (q.requires_grad_(), cache, table.long(), w, 5, aq_t,
                               torch.tensor(lengths, dtype=torch.int32), layout, 0, 2, 1, torch.int32, None),
                              test_utils=utils)
    _, val = lig.indexer_paged(q.detach(), cache, table, w, 3, lengths, actual_seq_lengths_query=aq, layout=layout)
    torch.library.opcheck(torch.ops.lig.indexer_paged_refuse_grad.default,
                          (torch.zeros_like(val), q.detach(), cache, w, True, False, True), test_utils=utils)


def test_paged_fake_implementation_validates_and_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    q, cache, table, w, lengths, _, _, _ = _small()
    cache2 = cache.expand(-1, -1, 2, -1)
    with FakeTensorMode() as mode:
        fq, fc, ft, fw, fl = (mode.from_tensor(t) for t in (q, cache, table, w, torch.tensor(lengths)))
        idx, val = torch.ops.lig.indexer_paged(fq, fc, ft, fw, 5, None, fl, "BSND", 3, BIG, BIG, torch.int64, None)
        assert idx.shape == (2, 5, 5) and idx.dtype == torch.int64 and val.dtype == torch.float32
        two_heads = mode.from_tensor(cache2)
        idx, _ = torch.ops.lig.indexer_paged(fq, two_heads, ft, fw, 5, None, fl, "BSND", 3, BIG, BIG, torch.int32,
                                             None)
        assert idx.shape == (2, 5, 2, 5)
        with pytest.raises(lig.LigValueError, match="key_cache: expected rank 4"):
            torch.ops.lig.indexer_paged(fq, fc[0], ft, fw, 5, None, fl, "BSND", 3, BIG, BIG, torch.int32, None)
        with pytest.raises(TypeError, match="block_table: expected dtype int32 or int64"):
            torch.ops.lig.indexer_paged(fq, fc, ft.float(), fw, 5, None, fl, "BSND", 3, BIG, BIG, torch.int32, None)


def test_paged_reference_reads_through_the_table():
    """The reference itself: paging the keys and reading them back by the definition gives the
    contiguous reference's result (so the two are not the same code path by accident)."""
    q, cache, table, w, lengths, _, k, ak = _small(block_size=2)
    a = reference_topk_paged("BSND", q, cache, table, w, 3, None, lengths, 3, BIG, BIG)
    b = reference_topk("BSND", q, k, w, 3, None, ak, 3, BIG, BIG)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
