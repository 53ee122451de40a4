"""lig.fp8_fp4_mqa_logits, lig.fp8_fp4_paged_mqa_logits, lig.get_mqa_logits_metadata and
lig.compressed_context_lens (DeepGEMM's current names, docs/contract.md 2.6) against float64
references written here: the MXFP4 codes and e8m0 scales are decoded in float64 by this file
(OCP e2m1 table, element 2j in the low nibble, block j's scale in byte j of the token's int32
word), then

    logits[m, n] = sum_h weights[m, h] * ReLU(q[m, h] . k[n])

The decoded values are exact in float64, so the library's fp32 result must lie within
2 (D + H + 4) 2^-24 sum |w q_d k_d| of it (contract 2.4); bf16 logits within that plus half a
bf16 ulp, and bit for bit the fp32 logits rounded (torch's own fp32 -> bf16 rounding)."""
import pytest
import torch

import lig

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


def decode_codes(packed):
    """uint8 [..., D/2] -> float64 [..., D]: the low nibble is element 2j, bit 3 the sign."""
    b = packed.to(torch.int64)
    nib = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)
    mag = E2M1[nib & 7]
    return torch.where(nib >= 8, -mag, mag)


def decode_scales(words, D):
    """int32 words [...] (four e8m0 bytes, block j in byte j) -> float64 [..., D], each block's scale."""
    w = words.to(torch.int64) & 0xFFFFFFFF
    blocks = (D + 31) // 32
    exps = torch.stack([(w >> (8 * j)) & 0xFF for j in range(blocks)], dim=-1)
    per_block = torch.pow(torch.tensor(2.0, dtype=torch.float64), (exps - 127).to(torch.float64))
    return per_block.repeat_interleave(32, dim=-1)[..., :D]


def fp4_data(shape, gen):
    """Random codes uint8 [*shape[:-1], D/2] and int32 scale words [*shape[:-1]] (bytes 118..134:
    scales 2^-9 .. 2^7, every code and every scale reached)."""
    *lead, D = shape
    codes = torch.randint(0, 256, (*lead, D // 2), generator=gen, dtype=torch.int64).to(torch.uint8)
    exps = torch.randint(118, 135, (*lead, 4), generator=gen, dtype=torch.int64)
    words = (exps[..., 0] | exps[..., 1] << 8 | exps[..., 2] << 16 | exps[..., 3] << 24)
    words = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
    return codes, words


def fp4_values(codes, words):
    D = codes.shape[-1] * 2
    return decode_codes(codes) * decode_scales(words, D)


def reference(q64, k64, w):
    """[M, N] float64 scores and their fp32 bound (q64 [M,H,D], k64 [N,D] decoded, w [M,H])."""
    w64 = w.to(torch.float64)
    dots = torch.einsum("mhd,nd->mhn", q64, k64)
    score = (w64[:, :, None] * dots.clamp_min(0)).sum(1)
    size = (w64.abs()[:, :, None] * torch.einsum("mhd,nd->mhn", q64.abs(), k64.abs())).sum(1)
    D, H = q64.shape[-1], q64.shape[-2]
    return score, 2 * (D + H + 4) * 2.0**-24 * size + 2.0**-149


def check(got, ref, tol, mask):
    if got.dtype == torch.bfloat16:
        tol = tol + ref.abs() * 2.0**-8 + 2.0**-133
    diff = (got.to(torch.float64) - ref).abs()
    assert bool((diff[mask] <= tol[mask]).all()), f"largest excess {float((diff - tol)[mask].max())}"


def ranges(M, N, gen):
    a, b = torch.randint(0, N + 1, (M,), generator=gen), torch.randint(0, N + 1, (M,), generator=gen)
    start, end = torch.minimum(a, b).to(torch.int32), torch.maximum(a, b).to(torch.int32)
    start[0], end[0] = 0, N
    start[1], end[1] = 4, 4
    return start, end


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("D", [64, 128])
def test_fp4_mqa_logits_against_float64(compressed, clean, D):
    gen = torch.Generator().manual_seed(3 + compressed + 2 * clean + D)
    M, N, H = 7, 131, 8
    q, q_sf = fp4_data((M, H, D), gen)
    k, k_sf = fp4_data((N, D), gen)
    w = torch.randn(M, H, generator=gen)
    start, end = ranges(M, N, gen)
    width = int((end - start).max()) if compressed else 0
    ref, tol = reference(fp4_values(q, q_sf), fp4_values(k, k_sf), w)
    cols = torch.arange(width if compressed else N)[None, :]
    keys = cols + start[:, None] if compressed else cols.expand(M, -1)
    scored = (keys >= start[:, None]) & (keys < end[:, None])
    ref_at = ref.gather(1, keys.clamp(0, N - 1))
    tol_at = tol.gather(1, keys.clamp(0, N - 1))
    outs = {}
    for dtype in (torch.float32, torch.bfloat16):
        out = lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, start, end, clean_logits=clean, max_seqlen_k=width,
                                     logits_dtype=dtype)
        assert out.dtype == dtype and out.shape == (M, width if compressed else N)
        check(out, ref_at, tol_at, scored)
        if clean:
            assert bool((out[~scored] == float("-inf")).all())
        outs[dtype] = out
    # bf16: the fp32 logits rounded once, bit for bit, at every scored column
    rounded = outs[torch.float32].to(torch.bfloat16)
    assert torch.equal(outs[torch.bfloat16][scored].view(torch.int16), rounded[scored].view(torch.int16))
    # the codes as int8 (DeepGEMM's kPackedFP4) give the same bytes
    again = lig.fp8_fp4_mqa_logits((q.view(torch.int8), q_sf), (k.view(torch.int8), k_sf), w, start, end,
                                   clean_logits=True, max_seqlen_k=width)
    assert torch.equal(again[scored].view(torch.int32), outs[torch.float32][scored].view(torch.int32))


def fused_fp4_cache(k, k_sf, block_kv, gen):
    """DeepGEMM's fused FP4 cache uint8 [blocks, block_kv, 1, D/2 + 4] holding keys k / k_sf in
    shuffled blocks (per block: the block_kv * D/2 code bytes, then block_kv int32 words), and the
    block table [1, blocks] of the sequence."""
    N, half = k.shape
    nblocks = (N + block_kv - 1) // block_kv
    perm = torch.randperm(nblocks + 2, generator=gen)[:nblocks]
    cache = torch.randint(0, 256, (nblocks + 2, block_kv * (half + 4)), generator=gen, dtype=torch.int64).to(torch.uint8)
    for j in range(nblocks):
        rows = slice(j * block_kv, min(N, (j + 1) * block_kv))
        n = rows.stop - rows.start
        blk = cache[int(perm[j])]
        blk[:n * half] = k[rows].reshape(-1)
        blk[block_kv * half:block_kv * half + 4 * n] = k_sf[rows].view(torch.uint8).reshape(-1)
    return cache.view(nblocks + 2, block_kv, 1, half + 4), perm.to(torch.int32)[None, :]


@pytest.mark.parametrize("two_d", [False, True])
@pytest.mark.parametrize("logits_dtype", [torch.float32, torch.bfloat16])
def test_fp4_paged_mqa_logits_against_float64(two_d, logits_dtype):
    gen = torch.Generator().manual_seed(21 + two_d)
    B, next_n, H, D, block_kv = 3, 2, 8, 128, 16
    ctx = torch.tensor([5, 70, 33], dtype=torch.int32)
    N = int(ctx.max())
    q, q_sf = fp4_data((B, next_n, H, D), gen)
    w = torch.randn(B * next_n, H, generator=gen)
    keys = [fp4_data((N, D), gen) for _ in range(B)]
    caches, tables = zip(*(fused_fp4_cache(k, s, block_kv, gen) for k, s in keys))
    # one cache for every batch: concatenate the blocks, offset the tables
    offs = [0]
    for c in caches[:-1]:
        offs.append(offs[-1] + c.shape[0])
    cache = torch.cat(caches, 0)
    table = torch.cat([t + o for t, o in zip(tables, offs)], 0)
    if two_d:
        lens = torch.stack([ctx - 1, ctx], 1).to(torch.int32)
    else:
        lens = ctx
    ends = lens if two_d else (ctx[:, None] - next_n + 1 + torch.arange(next_n)).clamp_min(0)
    max_len = N + 3
    meta = lig.get_paged_mqa_logits_metadata(lens if two_d else lens[:, None].expand(B, next_n).contiguous(),
                                             block_kv, 5)
    out = lig.fp8_fp4_paged_mqa_logits((q, q_sf), cache, w, lens, table, meta, max_len, clean_logits=True,
                                       logits_dtype=logits_dtype)
    assert out.shape == (B * next_n, max_len) and out.dtype == logits_dtype
    plain = lig.fp8_fp4_paged_mqa_logits((q, q_sf), cache, w, lens, table, None, max_len, True, logits_dtype)
    assert torch.equal(plain.view(torch.int16 if logits_dtype == torch.bfloat16 else torch.int32),
                       out.view(torch.int16 if logits_dtype == torch.bfloat16 else torch.int32))
    for b in range(B):
        k64 = fp4_values(*keys[b])
        for i in range(next_n):
            r = b * next_n + i
            ref, tol = reference(fp4_values(q[b, i:i + 1], q_sf[b, i:i + 1]), k64, w[r:r + 1])
            e = int(ends[b, i])
            check(out[r:r + 1, :e], ref[:, :e], tol[:, :e], torch.ones(1, e, dtype=torch.bool))
            assert bool((out[r, e:] == float("-inf")).all())


def test_fp8_path_is_the_legacy_function():
    gen = torch.Generator().manual_seed(5)
    M, N, H, D = 6, 50, 4, 32
    q = (torch.randn(M, H, D, generator=gen) * 3).to(torch.float8_e4m3fn)
    k = (torch.randn(N, D, generator=gen) * 3).to(torch.float8_e4m3fn)
    s = torch.rand(N, generator=gen) + 0.5
    w = torch.randn(M, H, generator=gen)
    start, end = ranges(M, N, gen)
    legacy = lig.fp8_mqa_logits(q, (k, s), w, start, end)
    new = lig.fp8_fp4_mqa_logits((q, None), (k, s), w, start, end)
    assert torch.equal(legacy.view(torch.int32), new.view(torch.int32))
    bf = lig.fp8_fp4_mqa_logits((q, None), (k, s), w, start, end, logits_dtype=torch.bfloat16)
    fin = legacy.isfinite()
    assert torch.equal(bf[fin].view(torch.int16), legacy.to(torch.bfloat16)[fin].view(torch.int16))


def test_deepgemm_28_spelling_and_metadata_same_bytes():
    gen = torch.Generator().manual_seed(9)
    M, N, H, D = 11, 90, 8, 64
    q, q_sf = fp4_data((M, H, D), gen)
    k, k_sf = fp4_data((N, D), gen)
    w = torch.randn(M, H, generator=gen)
    start, end = ranges(M, N, gen)
    width = int((end - start).max())
    v26 = lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, start, end, True, width, torch.float32)
    for threads in (1, 3):
        lig.set_num_threads(threads)
        try:
            meta = lig.get_mqa_logits_metadata(start, end, N, H)
            assert meta.dtype == torch.int32 and meta.shape == (threads + 1,)
            assert int(meta[0]) == 0 and int(meta[-1]) == M and bool((meta[1:] >= meta[:-1]).all())
            v28 = lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, start, end, width, meta)
        finally:
            lig.set_num_threads(0)
        assert torch.equal(v26.view(torch.int32), v28.view(torch.int32))
    bad = torch.tensor([0, 5, 3, M], dtype=torch.int32)
    with pytest.raises(lig.LigValueError, match="schedule_meta"):
        lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, start, end, width, bad)
    with pytest.raises(TypeError, match="max_seqlen_k"):
        lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, start, end, width, max_seqlen_k=width)


def test_paged_spellings_and_indices():
    gen = torch.Generator().manual_seed(13)
    B, H, D, block_kv = 4, 8, 64, 8
    q, q_sf = fp4_data((B, 1, H, D), gen)
    k, k_sf = fp4_data((40, D), gen)
    cache, table1 = fused_fp4_cache(k, k_sf, block_kv, gen)
    table = table1.expand(B, -1).contiguous()
    lens = torch.tensor([[10], [20], [30], [40]], dtype=torch.int32)
    ids = torch.tensor([0, 0, 0, 0], dtype=torch.int32)  # one request's four tokens
    w = torch.randn(B, H, generator=gen)
    a = lig.fp8_fp4_paged_mqa_logits((q, q_sf), cache, w, lens, table, None, 40, False, torch.float32, ids)
    b = lig.fp8_fp4_paged_mqa_logits((q, q_sf), cache, w, lens, table, None, 40, ids)  # 2.8
    c = lig.fp8_fp4_paged_mqa_logits((q, q_sf), cache, w, lens, table, None, 40)
    for r in range(B):
        e = int(lens[r, 0])
        assert torch.equal(a[r, :e].view(torch.int32), b[r, :e].view(torch.int32))
        assert torch.equal(a[r, :e].view(torch.int32), c[r, :e].view(torch.int32))


def test_errors_name_the_argument():
    gen = torch.Generator().manual_seed(2)
    q, q_sf = fp4_data((3, 4, 64), gen)
    k, k_sf = fp4_data((9, 64), gen)
    w, s, e = torch.ones(3, 4), torch.zeros(3, dtype=torch.int32), torch.full((3,), 9, dtype=torch.int32)
    with pytest.raises(lig.LigValueError, match="logits_dtype"):
        lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, s, e, logits_dtype=torch.float16)
    with pytest.raises(TypeError, match=r"q\[1\]"):
        lig.fp8_fp4_mqa_logits((q, q_sf.float()), (k, k_sf), w, s, e)
    with pytest.raises(TypeError, match="kv"):
        lig.fp8_fp4_mqa_logits((q, q_sf), k, w, s, e)
    cache, table = fused_fp4_cache(k, k_sf, 8, gen)
    with pytest.raises(lig.LigValueError, match="kv_cache"):
        lig.fp8_fp4_paged_mqa_logits((q[:, None, :, :16], q_sf[:, None]), cache, w, e[:1], table, None, 9)


def test_ops_opcheck_fake_and_compile():
    gen = torch.Generator().manual_seed(31)
    q, q_sf = fp4_data((3, 8, 64), gen)
    k, k_sf = fp4_data((20, 64), gen)
    w = torch.randn(3, 8, generator=gen)
    s, e = torch.tensor([0, 3, 7], dtype=torch.int32), torch.tensor([20, 9, 7], dtype=torch.int32)
    pq, pq_sf = fp4_data((2, 2, 8, 64), gen)
    cache, table1 = fused_fp4_cache(k, k_sf, 8, gen)
    table = table1.expand(2, -1).contiguous()
    lens = torch.tensor([12, 20], dtype=torch.int32)
    pw = torch.randn(4, 8, generator=gen)
    torch.library.opcheck(torch.ops.lig.fp8_fp4_mqa_logits.default,
                          (q, q_sf, k, k_sf, w, s, e, True, 0, torch.bfloat16, None))
    torch.library.opcheck(torch.ops.lig.fp8_fp4_paged_mqa_logits.default,
                          (pq, pq_sf, cache, pw, lens, table, None, 24, True, torch.float32, None))
    torch.library.opcheck(torch.ops.lig.get_mqa_logits_metadata.default, (s, e, 20, 8))

    def fn(q, q_sf, k, k_sf, w, s, e, pq, pq_sf, cache, pw, lens, table):
        meta = lig.get_mqa_logits_metadata(s, e, 20, 8)
        dense = lig.fp8_fp4_mqa_logits((q, q_sf), (k, k_sf), w, s, e, 20, meta)
        pmeta = lig.get_paged_mqa_logits_metadata(lens[:, None].expand(2, 2).contiguous(), 8, 3)
        paged = lig.fp8_fp4_paged_mqa_logits((pq, pq_sf), cache, pw, lens, table, pmeta, 24, clean_logits=True,
                                             logits_dtype=torch.bfloat16)
        return dense, paged, lig.compressed_context_lens(lens, 4, 2)

    args = (q, q_sf, k, k_sf, w, s, e, pq, pq_sf, cache, pw, lens, table)
    eager = fn(*args)
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)
    for a, b in zip(eager, got):
        assert a.shape == b.shape and a.dtype == b.dtype
        fin = a.isfinite() if a.is_floating_point() else torch.ones_like(a, dtype=torch.bool)
        assert torch.equal(a[fin], b[fin])


def test_compressed_context_lens_is_vllms_rule():
    seq = torch.tensor([0, 1, 3, 4, 5, 17, 128], dtype=torch.int64)
    for ratio in (1, 4, 128):
        for next_n in (1, 2, 4):
            got = lig.compressed_context_lens(seq, ratio, next_n)
            assert got.shape == (7, next_n) and got.dtype == seq.dtype
            for b, L in enumerate(seq.tolist()):
                for j in range(next_n):
                    p = L - next_n + j  # the token's position
                    want = max(0, (p + 1) // ratio) if p + 1 > 0 else 0
                    assert int(got[b, j]) == want, (L, ratio, next_n, j)
    with pytest.raises(lig.LigValueError, match="ratio"):
        lig.compressed_context_lens(seq, 0)


@pytest.mark.parametrize("two_d", [False, True])
def test_fp4_paged_topk_against_float64_and_the_logits(two_d):
    gen = torch.Generator().manual_seed(41 + two_d)
    B, next_n, H, D, block_kv, K = 2, 2, 8, 128, 16, 12
    ctx = torch.tensor([9, 75], dtype=torch.int32)
    N = int(ctx.max())
    q, q_sf = fp4_data((B, next_n, H, D), gen)
    w = torch.randn(B * next_n, H, generator=gen)
    keys = [fp4_data((N, D), gen) for _ in range(B)]
    caches, tables = zip(*(fused_fp4_cache(k, s, block_kv, gen) for k, s in keys))
    cache = torch.cat(caches, 0)
    table = torch.cat([tables[0], tables[1] + caches[0].shape[0]], 0)
    lens = torch.stack([ctx - 3, ctx], 1).to(torch.int32) if two_d else ctx
    ends = lens if two_d else (ctx[:, None] - next_n + 1 + torch.arange(next_n)).clamp_min(0)
    idx, val = lig.fp8_fp4_paged_mqa_topk((q, q_sf), cache, w, lens, table, K, return_values=True)
    assert idx.shape == (B * next_n, K) and idx.dtype == torch.int32 and val.dtype == torch.float32
    logits = lig.fp8_fp4_paged_mqa_logits((q, q_sf), cache, w, lens, table, None, N, clean_logits=True)
    exact_sets = 0
    for b in range(B):
        k64 = fp4_values(*keys[b])
        for i in range(next_n):
            r, e = b * next_n + i, int(ends[b, i])
            n = min(K, e)
            assert bool((idx[r, n:] == -1).all()) and bool((val[r, n:] == float("-inf")).all())
            sel = idx[r, :n].long()
            # the values are the logits' bits at the selected keys, in descending order
            assert torch.equal(val[r, :n].view(torch.int32), logits[r, sel].view(torch.int32))
            assert bool((val[r, 1:n] <= val[r, :n - 1]).all())
            ref, tol = reference(fp4_values(q[b, i:i + 1], q_sf[b, i:i + 1]), k64, w[r:r + 1])
            ref, tol = ref[0, :e], tol[0, :e]
            order = torch.argsort(-ref, stable=True)
            if n == e or float(ref[order[n - 1]] - ref[order[n]]) > float(tol[order[n - 1]] + tol[order[n]]):
                assert set(sel.tolist()) == set(order[:n].tolist())  # the reference's cut is clear
                exact_sets += 1
    assert exact_sets >= 2
    torch.library.opcheck(torch.ops.lig.fp8_fp4_paged_mqa_topk.default, (q, q_sf, cache, w, lens, table, K, True))
    fn = torch.compile(lambda *a: lig.fp8_fp4_paged_mqa_topk((a[0], a[1]), *a[2:], K), fullgraph=True,
                       backend="aot_eager")
    torch._dynamo.reset()
    assert torch.equal(fn(q, q_sf, cache, w, lens, table), idx)
