"""MXFP4's Python side (docs/contract.md section 5, "MXFP4"; docs/inference.md, "DeepSeek-V4: MXFP4"):
lig.fp4_act_quant (DeepSeek-V4's fp4_act_quant) and lig.indexer_k_mxfp4_quant_and_cache (DeepGEMM's
fused FP4 paged cache).

Everything is compared with a float64 re-derivation of the engines' recipe written here: amax, the
floor 6 * 2^-126, the fp32 product with fp32(1/6) (computed in float64 and rounded once to fp32:
53 >= 2 * 24 + 2), the next power of two by frexp, the fp32 product x * 2^-e, and the nearest e2m1
magnitude by brute force with ties to the even code, saturating at 6.
"""
from __future__ import annotations

import shutil

import pytest
import torch

import lig

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
F32_1_6 = float(torch.tensor(1.0 / 6.0, dtype=torch.float32))
FLOOR = 6.0 * 2.0 ** -126
FLOAT4_X2 = getattr(torch, "float4_e2m1fn_x2", None)
E8M0 = getattr(torch, "float8_e8m0fnu", None)
needs_e8m0 = pytest.mark.skipif(E8M0 is None, reason="this torch has no float8_e8m0fnu")


def f32(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float32).to(torch.float64)


def reference(x: torch.Tensor):
    """(codes uint8 [..., N/2], scale bytes uint8 [..., N/32], dequantized float64 [..., N]) of the
    engines' recipe, from x's exact values."""
    x64 = x.to(torch.float64)
    blocks = x64.unflatten(-1, (x64.shape[-1] // 32, 32))
    finite = torch.isfinite(blocks).all(-1)
    amax = torch.where(torch.isfinite(blocks), blocks.abs(), torch.zeros_like(blocks)).amax(-1).clamp(min=FLOOR)
    t = f32(amax * F32_1_6)
    m, e = torch.frexp(t)  # t = m 2^e, m in [0.5, 1)
    k = torch.where(m == 0.5, e - 1, e)  # the smallest power of two >= t is 2^k
    E = torch.where(finite, k + 127, torch.full_like(k, 255))
    y = f32(torch.ldexp(blocks, (127 - E).clamp(max=300).unsqueeze(-1).to(torch.float64)))
    a = y.abs()
    dist = (a.unsqueeze(-1) - E2M1).abs()
    best = dist.min(-1, keepdim=True).values
    ties = dist == best
    even = ties & (torch.arange(8) % 2 == 0)
    code = torch.where(even.any(-1), even.to(torch.int64).argmax(-1), ties.to(torch.int64).argmax(-1))
    code = torch.where(a >= 6.0, torch.full_like(code, 7), code)
    code = code | (torch.signbit(y).to(torch.int64) << 3)
    code = torch.where(finite.unsqueeze(-1), code, torch.zeros_like(code))
    flat = code.flatten(-2)
    packed = (flat[..., 0::2] | (flat[..., 1::2] << 4)).to(torch.uint8)
    value = E2M1[code & 7] * torch.where(code >= 8, -1.0, 1.0)
    deq = (value * torch.ldexp(torch.ones_like(value), (E - 127).unsqueeze(-1).to(torch.float64)))
    deq = torch.where(finite.unsqueeze(-1), deq, torch.full_like(deq, float("nan")))
    return packed, E.to(torch.uint8), deq.flatten(-2)


def inputs(shape, dtype, seed):
    """Random magnitudes over a wide range, with blocks of exact ties (amax 6 * 2^k, the others on
    the midpoints between magnitudes), all-zero blocks (signed zeros), fp32 subnormals."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * torch.pow(2.0, torch.randint(-12, 12, shape, generator=g).float())
    blocks = x.view(-1, 32)
    mids = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    for b in range(0, blocks.shape[0], 3):
        k = int(torch.randint(-20, 20, (1,), generator=g))
        v = mids[torch.randint(0, 7, (32,), generator=g)] * torch.where(torch.rand(32, generator=g) < 0.5, -1.0, 1.0)
        v[0] = 6.0
        blocks[b] = v * 2.0 ** k
    if blocks.shape[0] > 1:
        blocks[1] = torch.where(torch.arange(32) % 2 == 0, 0.0, -0.0)
    if blocks.shape[0] > 4:
        blocks[4] = torch.randint(-100, 100, (32,), generator=g).float() * 2.0 ** -140
    return x.to(dtype)


@needs_e8m0
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(3, 5, 128), (7, 64), (2, 2, 2, 32)])
def test_fp4_act_quant_matches_float64_rederivation(dtype, shape):
    x = inputs(shape, dtype, 11)
    y, s = lig.fp4_act_quant(x)
    want_y, want_s, _ = reference(x)
    assert y.shape == shape[:-1] + (shape[-1] // 2,) and s.shape == shape[:-1] + (shape[-1] // 32,)
    assert s.dtype == E8M0 and y.dtype == (FLOAT4_X2 or torch.uint8)
    assert torch.equal(y.view(torch.uint8), want_y)
    assert torch.equal(s.view(torch.uint8), want_s)


@needs_e8m0
def test_fp4_act_quant_inplace_and_non_finite_blocks():
    x = inputs((4, 128), torch.bfloat16, 12)
    x[2, 40] = float("nan")
    x[3, 100] = float("-inf")
    _, want_s, deq = reference(x)
    assert want_s[2, 1] == 255 and want_s[3, 3] == 255
    got = x.clone()
    assert lig.fp4_act_quant(got, inplace=True) is got
    torch.testing.assert_close(got.double(), deq.to(torch.bfloat16).double(), rtol=0, atol=0, equal_nan=True)


@needs_e8m0
def test_fp4_act_quant_layouts_and_known_values():
    x = torch.zeros(2, 64)
    x[0, :4] = torch.tensor([6.0, 0.75, -0.1, 1.75])  # scale 2^0; 0.75 ties up to 1, -0.1 to -0
    y, s = lig.fp4_act_quant(x)
    assert y.view(torch.uint8)[0, :2].tolist() == [0x27, 0x48]
    assert s.view(torch.uint8).tolist() == [[127, 1], [1, 1]]  # the floor gives 2^-126 to zero blocks
    xt = inputs((64, 6), torch.float32, 13).t()  # a transposed view
    assert torch.equal(lig.fp4_act_quant(xt)[0].view(torch.uint8), reference(xt)[0])


def _cache_reference(k, nb, bs, slots, fill=0xA5):
    D = k.shape[1]
    row = D // 2 + 4
    cache = torch.full((nb, bs * row), fill, dtype=torch.uint8)
    codes, scales, _ = reference(k)
    for t, slot in enumerate(slots):
        if slot < 0:
            continue
        blk, pos = divmod(slot, bs)
        cache[blk, pos * (D // 2):(pos + 1) * (D // 2)] = codes[t]
        padded = torch.full((4,), 127, dtype=torch.uint8)
        padded[:D // 32] = scales[t]
        cache[blk, bs * (D // 2) + 4 * pos:bs * (D // 2) + 4 * pos + 4] = padded
    return cache.view(nb, bs, 1, row)


@pytest.mark.parametrize("D", [128, 64])
def test_cache_writer_matches_deepgemm_layout(D):
    nb, bs, T = 5, 8, 13
    k = inputs((T, D), torch.bfloat16, 14)
    slots = torch.randperm(nb * bs, generator=torch.Generator().manual_seed(3))[:T]
    slots[[2, 9]] = -1
    cache = torch.full((nb, bs, 1, D // 2 + 4), 0xA5, dtype=torch.uint8)
    lig.indexer_k_mxfp4_quant_and_cache(k, cache, slots)
    assert torch.equal(cache, _cache_reference(k, nb, bs, slots.tolist()))
    # DeepGEMM's view of the same bytes: codes [nb, bs, D/2] int8, one int32 of scales a token
    flat = cache.view(nb, -1)
    sf = flat[:, bs * D // 2:].contiguous().view(torch.int32)
    t = 0 if slots[0] >= 0 else 1
    blk, pos = divmod(int(slots[t]), bs)
    word = int(sf[blk, pos]) & 0xFFFFFFFF
    assert [(word >> (8 * j)) & 0xFF for j in range(D // 32)] == reference(k)[1][t].tolist()
    # the 3-D form, and a block stride with a gap between blocks
    wide = torch.full((nb, bs * (D // 2 + 4) + 16), 0xA5, dtype=torch.uint8)
    view = wide[:, :bs * (D // 2 + 4)].view(nb, bs, D // 2 + 4)
    lig.indexer_k_mxfp4_quant_and_cache(k, view, slots.to(torch.int32))
    assert torch.equal(view, _cache_reference(k, nb, bs, slots.tolist()).view(nb, bs, -1))
    assert (wide[:, bs * (D // 2 + 4):] == 0xA5).all()


def test_cache_writer_errors_write_nothing():
    k = torch.randn(4, 128)
    cache = torch.full((2, 4, 1, 68), 7, dtype=torch.uint8)
    before = cache.clone()
    for message, call in [
        ("slot_mapping: expected slots < num_blocks \\* block_size = 8 .* at \\[2\\], got 8",
         lambda: lig.indexer_k_mxfp4_quant_and_cache(k, cache, torch.tensor([0, 1, 8, -1]))),
        ("slot_mapping: expected each slot at most once, got slot 5 twice",
         lambda: lig.indexer_k_mxfp4_quant_and_cache(k, cache, torch.tensor([0, 5, -1, 5]))),
        ("slot_mapping: expected shape", lambda: lig.indexer_k_mxfp4_quant_and_cache(k, cache, torch.tensor([0, 1]))),
        ("kv_cache: expected shape \\[num_blocks,block_size,1,68\\]",
         lambda: lig.indexer_k_mxfp4_quant_and_cache(k, cache[..., :64], torch.tensor([0, 1, 2, 3]))),
        ("k: expected at least one dimension and an even last dimension",
         lambda: lig.indexer_k_mxfp4_quant_and_cache(torch.randn(4, 127), cache, torch.tensor([0, 1, 2, 3]))),
    ]:
        with pytest.raises(lig.LigValueError, match=message):
            call()
        assert torch.equal(cache, before)


@needs_e8m0
def test_fp4_act_quant_errors():
    x = torch.randn(2, 128)
    with pytest.raises(lig.LigValueError, match="block_size: expected 32"):
        lig.fp4_act_quant(x, 16)
    with pytest.raises(lig.LigValueError, match="scale_dtype: expected torch.float8_e8m0fnu"):
        lig.fp4_act_quant(x, 32, scale_dtype=torch.float8_e4m3fn)
    with pytest.raises(lig.LigValueError, match="x: expected a last dimension divisible by 32"):
        lig.fp4_act_quant(torch.randn(2, 48))
    with pytest.raises(TypeError, match="x: expected dtype float32"):
        lig.fp4_act_quant(x.double())
    with pytest.raises(TypeError, match="inplace: expected a bool"):
        lig.fp4_act_quant(x, inplace=1)


# ---- torch.compile and opcheck ---------------------------------------------------------------------

BACKENDS = ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a C++ compiler"))]


@needs_e8m0
@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_compile_fullgraph(backend):
    k = inputs((6, 128), torch.bfloat16, 15)
    slots = torch.tensor([3, 0, -1, 7, 5, 1])

    def fn(k, cache, slots):
        lig.indexer_k_mxfp4_quant_and_cache(k, cache, slots)
        codes, scales = lig.fp4_act_quant(k)
        back = k.clone()
        lig.fp4_act_quant(back, inplace=True)
        return codes.view(torch.uint8), scales.view(torch.uint8), back

    eager_cache = torch.zeros(2, 4, 1, 68, dtype=torch.uint8)
    eager = fn(k, eager_cache, slots)
    torch._dynamo.reset()
    got_cache = torch.zeros(2, 4, 1, 68, dtype=torch.uint8)
    got = torch.compile(fn, fullgraph=True, backend=backend)(k, got_cache, slots)
    assert torch.equal(got_cache, eager_cache)
    for a, b in zip(eager, got):
        assert torch.equal(a, b)


def test_opcheck():
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    torch.library.opcheck(torch.ops.lig.fp4_act_quant.default, (inputs((3, 64), torch.float32, 16), 32),
                          test_utils=utils)
    torch.library.opcheck(torch.ops.lig.indexer_k_mxfp4_quant_and_cache.default,
                          (torch.randn(3, 128), torch.zeros(2, 4, 1, 68, dtype=torch.uint8), torch.tensor([0, 6, -1])),
                          test_utils=utils)
