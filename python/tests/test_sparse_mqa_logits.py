"""DeepGEMM 2.8's sparse MQA logits under lig (lig.get_sparse_mqa_logits_metadata,
lig.get_paged_sparse_mqa_logits_metadata, lig.fp8_fp4_sparse_mqa_logits,
lig.fp8_fp4_paged_sparse_mqa_logits; docs/contract.md 2.8).

Each logit is checked two ways, with the inputs built here: bitwise against the contract's MXFP4
evaluation order (2.4: each 32-value block's exact integer dot scaled once to fp32, the blocks and
then the heads added in fp32 in order) rewritten here in torch and rounded once to bf16, and within
a bound of the float64 value of the formula; every column no counted block puts a key of the row's
range in is -inf. Also the refusals (MXFP8, the metadata of another call, a bad block id), the fake
kernels (opcheck) and torch.compile(fullgraph=True)."""
from __future__ import annotations

import random

import pytest
import torch

import lig

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


def decode(codes: torch.Tensor) -> torch.Tensor:
    """Packed e2m1 bytes [..., D/2] -> values [..., D] (float64), element 2j in the low nibble."""
    b = codes.view(torch.uint8).to(torch.int64)
    nib = torch.stack((b & 15, b >> 4), dim=-1).flatten(-2)
    mag = E2M1[nib & 7]
    return torch.where(nib >= 8, -mag, mag)


def scale_bytes(sf: torch.Tensor, D: int) -> torch.Tensor:
    """int32 packed e8m0 scales [...] -> the block exponents [..., D/32] (byte j of the word is block j)."""
    w = sf.to(torch.int64) & 0xFFFFFFFF
    return torch.stack([(w >> (8 * j)) & 0xFF for j in range(D // 32)], dim=-1)


def random_fp4(gen: torch.Generator, rows: tuple, D: int):
    """Random codes (int8 [*rows, D/2]) and int32 scales [*rows] with exponents near 127."""
    codes = torch.randint(0, 256, (*rows, D // 2), generator=gen, dtype=torch.int64).to(torch.uint8).view(torch.int8)
    e = torch.randint(122, 132, (*rows, 4), generator=gen, dtype=torch.int64)
    word = e[..., 0] | e[..., 1] << 8 | e[..., 2] << 16 | e[..., 3] << 24
    return codes, word.to(torch.int64).where(word < 2 ** 31, word - 2 ** 32).to(torch.int32)


def contract_logit(q, qsf, k, ksf, w):
    """The contract's fp32 value for query rows q [R,H,D/2] (scales qsf [R,H]) against one key each
    k [R,D/2] (ksf [R]), weights w [R,H] (any float dtype): per block the exact integer dot of the
    doubled values, times 2^(Eq-127) 2^(Ek-127) / 4, rounded once to fp32; blocks then heads in fp32."""
    D = q.shape[-1] * 2
    qv, kv = decode(q) * 2, decode(k) * 2  # integers in [-12, 12]
    qe, ke = scale_bytes(qsf, D), scale_bytes(ksf, D)  # [R,H,nb], [R,nb]
    R, H = q.shape[0], q.shape[1]
    x = torch.zeros(R, H, dtype=torch.float32)
    for j in range(D // 32):
        P = (qv[..., 32 * j:32 * j + 32] * kv[:, None, 32 * j:32 * j + 32]).sum(-1)  # exact in float64
        t = (P * torch.pow(2.0, (qe[..., j] + ke[:, None, j] - 254).to(torch.float64)) / 4).to(torch.float32)
        x = x + t
    wf = w.to(torch.float32)
    acc = torch.zeros(R, dtype=torch.float32)
    for h in range(H):
        acc = acc + torch.where(x[:, h] > 0, wf[:, h] * x[:, h], torch.zeros((), dtype=torch.float32))
    return acc


def float64_logit(q, qsf, k, ksf, w):
    D = q.shape[-1] * 2
    qd = decode(q) * torch.pow(2.0, scale_bytes(qsf, D) - 127.0).repeat_interleave(32, -1)
    kd = decode(k) * torch.pow(2.0, scale_bytes(ksf, D) - 127.0).repeat_interleave(32, -1)
    s = (qd * kd[:, None, :]).sum(-1)
    return (w.to(torch.float64) * s.clamp_min(0)).sum(-1), (w.to(torch.float64).abs() * (qd.abs() * kd[:, None].abs()).sum(-1)).sum(-1)


def block_lists(rng: random.Random, starts, ends, bk: int, M: int, request):
    """DeepGEMM's test's lists: min(M, ceil(len / bk)) sorted ids of each row's blocks (a request's
    rows mostly keep the previous row's), padded with the last id."""
    out, counts, prev, prev_req = [], [], None, None
    for s, e, req in zip(starts, ends, request):
        first, avail = s // bk, -(-(max(0, e - s)) // bk)
        n = min(M, avail)
        pool = list(range(first, first + avail))
        if n == avail:
            ids = pool
        elif req == prev_req and prev:
            keep = [i for i in prev if first <= i < first + avail][: round(0.8 * n)]
            rest = [i for i in pool if i not in keep]
            ids = sorted(keep + rng.sample(rest, n - len(keep)))
        else:
            ids = sorted(rng.sample(pool, n))
        out.append(ids + [ids[-1] if ids else 0] * (M - n))
        counts.append(n)
        prev, prev_req = ids, req
    return torch.tensor(out, dtype=torch.int32).reshape(len(starts), M), counts


def expected(q, qsf, w, starts, ends, ids, counts, bk, key_of, unaligned):
    """The expected bf16 logits and the float64 values / magnitudes of the scored columns."""
    M, blocks = ids.shape
    cols = blocks * bk
    want = torch.full((M, cols), float("-inf"), dtype=torch.float32)
    ref = torch.full((M, cols), float("nan"), dtype=torch.float64)
    mag = torch.zeros((M, cols), dtype=torch.float64)
    for m in range(M):
        off = starts[m] % bk if unaligned else 0
        rows, keys = [], []
        for j in range(counts[m]):
            for o in range(bk):
                t = int(ids[m, j]) * bk + off + o
                if starts[m] <= t < ends[m]:
                    rows.append(j * bk + o)
                    keys.append(t)
        if not rows:
            continue
        k, ksf = key_of(m, keys)
        R = len(rows)
        qq, qs, ww = q[m].expand(R, *q[m].shape), qsf[m].expand(R, *qsf[m].shape), w[m].expand(R, *w[m].shape)
        want[m, rows] = contract_logit(qq, qs, k, ksf, ww)
        r, a = float64_logit(qq, qs, k, ksf, ww)
        ref[m, rows], mag[m, rows] = r, a
    return want.to(torch.bfloat16), ref, mag


def check(got, want, ref, mag):
    assert got.dtype == torch.bfloat16 and got.shape == want.shape
    assert torch.equal(got.view(torch.int16), want.view(torch.int16)), "not the contract's bits"
    scored = ~torch.isnan(ref)
    err = (got.to(torch.float64) - ref).abs()[scored]
    bound = (2.0 ** -8) * ref.abs()[scored] + 2 * (4 + 16 + 4) * 2.0 ** -24 * mag[scored]
    assert bool((err <= bound).all()), f"max error {float((err - bound).max())} past the bound"
    assert bool(torch.isneginf(got[~scored].float()).all())


def contiguous_case(seed, H=8, M=9, bk=8, blocks=4, unaligned=False, weights_dtype=torch.bfloat16):
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    D, sizes = 128, [3, 4, M - 7]
    request = [r for r, n in enumerate(sizes) for _ in range(n)]
    starts, ends, end = [], [], 0
    for n in sizes:
        start = -(-end // bk) * bk + (rng.randrange(1, bk) if unaligned else 0)
        length = rng.randrange(0, 90)
        starts += [start] * n
        ends += [start + length + i for i in range(n)]
        end = ends[-1]
    N = max(1, end)
    q, qsf = random_fp4(gen, (M, H), D)
    kv, kvsf = random_fp4(gen, (N,), D)
    w = torch.randn(M, H, generator=gen).to(weights_dtype)
    ids, counts = block_lists(rng, starts, ends, bk, blocks, request)
    return dict(q=q, qsf=qsf, kv=kv, kvsf=kvsf, w=w, starts=starts, ends=ends, N=N, ids=ids, counts=counts, bk=bk,
                blocks=blocks, unaligned=unaligned)


@pytest.mark.parametrize("bk,blocks,unaligned,H", [(8, 4, False, 8), (16, 8, True, 12), (8, 12, True, 20), (3, 5, False, 4)])
def test_sparse_mqa_logits(bk, blocks, unaligned, H):
    c = contiguous_case(17 + bk + blocks, H=H, bk=bk, blocks=blocks, unaligned=unaligned)
    ks, ke = torch.tensor(c["starts"], dtype=torch.int32), torch.tensor(c["ends"], dtype=torch.int32)
    meta = lig.get_sparse_mqa_logits_metadata(ks, ke, c["N"], c["ids"], c["q"].dtype, bk, use_unaligned_ks=unaligned)
    assert meta.dtype == torch.uint8
    got = lig.fp8_fp4_sparse_mqa_logits((c["q"], c["qsf"]), (c["kv"], c["kvsf"]), c["w"], meta, blocks, bk,
                                        use_unaligned_ks=unaligned)

    def key_of(m, keys):
        return c["kv"][keys], c["kvsf"][keys]

    want, ref, mag = expected(c["q"], c["qsf"], c["w"], c["starts"], c["ends"], c["ids"], c["counts"], bk, key_of,
                              unaligned)
    check(got, want, ref, mag)
    lig.set_num_threads(3)
    try:
        again = lig.fp8_fp4_sparse_mqa_logits((c["q"], c["qsf"]), (c["kv"], c["kvsf"]), c["w"], meta, blocks, bk,
                                              use_unaligned_ks=unaligned)
    finally:
        lig.set_num_threads(0)
    assert torch.equal(again.view(torch.int16), got.view(torch.int16))


def paged_case(seed, H=8, bk=8, blocks=4, page_kv=64, page_pad=True):
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    D, sizes = 128, [2, 3, 1, 2]
    request = [r for r, n in enumerate(sizes) for _ in range(n)]
    base = [rng.randrange(0, 200) for _ in sizes]
    lens = [base[r] + i for r, n in enumerate(sizes) for i in range(n)]
    pages_per = [max(1, -(-(base[r] + n - 1) // page_kv)) for r, n in enumerate(sizes)]
    num_pages, width = sum(pages_per) + 1, D // 2 + 4
    page_bytes = page_kv * width
    stride = -(-page_bytes // 512) * 512 if page_pad else page_bytes
    storage = torch.zeros(num_pages * stride, dtype=torch.uint8)
    cache = storage.as_strided((num_pages, page_kv, 1, width), (stride, width, width, 1))
    codes, sf = random_fp4(gen, (num_pages, page_kv), D)
    flat = storage.view(num_pages, stride)
    flat[:, :page_kv * D // 2] = codes.view(torch.uint8).reshape(num_pages, -1)
    flat[:, page_kv * D // 2:page_bytes] = sf.view(torch.uint8).reshape(num_pages, -1)
    perm = torch.randperm(num_pages, generator=gen).to(torch.int32)
    table_req, at = torch.zeros(len(sizes), max(pages_per), dtype=torch.int32), 0
    for r, n in enumerate(pages_per):
        table_req[r, :n] = perm[at:at + n]
        at += n
    table = table_req[torch.tensor(request)].contiguous()
    M = len(lens)
    q, qsf = random_fp4(gen, (M, 1, H), D)
    w = torch.randn(M, H, generator=gen).to(torch.bfloat16)
    ids, counts = block_lists(rng, [0] * M, lens, bk, blocks, request)
    return dict(q=q, qsf=qsf, cache=cache, codes=codes, sf=sf, table=table, lens=lens, request=request, w=w, ids=ids,
                counts=counts, bk=bk, blocks=blocks, page_kv=page_kv)


@pytest.mark.parametrize("bk,blocks,page_pad", [(8, 4, True), (16, 8, False), (8, 16, True)])
def test_paged_sparse_mqa_logits(bk, blocks, page_pad):
    c = paged_case(5 + bk * blocks, bk=bk, blocks=blocks, page_pad=page_pad)
    lens = torch.tensor(c["lens"], dtype=torch.int32)
    indices = torch.tensor(c["request"], dtype=torch.int32)
    meta = lig.get_paged_sparse_mqa_logits_metadata(lens, c["table"], indices, c["page_kv"], c["ids"], c["q"].dtype, bk)
    got = lig.fp8_fp4_paged_sparse_mqa_logits((c["q"], c["qsf"]), c["cache"], c["w"], meta, blocks, bk)

    def key_of(m, keys):
        t = torch.tensor(keys)
        page = c["table"][m, t // c["page_kv"]].long()
        return c["codes"][page, t % c["page_kv"]], c["sf"][page, t % c["page_kv"]]

    q3, qsf2 = c["q"][:, 0], c["qsf"][:, 0]
    want, ref, mag = expected(q3, qsf2, c["w"], [0] * len(c["lens"]), c["lens"], c["ids"], c["counts"], bk, key_of,
                              False)
    check(got, want, ref, mag)


def test_refusals_name_the_argument():
    c = contiguous_case(3)
    ks, ke = torch.tensor(c["starts"], dtype=torch.int32), torch.tensor(c["ends"], dtype=torch.int32)
    meta = lig.get_sparse_mqa_logits_metadata(ks, ke, c["N"], c["ids"], c["q"].dtype, 8)
    q, kv = (c["q"], c["qsf"]), (c["kv"], c["kvsf"])
    with pytest.raises(lig.LigValueError, match="MXFP8"):
        lig.fp8_fp4_sparse_mqa_logits((torch.zeros(9, 8, 128, dtype=torch.float8_e4m3fn), c["qsf"]), kv, c["w"], meta, 4, 8)
    with pytest.raises(lig.LigValueError, match="^lig: metadata: expected sparse_block_kv"):
        lig.fp8_fp4_sparse_mqa_logits(q, kv, c["w"], meta, 4, 16)
    with pytest.raises(lig.LigValueError, match="^lig: metadata: expected use_unaligned_ks"):
        lig.fp8_fp4_sparse_mqa_logits(q, kv, c["w"], meta, 4, 8, use_unaligned_ks=True)
    with pytest.raises(lig.LigValueError, match="q\\[1\\]"):
        lig.fp8_fp4_sparse_mqa_logits((c["q"], None), kv, c["w"], meta, 4, 8)
    bad = c["ids"].clone()
    row = next(m for m in range(bad.shape[0]) if c["counts"][m] > 0)
    bad[row, 0] = 1 << 20
    meta_bad = lig.get_sparse_mqa_logits_metadata(ks, ke, c["N"], bad, c["q"].dtype, 8)
    with pytest.raises(lig.LigValueError, match="sparse_kv_block_indices"):
        lig.fp8_fp4_sparse_mqa_logits(q, kv, c["w"], meta_bad, 4, 8)
    with pytest.raises(lig.LigValueError, match="page_kv"):
        lig.get_paged_sparse_mqa_logits_metadata(ke, torch.zeros(9, 2, dtype=torch.int32),
                                                 torch.zeros(9, dtype=torch.int32), 12, c["ids"], torch.int8, 8)


def test_opcheck_and_compile():
    c = contiguous_case(11, M=8)
    ks, ke = torch.tensor(c["starts"], dtype=torch.int32), torch.tensor(c["ends"], dtype=torch.int32)
    meta = lig.get_sparse_mqa_logits_metadata(ks, ke, c["N"], c["ids"], torch.int8, 8)
    torch.library.opcheck(torch.ops.lig.get_sparse_mqa_logits_metadata.default,
                          (ks, ke, c["N"], c["ids"], torch.int8, 8, False))
    torch.library.opcheck(torch.ops.lig.fp8_fp4_sparse_mqa_logits.default,
                          (c["q"], c["qsf"], c["kv"], c["kvsf"], c["w"], meta, 4, 8, False))
    p = paged_case(2)
    lens, ind = torch.tensor(p["lens"], dtype=torch.int32), torch.tensor(p["request"], dtype=torch.int32)
    pmeta = lig.get_paged_sparse_mqa_logits_metadata(lens, p["table"], ind, 64, p["ids"], torch.int8, 8)
    torch.library.opcheck(torch.ops.lig.get_paged_sparse_mqa_logits_metadata.default,
                          (lens, p["table"], ind, 64, p["ids"], torch.int8, 8))
    torch.library.opcheck(torch.ops.lig.fp8_fp4_paged_sparse_mqa_logits.default,
                          (p["q"], p["qsf"], p["cache"], p["w"], pmeta, 4, 8))

    def fn(q, qsf, kv, kvsf, w, ks, ke, ids):
        m = lig.get_sparse_mqa_logits_metadata(ks, ke, c["N"], ids, torch.int8, 8)
        return lig.fp8_fp4_sparse_mqa_logits((q, qsf), (kv, kvsf), w, m, 4, 8)

    args = (c["q"], c["qsf"], c["kv"], c["kvsf"], c["w"], ks, ke, c["ids"])
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)
    assert torch.equal(got.view(torch.int16), fn(*args).view(torch.int16))
