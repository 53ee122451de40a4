"""lig.fp8_mqa_logits, lig.fp8_paged_mqa_logits and lig.get_paged_mqa_logits_metadata (DeepGEMM's
names and semantics, docs/contract.md 2.6) against a float64 reference of the formula written here:

    logits[m, n] = sum_h weights[m, h] * ReLU((q[m, h] . k[n]) * k_scale[n])

FP8 e4m3 and INT8 codes are exact in float64, so the reference's only roundings are float64's; the
library's fp32 result must lie within 2 (D + H + 4) 2^-24 sum |w k_scale q_d k_d| of it (contract 2.4)."""
import pytest
import torch

import lig

CODES = (torch.float8_e4m3fn, torch.int8)


def codes(shape, dtype, gen):
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, generator=gen, dtype=torch.int8)
    x = torch.randn(shape, generator=gen) * 4
    return x.clamp(-448, 448).to(torch.float8_e4m3fn)


def reference(q, k, k_scale, w):
    """[M, N] float64 scores and their error bound (q [M,H,D], k [N,D], k_scale [N], w [M,H])."""
    q64, k64, s64, w64 = q.to(torch.float64), k.to(torch.float64), k_scale.to(torch.float64), w.to(torch.float64)
    dots = torch.einsum("mhd,nd->mhn", q64, k64)
    x = dots * s64[None, None, :]
    score = (w64[:, :, None] * torch.where(x > 0, x, torch.zeros_like(x))).sum(1)
    mag = torch.einsum("mhd,nd->mhn", q64.abs(), k64.abs()) * s64.abs()[None, None, :]
    size = (w64.abs()[:, :, None] * mag).sum(1)
    D, H = q.shape[-1], q.shape[-2]
    return score, 2 * (D + H + 4) * 2.0**-24 * size + 2.0**-149


def check_scored(got, ref, tol, mask):
    diff = (got.to(torch.float64) - ref).abs()
    assert bool((diff[mask] <= tol[mask]).all()), f"largest excess {float((diff - tol)[mask].max())}"


@pytest.mark.parametrize("dtype", CODES)
@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("clean", [True, False])
def test_fp8_mqa_logits(dtype, compressed, clean):
    gen = torch.Generator().manual_seed(11 + compressed + 2 * clean)
    M, N, H, D = 9, 157, 8, 64
    q, k = codes((M, H, D), dtype, gen), codes((N, D), dtype, gen)
    k_scale = torch.rand(N, generator=gen) + 0.25
    w = torch.randn(M, H, generator=gen)
    a = torch.randint(0, N + 1, (M,), generator=gen)
    b = torch.randint(0, N + 1, (M,), generator=gen)
    start, end = torch.minimum(a, b).to(torch.int32), torch.maximum(a, b).to(torch.int32)
    start[0], end[0] = 0, N  # the whole sequence
    start[1], end[1] = 5, 5  # nothing
    width = int((end - start).max()) if compressed else 0
    out = lig.fp8_mqa_logits(q, (k, k_scale), w, start, end, clean_logits=clean, max_seqlen_k=width)
    assert out.shape == (M, width if compressed else N) and out.dtype == torch.float32
    ref, tol = reference(q, k, k_scale, w)
    cols = torch.arange(out.shape[1])[None, :]
    keys = cols + start[:, None] if compressed else cols.expand(M, -1)
    scored = (keys >= start[:, None]) & (keys < end[:, None])
    ref_at = torch.gather(ref, 1, keys.clamp_max(N - 1))
    tol_at = torch.gather(tol, 1, keys.clamp_max(N - 1))
    check_scored(out, ref_at, tol_at, scored)
    if clean:
        assert bool((out[~scored] == float("-inf")).all())


def test_fp8_mqa_logits_matches_deepgemm_formula_exactly_on_int8():
    """INT8 with unit weights and scales 1: every score is an exact integer sum, the same in fp32."""
    gen = torch.Generator().manual_seed(3)
    q, k = codes((4, 2, 16), torch.int8, gen), codes((10, 16), torch.int8, gen)
    out = lig.fp8_mqa_logits(q, (k, torch.ones(10)), torch.ones(4, 2), torch.zeros(4, dtype=torch.int32),
                             torch.full((4,), 10, dtype=torch.int32))
    ref, _ = reference(q, k, torch.ones(10), torch.ones(4, 2))
    assert torch.equal(out.to(torch.float64), ref)


def paged_keys(dtype, B, max_blocks, D, block_kv, gen):
    """(cache [num_blocks, block_kv, 1, D+4], table [B, max_blocks] int32, keys [B, N, D], scales [B, N]):
    sequence b's key s in slot s % block_kv of block table[b, s // block_kv], laid out by hand."""
    num_blocks = B * max_blocks + 3
    k_all = codes((B, max_blocks * block_kv, D), dtype, gen)
    s_all = torch.rand(B, max_blocks * block_kv, generator=gen) + 0.5
    perm = torch.randperm(num_blocks, generator=gen)
    table = perm[: B * max_blocks].view(B, max_blocks).to(torch.int32)
    cache = torch.zeros(num_blocks, block_kv * (D + 4), dtype=torch.uint8)
    for b in range(B):
        for j in range(max_blocks):
            blk = int(table[b, j])
            keys = k_all[b, j * block_kv:(j + 1) * block_kv]
            cache[blk, : block_kv * D] = keys.contiguous().view(torch.uint8).reshape(-1)
            cache[blk, block_kv * D:] = s_all[b, j * block_kv:(j + 1) * block_kv].contiguous().view(torch.uint8)
    return cache.view(num_blocks, block_kv, 1, D + 4), table, k_all, s_all


def paged_case(dtype, B, next_n, H, D, block_kv, gen, two_d=False):
    max_blocks = 6
    context = torch.randint(next_n, max_blocks * block_kv + 1, (B,), generator=gen)
    cache, table, k_all, s_all = paged_keys(dtype, B, max_blocks, D, block_kv, gen)
    q = codes((B, next_n, H, D), dtype, gen)
    w = torch.randn(B * next_n, H, generator=gen)
    if two_d:
        lens = torch.stack([torch.randint(0, int(c) + 1, (next_n,), generator=gen) for c in context]).to(torch.int32)
        ends = lens.to(torch.int64)
    else:
        lens = context.to(torch.int32)
        ends = (context[:, None] - next_n + 1 + torch.arange(next_n)[None, :]).clamp_min(0)
    return q, cache, w, lens, table, k_all, s_all, ends.reshape(-1), max_blocks * block_kv


@pytest.mark.parametrize("dtype", CODES)
@pytest.mark.parametrize("two_d", [False, True])
def test_fp8_paged_mqa_logits(dtype, two_d):
    gen = torch.Generator().manual_seed(21 + two_d)
    B, next_n, H, D, block_kv = 3, 2, 16, 64, 16
    q, cache, w, lens, table, k_all, s_all, ends, max_len = paged_case(dtype, B, next_n, H, D, block_kv, gen, two_d)
    out = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, None, max_len, clean_logits=True)
    assert out.shape == (B * next_n, max_len)
    cols = torch.arange(max_len)[None, :]
    for b in range(B):
        ref, tol = reference(q[b], k_all[b], s_all[b], w[b * next_n:(b + 1) * next_n])
        rows = slice(b * next_n, (b + 1) * next_n)
        seen = cols < ends[rows, None]
        check_scored(out[rows], ref, tol, seen)
        assert bool((out[rows][~seen] == float("-inf")).all())
    # a schedule splits the work; the bytes stay the same
    for sms in (1, 3, 8, 40):
        meta = lig.get_paged_mqa_logits_metadata(lens, block_kv, sms)
        assert meta.shape == (sms + 1, 2) and meta.dtype == torch.int32
        again = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, meta, max_len, clean_logits=True)
        assert torch.equal(again.view(torch.int32), out.view(torch.int32))


def test_paged_clean_false_leaves_columns_and_matches_clean():
    gen = torch.Generator().manual_seed(5)
    q, cache, w, lens, table, *_, ends, max_len = paged_case(torch.float8_e4m3fn, 2, 1, 4, 32, 8, gen)
    a = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, None, max_len, clean_logits=False)
    b = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, None, max_len, clean_logits=True)
    seen = torch.arange(max_len)[None, :] < ends[:, None]
    assert torch.equal(a[seen].view(torch.int32), b[seen].view(torch.int32))


def test_get_paged_mqa_logits_metadata_values():
    # longest contexts 5, 0, 17 in blocks of 4: 2, 0, 5 blocks; 3 workers start at blocks 0, 2, 4
    meta = lig.get_paged_mqa_logits_metadata(torch.tensor([5, 0, 17], dtype=torch.int32), 4, 3)
    assert meta.tolist() == [[0, 0], [2, 0], [2, 2], [3, 0]]
    two_d = lig.get_paged_mqa_logits_metadata(torch.tensor([[5, 3], [0, 0], [2, 17]], dtype=torch.int32), 4, 3)
    assert torch.equal(two_d, meta)


def test_errors_name_the_argument():
    gen = torch.Generator().manual_seed(1)
    q, k = codes((2, 2, 8), torch.float8_e4m3fn, gen), codes((5, 8), torch.float8_e4m3fn, gen)
    with pytest.raises(lig.LigValueError, match="key_end"):
        lig.fp8_mqa_logits(q, (k, torch.ones(5)), torch.ones(2, 2), torch.zeros(2, dtype=torch.int32),
                           torch.full((2,), 6, dtype=torch.int32))
    with pytest.raises(lig.LigValueError, match="logits"):
        lig.fp8_mqa_logits(q, (k, torch.ones(5)), torch.ones(2, 2), torch.zeros(2, dtype=torch.int32),
                           torch.full((2,), 5, dtype=torch.int32), max_seqlen_k=3)
    with pytest.raises(TypeError, match="q"):
        lig.fp8_mqa_logits(q.float(), (k, torch.ones(5)), torch.ones(2, 2), torch.zeros(2, dtype=torch.int32),
                           torch.full((2,), 5, dtype=torch.int32))


def test_fake_kernels_give_the_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    gen = torch.Generator().manual_seed(2)
    q, cache, w, lens, table, *_, max_len = paged_case(torch.float8_e4m3fn, 2, 2, 4, 32, 8, gen)
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = torch.ops.lig.fp8_paged_mqa_logits(q, cache, w, lens, table, None, max_len, True)
        meta = torch.ops.lig.get_paged_mqa_logits_metadata(lens, 8, 5)
        m = torch.ops.lig.fp8_mqa_logits(q[0], cache[:7, 0, 0, :32].view(torch.float8_e4m3fn), torch.ones(7),
                                         w[:2], torch.zeros(2, dtype=torch.int32), torch.ones(2, dtype=torch.int32),
                                         True, 0)
    assert out.shape == (4, max_len) and meta.shape == (6, 2) and m.shape == (2, 7)


# ---- DeepGEMM's varlen indices --------------------------------------------------------------------


def varlen_case(gen, dtype=torch.float8_e4m3fn, H=8, D=32, block_kv=8):
    """DeepGEMM's test's varlen problem: 4 sequences of 1..4 query tokens flattened into rows
    (next_n 1), sequence ids [0,0,0,1,2,2,...] in indices, row t's context length its sequence's
    plus its offset in it, 2-D [rows, 1]. Only the first row of each run holds its sequence's
    table row; the others hold other sequences' rows, which the kernel must not read."""
    seqs, max_blocks = 4, 6
    cache, seq_table, k_all, s_all = paged_keys(dtype, seqs, max_blocks, D, block_kv, gen)
    tokens = torch.randint(1, 5, (seqs,), generator=gen)
    context = torch.randint(0, max_blocks * block_kv - 3, (seqs,), generator=gen)
    seq_of_row = torch.arange(seqs).repeat_interleave(tokens)
    offset = torch.cat([torch.arange(int(n)) for n in tokens])
    lens = (context[seq_of_row] + offset).to(torch.int32).view(-1, 1)
    first = torch.cat([torch.tensor([True]), seq_of_row[1:] != seq_of_row[:-1]])
    table = torch.where(first[:, None], seq_table[seq_of_row], seq_table[(seq_of_row + 1) % seqs])
    rows = int(tokens.sum())
    q = codes((rows, 1, H, D), dtype, gen)
    w = torch.randn(rows, H, generator=gen)
    return q, cache, w, lens, table, seq_of_row.to(torch.int32), seq_table, k_all, s_all, max_blocks * block_kv


@pytest.mark.parametrize("dtype", CODES)
def test_fp8_paged_mqa_logits_varlen_indices(dtype):
    gen = torch.Generator().manual_seed(41)
    q, cache, w, lens, table, ids, seq_table, k_all, s_all, max_len = varlen_case(gen, dtype)
    meta = lig.get_paged_mqa_logits_metadata(lens, 8, 3, indices=ids)
    out = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, meta, max_len, True, ids)
    cols = torch.arange(max_len)[None, :]
    for t in range(q.shape[0]):
        seq = int(ids[t])
        ref, tol = reference(q[t], k_all[seq], s_all[seq], w[t:t + 1])
        seen = cols < int(lens[t, 0])
        check_scored(out[t:t + 1], ref, tol, seen)
        assert bool((out[t][~seen[0]] == float("-inf")).all())
    # the same bytes as the plain call with each row's own sequence's table row, under any schedule
    plain = lig.fp8_paged_mqa_logits(q, cache, w, lens, seq_table[ids.long()], None, max_len, True)
    assert torch.equal(out.view(torch.int32), plain.view(torch.int32))
    assert torch.equal(lig.get_paged_mqa_logits_metadata(lens, 8, 3), meta)
    # and not the bytes of the rows' own (here: other sequences') table rows, which indices override
    assert not torch.equal(lig.fp8_paged_mqa_logits(q, cache, w, lens, table, None, max_len, True), out)


def test_varlen_runs_are_maximal_stretches_of_equal_ids():
    """ids [0, 0, 1, 0]: the last row is a run of its own and reads its own table row, not row 0's."""
    gen = torch.Generator().manual_seed(43)
    cache, seq_table, k_all, s_all = paged_keys(torch.float8_e4m3fn, 3, 4, 16, 4, gen)
    table = seq_table[torch.tensor([0, 1, 2, 2])]
    ids = torch.tensor([0, 0, 1, 0], dtype=torch.int32)
    lens = torch.tensor([[3], [9], [16], [11]], dtype=torch.int32)
    q, w = codes((4, 1, 4, 16), torch.float8_e4m3fn, gen), torch.randn(4, 4, generator=gen)
    out = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, None, 16, True, indices=ids)
    reads = [0, 0, 2, 2]  # the table row each row reads: its run's first row's
    cols = torch.arange(16)[None, :]
    for t, seq in enumerate(reads):
        ref, tol = reference(q[t], k_all[seq], s_all[seq], w[t:t + 1])
        check_scored(out[t:t + 1], ref, tol, cols < int(lens[t, 0]))


def test_varlen_indices_refusals_name_the_argument():
    gen = torch.Generator().manual_seed(45)
    q, cache, w, lens, table, ids, *_, max_len = varlen_case(gen)
    call = lig.fp8_paged_mqa_logits
    with pytest.raises(TypeError, match="indices: expected dtype int32"):
        call(q, cache, w, lens, table, None, max_len, True, ids.long())
    with pytest.raises(lig.LigValueError, match="indices: expected shape"):
        call(q, cache, w, lens, table, None, max_len, True, ids[1:])
    with pytest.raises(lig.LigValueError, match="indices: expected next_n = 1"):
        call(q.view(-1, 1, *q.shape[2:])[:2].reshape(1, 2, *q.shape[2:]), cache, w[:2], lens[:2].view(1, 2),
             table[:1], None, max_len, True, ids[:1])
    with pytest.raises(lig.LigValueError, match="indices: expected next_n = 1"):
        lig.get_paged_mqa_logits_metadata(lens[:2].view(1, 2), 8, 3, indices=ids[:1])
    longer = lens.clone()
    two = int((ids[1:] == ids[:-1]).nonzero()[0, 0])  # a run of two rows or more: give its first row more keys
    last = two
    while last + 1 < ids.shape[0] and ids[last + 1] == ids[two]:
        last += 1
    longer[two, 0] = lens[last, 0] + 1
    with pytest.raises(lig.LigValueError, match="context_lens: expected each row's context length <="):
        call(q, cache, w, longer, table, None, max_len, True, ids)


def test_logits_ops_opcheck_and_compile():
    gen = torch.Generator().manual_seed(47)
    q, cache, w, lens, table, ids, *_, max_len = varlen_case(gen)
    utils = ("test_autograd_registration", "test_faketensor")  # test_schema compares float8 inputs with arithmetic torch lacks
    torch.library.opcheck(torch.ops.lig.fp8_paged_mqa_logits.default,
                          (q, cache, w, lens, table, None, max_len, True, ids), test_utils=utils)
    torch.library.opcheck(torch.ops.lig.get_paged_mqa_logits_metadata.default, (lens, 8, 4, ids))
    mq, mk = codes((3, 2, 16), torch.float8_e4m3fn, gen), codes((7, 16), torch.float8_e4m3fn, gen)
    starts, ends = torch.tensor([0, 2, 1], dtype=torch.int32), torch.tensor([7, 5, 1], dtype=torch.int32)
    torch.library.opcheck(torch.ops.lig.fp8_mqa_logits.default,
                          (mq, mk, torch.ones(7), torch.ones(3, 2), starts, ends, True, 0), test_utils=utils)

    def fn(q, cache, w, lens, table, ids, mq, mk, starts, ends):
        meta = lig.get_paged_mqa_logits_metadata(lens, 8, 4, indices=ids)
        paged = lig.fp8_paged_mqa_logits(q, cache, w, lens, table, meta, max_len, clean_logits=True, indices=ids)
        return paged, lig.fp8_mqa_logits(mq, (mk, torch.ones(7)), torch.ones(3, 2), starts, ends)

    args = (q, cache, w, lens, table, ids, mq, mk, starts, ends)
    eager = fn(*args)
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)
    for a, b in zip(eager, got):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
