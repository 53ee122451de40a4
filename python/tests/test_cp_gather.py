"""lig.cp_gather_indexer_k_quant_cache (vLLM's gather of a prefill's quantized keys out of the paged
indexer cache) against a reference gather written here: for each sequence and each of its keys, the
byte offsets of the key's codes and scales in its block, by the layout's definition (each block:
all its tokens' code bytes, then all their scale bytes), read one key at a time. The caches are
written by lig's own writers (FP8: lig.indexer_k_quant_and_cache; FP4:
lig.indexer_k_mxfp4_quant_and_cache), whose bytes their own tests check."""
from __future__ import annotations

import shutil

import pytest
import torch

import lig

FP8 = torch.float8_e4m3fn


def paged_problem(seed, lens, block_size, spare=3):
    """(block_table [B, max_blocks] int32 over shuffled blocks, cu_seq_lens [B+1] int32, slots of
    every key in sequence order, num_blocks)."""
    g = torch.Generator().manual_seed(seed)
    per = [-(-n // block_size) for n in lens]
    num_blocks = sum(per) + spare
    perm = torch.randperm(num_blocks, generator=g)
    table = torch.full((len(lens), max(per) + 1), -7, dtype=torch.int32)  # unused entries: not block ids
    used = 0
    for b, n in enumerate(per):
        table[b, :n] = perm[used:used + n].to(torch.int32)
        used += n
    slots = [int(table[b, s // block_size]) * block_size + s % block_size for b, n in enumerate(lens) for s in range(n)]
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)
    return table, cu, torch.tensor(slots, dtype=torch.int64), num_blocks


def reference_gather(cache_bytes, table, cu, code_bytes, scale_bytes):
    """[T, code_bytes] and [T, scale_bytes] uint8, key by key."""
    block_size = cache_bytes.shape[1] // (code_bytes + scale_bytes)
    codes, scales = [], []
    for b in range(table.shape[0]):
        for p in range(int(cu[b + 1] - cu[b])):
            block = cache_bytes[int(table[b, p // block_size])]
            o = p % block_size
            codes.append(block[o * code_bytes:(o + 1) * code_bytes])
            at = block_size * code_bytes + o * scale_bytes
            scales.append(block[at:at + scale_bytes])
    return torch.stack(codes), torch.stack(scales)


@pytest.mark.parametrize("qbs", [64, 32])
def test_fp8_cache(qbs):
    D, block_size, lens = 64, 8, [13, 1, 0, 20]
    table, cu, slots, num_blocks = paged_problem(1, lens, block_size)
    S = D // qbs * 4
    cache = torch.full((num_blocks, block_size, D + S), 0xAB, dtype=torch.uint8)
    k = torch.randn(len(slots), D, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    lig.indexer_k_quant_and_cache(k, cache, slots, qbs, "ue8m0")
    T = int(cu[-1])
    dst_k = torch.full((T, D), 0x7F, dtype=torch.uint8).view(FP8)
    dst_scale = torch.full((T, S), 0x55, dtype=torch.uint8)
    lig.cp_gather_indexer_k_quant_cache(cache, dst_k, dst_scale, table, cu)
    ref_k, ref_s = reference_gather(cache.view(num_blocks, -1), table, cu, D, S)
    assert torch.equal(dst_k.view(torch.uint8), ref_k) and torch.equal(dst_scale, ref_s)
    # the gathered scales are the fp32 scales the writer stored, key for key in sequence order
    s = dst_scale.view(torch.float32)
    y_ref = (k.float().view(T, D // qbs, qbs) / s[:, :, None]).to(FP8).view(T, D)
    assert torch.equal(dst_k.view(torch.uint8), y_ref.view(torch.uint8))
    # the 4-D view of DeepGEMM's fused cache and int64 tables give the same bytes
    again_k, again_s = torch.empty_like(dst_k), torch.empty_like(dst_scale)
    lig.cp_gather_indexer_k_quant_cache(cache.unsqueeze(2), again_k, again_s, table.long(), cu.long())
    assert torch.equal(again_k.view(torch.uint8), ref_k) and torch.equal(again_s, ref_s)


def test_fp8_gather_feeds_fp8_mqa_logits():
    """vLLM's prefill: the gathered keys and scales go to fp8_mqa_logits; the same logits as the
    paged logits of a one-sequence batch over the cache."""
    D, H, block_size, lens = 32, 4, 4, [11]
    table, cu, slots, num_blocks = paged_problem(5, lens, block_size)
    cache = torch.zeros((num_blocks, block_size, D + 4), dtype=torch.uint8)
    g = torch.Generator().manual_seed(6)
    lig.indexer_k_quant_and_cache(torch.randn(len(slots), D, generator=g), cache, slots, D, None)
    dst_k, dst_scale = torch.empty(11, D, dtype=FP8), torch.empty(11, 4, dtype=torch.uint8)
    lig.cp_gather_indexer_k_quant_cache(cache, dst_k, dst_scale, table, cu)
    q = (torch.randn(1, 1, H, D, generator=g) * 3).to(FP8)
    w = torch.randn(1, H, generator=g)
    flat = lig.fp8_mqa_logits(q[0], (dst_k, dst_scale.view(torch.float32).flatten()), w,
                              torch.zeros(1, dtype=torch.int32), torch.full((1,), 11, dtype=torch.int32))
    paged = lig.fp8_paged_mqa_logits(q, cache.unsqueeze(2), w, torch.tensor([11], dtype=torch.int32), table, None, 11,
                                     True)
    assert torch.equal(flat.view(torch.int32), paged.view(torch.int32))


def test_fp4_cache():
    D, block_size, lens = 128, 4, [6, 9, 2]
    table, cu, slots, num_blocks = paged_problem(3, lens, block_size)
    cache = torch.full((num_blocks, block_size, 1, D // 2 + 4), 0xAB, dtype=torch.uint8)
    lig.indexer_k_mxfp4_quant_and_cache(torch.randn(len(slots), D, generator=torch.Generator().manual_seed(4)), cache,
                                        slots)
    T = int(cu[-1])
    dst_k = torch.full((T, D // 2), 0x11, dtype=torch.uint8)
    dst_scale = torch.full((T, 4), 0x22, dtype=torch.uint8)
    lig.cp_gather_indexer_k_quant_cache(cache, dst_k, dst_scale, table, cu)
    ref_k, ref_s = reference_gather(cache.view(num_blocks, -1), table, cu, D // 2, 4)
    assert torch.equal(dst_k, ref_k) and torch.equal(dst_scale, ref_s)
    assert not bool((dst_scale == 0xAB).all(1).any())  # every key's scales were written, none left unwritten


def test_refusals_name_the_argument_and_write_nothing():
    D, block_size, lens = 16, 4, [5, 3]
    table, cu, slots, num_blocks = paged_problem(7, lens, block_size, spare=0)
    cache = torch.zeros((num_blocks, block_size, D + 4), dtype=torch.uint8)
    dst_k, dst_scale = torch.full((8, D), 3, dtype=torch.uint8), torch.full((8, 4), 3, dtype=torch.uint8)
    call = lig.cp_gather_indexer_k_quant_cache
    cases = [
        ("cu_seq_lens: expected offsets from 0 to at most dst_k.shape\\[0\\] = 8", lambda: call(
            cache, dst_k, dst_scale, table, torch.tensor([0, 5, 9], dtype=torch.int32))),
        ("cu_seq_lens: expected offsets from 0", lambda: call(
            cache, dst_k, dst_scale, table, torch.tensor([1, 5, 8], dtype=torch.int32))),
        ("cu_seq_lens: expected sequence lengths in .* got -1 for sequence 1", lambda: call(
            cache, torch.zeros(9, D, dtype=torch.uint8), torch.zeros(9, 4, dtype=torch.uint8), table,
            torch.tensor([0, 9, 8], dtype=torch.int32))),
        ("cu_seq_lens: expected sequence lengths in \\[0, max_blocks \\* block_size = 12\\], got 13", lambda: call(
            cache, torch.zeros(13, D, dtype=torch.uint8), torch.zeros(13, 4, dtype=torch.uint8), table,
            torch.tensor([0, 13, 13], dtype=torch.int32))),
        ("cu_seq_lens: expected shape \\[3\\]", lambda: call(cache, dst_k, dst_scale, table, cu[:2])),
        ("block_table: expected block ids in \\[0, 3\\)", lambda: call(cache, dst_k, dst_scale, table + 5, cu)),
        ("dst_scale: expected a whole number of 4-byte scales", lambda: call(
            cache, dst_k, torch.zeros(8, 3, dtype=torch.uint8), table, cu)),
        ("dst_scale: expected shape \\[8", lambda: call(cache, dst_k, dst_scale[:7], table, cu)),
        ("kv_cache: expected shape \\[num_blocks,block_size,24\\]", lambda: call(
            cache, dst_k, torch.zeros(8, 8, dtype=torch.uint8), table, cu)),
        ("kv_cache: expected each block's bytes contiguous", lambda: call(
            torch.zeros((num_blocks, D + 4, block_size), dtype=torch.uint8).transpose(1, 2), dst_k, dst_scale, table,
            cu)),
        ("dst_k: expected dtype", lambda: call(cache, dst_k.float(), dst_scale, table, cu)),
    ]
    for message, fn in cases:
        with pytest.raises((lig.LigValueError, TypeError), match=message):
            fn()
    assert bool((dst_k == 3).all()) and bool((dst_scale == 3).all())


def test_workspace_longer_than_the_sequences():
    """vLLM's context-parallel caller passes a workspace sized for the longest rank's share: rows
    past cu_seq_lens[-1] are left as they are, the others gathered."""
    D, block_size, lens = 16, 4, [5, 2]
    table, cu, slots, num_blocks = paged_problem(13, lens, block_size)
    cache = torch.zeros((num_blocks, block_size, D + 4), dtype=torch.uint8)
    lig.indexer_k_quant_and_cache(torch.randn(len(slots), D), cache, slots, D, None)
    dst_k, dst_scale = torch.full((10, D), 9, dtype=torch.uint8), torch.full((10, 4), 9, dtype=torch.uint8)
    lig.cp_gather_indexer_k_quant_cache(cache, dst_k, dst_scale, table, cu)
    ref_k, ref_s = reference_gather(cache.view(num_blocks, -1), table, cu, D, 4)
    assert torch.equal(dst_k[:7], ref_k) and torch.equal(dst_scale[:7], ref_s)
    assert bool((dst_k[7:] == 9).all()) and bool((dst_scale[7:] == 9).all())


def test_empty_prefill():
    table, cu = torch.zeros(2, 1, dtype=torch.int32), torch.zeros(3, dtype=torch.int32)
    lig.cp_gather_indexer_k_quant_cache(torch.zeros(1, 4, 36, dtype=torch.uint8), torch.empty(0, 32, dtype=torch.uint8),
                                        torch.empty(0, 4, dtype=torch.uint8), table, cu)


BACKENDS = ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a C++ compiler"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_compile_fullgraph(backend):
    D, block_size, lens = 32, 4, [7, 5]
    table, cu, slots, num_blocks = paged_problem(9, lens, block_size)
    k = torch.randn(len(slots), D, generator=torch.Generator().manual_seed(10))

    def fn(k, cache, slots, table, cu, dst_k, dst_scale):
        lig.indexer_k_quant_and_cache(k, cache, slots, D, None)
        lig.cp_gather_indexer_k_quant_cache(cache, dst_k, dst_scale, table, cu)
        return dst_k.view(torch.uint8) + 0, dst_scale + 0

    def fresh():
        return (k, torch.zeros(num_blocks, block_size, D + 4, dtype=torch.uint8), slots, table, cu,
                torch.zeros(12, D, dtype=FP8), torch.zeros(12, 4, dtype=torch.uint8))

    eager_args, compiled_args = fresh(), fresh()
    eager = fn(*eager_args)
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend=backend)(*compiled_args)
    for a, b in zip(eager, got):
        assert torch.equal(a, b)
    assert torch.equal(compiled_args[5].view(torch.uint8), eager_args[5].view(torch.uint8))  # written in place
    assert torch.equal(compiled_args[6], eager_args[6])


def test_opcheck():
    D, block_size, lens = 16, 4, [6, 3]
    table, cu, slots, num_blocks = paged_problem(11, lens, block_size)
    cache = torch.zeros(num_blocks, block_size, D + 4, dtype=torch.uint8)
    lig.indexer_k_quant_and_cache(torch.randn(len(slots), D), cache, slots, D, None)
    torch.library.opcheck(torch.ops.lig.cp_gather_indexer_k_quant_cache.default,
                          (cache, torch.zeros(9, D, dtype=torch.uint8), torch.zeros(9, 4, dtype=torch.uint8), table, cu),
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
