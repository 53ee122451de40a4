#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer targets (tests/fuzz/corpus/<target>/).

Each seed spells out, byte by byte, one valid call in the decoder's format (fuzz_input.h,
fuzz_case.c and each target's decode order); what is not spelled out comes from the decoder's
hash-seeded stream past the end of the input (tensor data, indices), which only ever decodes to
valid data. The seeds named regress-* reproduce bugs the targets found (docs/fuzzing.md).

    python3 tests/fuzz/make_corpus.py     # rewrites the corpus in place
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

NONE = 0           # a defect byte below 160: no defect
CONTIG = [0]       # a view: NULL strides
F32, F16, BF16 = 0, 1, 2


def padded(pads=(1, 0, 2, 1), inner2=False, offset=1):
    """Mode 1: row-major with padding after each dimension (the pad is key % 3)."""
    return [120, 0 if inner2 else 200] + list(pads) + [offset]


def permuted(keys=(9, 3, 7, 1), offset=2):
    """Mode 2: the dimensions laid out in the order of their keys, padded by key % 3."""
    return [170, 200] + list(keys) + [offset]


def raw(strides, offset=0):
    """Mode 3: the strides themselves (int8 % 24): zero, overlapping or negative ones."""
    return [220, 200] + [s & 0xFF for s in strides] + [offset]


def band(v):
    return 0 if v is None else 128 + v  # None: no band (INT64_MAX); else v in 0..6


def env(threads=1, kernel_set=0):
    return [threads - 1, kernel_set]  # kernel_set 0: automatic, i: the i-th listed set


def problem(dtype=F32, tnd=False, grid=True, idx64=False, seq64=False, dw32=False, det=True, mode3=False,
            head0=False, short=False, seq_q=False, seq_k=False, pre=None, nxt=None,
            B=2, N2=1, G=2, D=8, K=4, S1=4, S2=6, lens=(), ends=(), extra=(0, 0)):
    f = dtype | dw32 << 2 | idx64 << 3 | seq64 << 4 | det << 5 | grid << 6 | tnd << 7
    m = mode3 | head0 << 1 | short << 2 | seq_q << 3 | seq_k << 4
    out = [f, m, band(pre), band(nxt), B, N2 - 1, G, D, K]
    if tnd:
        for q, k in ends:       # per batch: query rows (0..4), key rows (0..5)
            out += [q, k]
        out += list(extra)      # rows past the last ends (0..2)
    else:
        out += [S1, S2]
        for q, k in lens:       # per batch: lengths (read even when the array is absent)
            out += [q, k]
    return out


def fwd_problem(K=4, **kw):
    return problem(K=K - 1, **kw)  # the forward reads K as 1 + byte % 20


def kl_loss(dtype=F32, tnd=False, lengths=False, lse=False, sparse=False, short=False, idx64=False, dw32=False,
            det=True, target=0, mode3=True, pre=None, nxt=None, B=2, S1=4, S2=6, N2=1, G=2, D=8, K=4, N1m=2, Dm=8,
            Dr=0, seed=(1, 2, 3, 4)):
    """The fused KL loss's problem (fuzz_kl_loss.c): flags, dtype/target/mode/band, dims, rope, a data seed.
    target: 0 head_mean, 1 l1, 2 cann."""
    f = tnd | lengths << 1 | lse << 2 | sparse << 3 | short << 4 | idx64 << 5 | dw32 << 6 | det << 7
    g = dtype | target << 2 | mode3 << 4 | (pre is not None) << 5 | (nxt is not None) << 6
    out = [f, g] + ([pre] if pre is not None else []) + ([nxt] if nxt is not None else [])
    out += [B, S1, S2, N2 - 1, G, D, K, N1m, Dm] + ([0, Dr - 1] if Dr else [255])
    return out + list(seed)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(data))


def main():
    views8 = CONTIG * 8
    # fuzz-lig-grad: env, two defect bytes, eight views (q, dq, k, dk, dy, idx, w, dw), the problem
    write("fuzz-lig-grad", "bsnd-f32-contiguous", env() + [NONE, NONE] + views8 + problem(lens=[(4, 6), (2, 3)]))
    write("fuzz-lig-grad", "tnd-bf16-padded", env(2) + [NONE, NONE] + padded() * 8 +
          problem(dtype=BF16, tnd=True, idx64=True, ends=[(3, 4), (2, 5)], extra=(1, 2), K=5))
    write("fuzz-lig-grad", "bsnd-f16-causal-band-permuted", env(3, 1) + [NONE, NONE] +
          permuted() * 2 + padded() * 2 + CONTIG * 2 + permuted() * 2 +
          problem(dtype=F16, mode3=True, pre=2, seq_q=True, seq_k=True, N2=2, G=2, D=5, K=3, S1=5, S2=7,
                  lens=[(5, 7), (3, 2)], dw32=True, det=False))
    write("fuzz-lig-grad", "bsnd-f32-broadcast-inputs-short", env(2) + [NONE, NONE] +
          raw([0, 8, 1, 0]) + CONTIG + raw([0, 1, 0, 0]) + CONTIG * 5 +
          problem(N2=1, G=3, D=4, K=6, short=True, head0=True, lens=[(4, 6), (4, 6)]))
    write("fuzz-lig-grad", "bsnd-f32-empty-heads", env() + [NONE, NONE] + views8 + problem(G=0, lens=[(1, 1), (2, 2)]))

    # fuzz-lig-fwd, forward (op 0): env, defects, five views (q, k, w, idx, values), the problem
    views5 = CONTIG * 5
    write("fuzz-lig-fwd", "fwd-bsnd-f32", [0] + env() + [NONE, NONE] + views5 + fwd_problem(lens=[(4, 6), (1, 2)]))
    write("fuzz-lig-fwd", "fwd-tnd-bf16-continuous", [0] + env(2) + [NONE, NONE] + padded() * 5 +
          fwd_problem(dtype=BF16, tnd=True, grid=False, K=7, ends=[(4, 5), (1, 3)], extra=(2, 0)))
    write("fuzz-lig-fwd", "fwd-bsnd-f16-band-permuted", [0] + env(3, 2) + [NONE, NONE] + permuted() * 5 +
          fwd_problem(dtype=F16, mode3=True, pre=1, N2=3, G=1, D=9, K=12, seq_k=True, idx64=True,
                      lens=[(4, 2), (3, 6)]))
    # KL step (op 1): env, defects, five views (values, target, dy, loss, indices), dtypes, rank, extents
    write("fuzz-lig-fwd", "kl-rank2-f32", [1] + env() + [NONE, NONE] + views5 + [0, 2, 1, 3, 6])
    write("fuzz-lig-fwd", "kl-rank3-mixed-indices", [1] + env(2) + [NONE, NONE] + padded() * 5 +
          [F16 | BF16 << 2 | F32 << 4 | 64, 1, 2, 2, 3, 5])
    # the KL step asked 128 workspace bytes for [0]: rows without slots (fixed in 7c50d05)
    write("fuzz-lig-fwd", "regress-kl-empty-rows-workspace", [1] + env() + [NONE, NONE] + views5 + [0, 0, 0, 0])
    # descriptors (op 2): dtype (byte % 10 - 1), rank (byte % 11 - 1), flags, ten (extent, stride)
    write("fuzz-lig-fwd", "desc-rank3-strided", [2, 1, 4, 1] + [3, 12, 4, 3, 5, 1] + [0, 0] * 7)
    # [2^40, 2^40, 0] was accepted and then overflowed lig_tensor_numel (fixed in 73f560d)
    write("fuzz-lig-fwd", "regress-desc-empty-huge-extents", [2, 3, 4, 0] + [192, 0, 192, 0, 0, 0] + [0, 0] * 7)

    # paged forward (op 3): as the forward; block size, block order and table come from the stream
    write("fuzz-lig-fwd", "paged-bsnd-f32", [3] + env() + [NONE, NONE] + views5 + fwd_problem(lens=[(4, 6), (2, 5)]))
    write("fuzz-lig-fwd", "paged-tnd-bf16", [3] + env(2) + [NONE, NONE] + padded() * 5 +
          fwd_problem(dtype=BF16, tnd=True, idx64=True, ends=[(3, 5), (2, 4)], extra=(1, 0), K=6))
    # regress-paged-no-blocks-workspace (kept as libFuzzer saved it: its block counts come from the
    # stream): a cache of 0 blocks asked for workspace (fixed with the seed's commit)

    # quantized forward (op 4): flags (dtype, layouts, sq, values, lengths, pad, short), dtypes,
    # mode/band/extremes, then B, S1, S2, N2, G, D, K, block size and a data seed
    write("fuzz-lig-fwd", "quant-fp8-bsnd", [4] + env() + [8 | 16, 0, 0] + [2, 6, 30, 1, 4, 128, 8, 2] + [1, 2, 3, 4])
    write("fuzz-lig-fwd", "quant-int8-paged-tnd", [4] + env(2) + [1 | 2 | 4 | 16 | 32, 1 + 3 + 12, 1 | 2] +
          [2, 5, 17, 2, 3, 129, 6, 3] + [5, 6, 7, 8])
    write("fuzz-lig-fwd", "quant-int8-extreme", [4] + env() + [1 | 16, 0, 3 << 3 | 1 << 5] + [0, 2, 5, 0, 0, 140, 5, 0] +
          [9, 9, 9, 9])

    # quantized logits (op 6): flags (dtype, layouts, sq, values, lengths, pad, short), flags (index,
    # value and weight dtypes, clean, compressed, strided, top-k, logits too), range flags (key_start
    # NULL, whole ranges, range dtype, extra columns, empty chance), then B, S1, S2, N2, G, D, K, block
    # size, (paged without top-k) workers, a data seed, and the logits dtype (odd: BFLOAT16)
    write("fuzz-lig-fwd", "logits-fp8-paged-schedule", [6] + env() + [4 | 8, 8, 1 << 5] + [1, 2, 120, 0, 7, 64, 8, 3, 4] +
          [1, 2, 3, 4])
    write("fuzz-lig-fwd", "logits-int8-tnd-compressed-topk", [6] + env(2) + [1 | 2 | 16, 1 | 16 | 32 | 64 | 128, 4 | 8] +
          [0, 4, 90, 1, 3, 33, 9, 2] + [5, 6, 7, 8])
    write("fuzz-lig-fwd", "logits-bf16-fp8-paged-clean-topk", [6] + env() + [4 | 8, 8 | 64 | 128, 1 << 5] +
          [1, 2, 120, 0, 7, 64, 8, 3] + [1, 2, 3, 4] + [1])

    # the sparse logits after a clean, uncompressed logits case without top-k: two bytes (block size
    # 8 or 16 or 1-12, id and output dtypes; blocks 0-13, unaligned, strided, short, a bad id)
    write("fuzz-lig-fwd", "sparse-logits-fp8-paged-bf16", [6] + env() + [4 | 8, 8, 1 << 5] +
          [1, 2, 120, 0, 7, 64, 8, 3, 4] + [1, 2, 3, 4] + [1 | 64, 6 | 16])
    write("fuzz-lig-fwd", "sparse-logits-mxfp4-tnd-f16", [6] + env(2) + [1 | 2 | 16, 1 | 8, 4 | 3 << 3] +
          [0, 4, 90, 1, 3, 64, 9, 2] + [5, 6, 7, 8] + [3 | 128, 9 | 32])

    # fused KL loss (op 5): env, defects, the problem (kl_loss above); the data from its seed
    write("fuzz-lig-fwd", "klloss-bsnd-f32-rope-lengths", [5] + env() + [NONE, NONE] +
          kl_loss(lengths=True, Dr=4, N2=2, G=2, K=5))
    write("fuzz-lig-fwd", "klloss-tnd-bf16-lse-sparse-l1", [5] + env(2) + [NONE, NONE] +
          kl_loss(dtype=BF16, tnd=True, lse=True, sparse=True, target=1, idx64=True, S1=6, S2=8, Dm=12))
    write("fuzz-lig-fwd", "klloss-bsnd-f16-band-cann-short", [5] + env(3, 1) + [NONE, NONE] +
          kl_loss(dtype=F16, target=2, mode3=False, pre=2, nxt=1, short=True, dw32=True, det=False, Dr=2,
                  S1=5, S2=7, K=6))
    write("fuzz-lig-fwd", "klloss-empty-heads", [5] + env() + [NONE, NONE] + kl_loss(G=0, N1m=0, D=0, Dm=0))

    # fuzz-lig-lse: flags (1 TND, 2 lengths, 4 residuals, 8 mask 3, 16 INT64 lengths, 32 x30), B, the
    # long-S1 chance, S1, S2, N2, N1 / N2, D, dtype, FLOAT32 weights, the ratio byte (< 192: one of
    # 1,2,3,4,5,8,16,128), strides, the defect byte (< 200: none), the data seed
    # then the KL byte (1: the dense KL gradient on the lse; 2 non-deterministic, 4 no loss,
    # 8 FLOAT32 d_weights, 16 x 0..3 extra target columns)
    def lse(flags, B, S1, S2, N2, G, D, dtype, w32, ratio_byte, strides, defect=0, long_rows=False, kl=None):
        rows = [0, S1 - 100] if long_rows else [255, S1]
        tail = [] if kl is None else [kl]
        return env() + [flags, B] + rows + [S2, N2 - 1, G, D, dtype, w32, ratio_byte, strides, defect, 1, 2, 3, 4] + tail
    write("fuzz-lig-lse", "bsnd-f32-causal-r4-res", lse(2 | 4 | 8, 2, 9, 7, 1, 2, 8, F32, 0, 3, 0))
    write("fuzz-lig-lse", "tnd-bf16-w32-causal-r1", lse(1 | 8 | 16, 3, 11, 10, 1, 3, 16, BF16, 1, 0, 1))
    write("fuzz-lig-lse", "bsnd-f16-nomask-r16-permuted", lse(4 | 32, 2, 6, 9, 2, 2, 5, F16, 0, 6, 2))
    write("fuzz-lig-lse", "bsnd-f32-causal-r128-long", lse(4 | 8, 1, 260, 3, 1, 1, 4, F32, 1, 7, 0, long_rows=True))
    write("fuzz-lig-lse", "defect-residual", lse(4 | 8, 2, 5, 5, 1, 1, 4, F32, 0, 3, 0, defect=203))
    # D = 0 (every score 0, no workspace): the trivial walk once offset the absent workspace (UBSan)
    write("fuzz-lig-lse", "regress-lse-d0-no-workspace", lse(8, 2, 5, 5, 1, 1, 0, F32, 0, 0, 0))
    write("fuzz-lig-lse", "klgrad-bsnd-bf16-w32-causal-r4-res", lse(2 | 4 | 8, 2, 9, 7, 1, 4, 8, BF16, 1, 3, 0, kl=1 | 8 | 16))
    write("fuzz-lig-lse", "klgrad-tnd-f16-nomask-r1-nondet", lse(1 | 16, 3, 11, 10, 2, 2, 16, F16, 0, 0, 1, kl=1 | 2 | 4))
    write("fuzz-lig-lse", "klgrad-bsnd-f32-d0", lse(8, 2, 5, 5, 1, 1, 0, F32, 0, 0, 0, kl=1 | 32))

    # fuzz-lig-l1norm: flags (1 TND, 2 lengths, 4 residuals, 8 mask 3, 16 INT64 lengths, 32 x4, 64 sparse,
    # 128 short forms), B, the long-S1 chance, S1, the long-S2 chance, S2, N1, D, K (sparse) or extra
    # columns (dense), dtype, INT64 indices, the ratio byte (< 192: one of 1,2,3,4,5,8,16,128),
    # strides, the defect byte (< 200: none), the data seed
    def l1n(flags, B, S1, S2, N1, D, K_or_extra, dtype, idx64, ratio_byte, strides, defect=0, long_rows=False):
        rows = [0, S1 - 100] if long_rows else [255, S1]
        return env() + [flags, B] + rows + [255, S2, N1, D, K_or_extra, dtype, idx64, ratio_byte, strides, defect,
                                            1, 2, 3, 4]
    write("fuzz-lig-l1norm", "bsnd-f32-dense-causal-r4-res", l1n(2 | 4 | 8, 2, 9, 7, 3, 8, 1, F32, 0, 3, 0))
    write("fuzz-lig-l1norm", "tnd-bf16-sparse-causal-r1", l1n(1 | 8 | 16 | 64, 3, 11, 10, 8, 16, 6, BF16, 1, 0, 1))
    write("fuzz-lig-l1norm", "bsnd-f16-sparse-short-nomask-r16", l1n(4 | 32 | 64 | 128, 2, 6, 9, 2, 5, 9, F16, 0, 6, 2))
    write("fuzz-lig-l1norm", "bsnd-f32-dense-causal-r128-long", l1n(4 | 8, 1, 260, 3, 1, 4, 0, F32, 1, 7, 0,
                                                                    long_rows=True))
    write("fuzz-lig-l1norm", "defect-index", l1n(8 | 64, 2, 5, 5, 2, 4, 4, F32, 0, 0, 0, defect=203))

    # fuzz-aclnn: command count, commands, then the operator flag
    write("fuzz-aclnn", "runtime-commands", [6,
                                             0, 0, 100, 7,        # aclrtMalloc 200 bytes, filled with 7
                                             0, 1, 60, 9,         # aclrtMallocHost 120 bytes
                                             2, 200, 10, 120, 3, 1, 40, 0, 0, 0, 0,  # copy into device memory
                                             3, 200, 5, 30, 4, 1, 0x5A,       # aclrtMemset inside it
                                             4, 2, 1, 0, 0, 0] + [2, 1] * 9 + [4, 0, 0, 0] +  # aclCreateTensor [2,2]
                                            [5, 1, 3] + [0] * 24 + [0])  # an int array, then no operator
    write("fuzz-aclnn", "op-backward-bsnd", [0, 1] + env() + [1, NONE] + views8 + problem(lens=[(4, 6), (2, 3)]))
    write("fuzz-aclnn", "op-forward-tnd", [0, 1] + env(2) + [0, NONE] + padded() * 5 +
          fwd_problem(dtype=F16, tnd=True, ends=[(2, 3), (3, 5)], extra=(1, 1)))
    # the KL loss (operator byte 2): front-end defect byte, the problem (CANN's target and statistics)
    write("fuzz-aclnn", "op-kl-loss-bsnd-lengths", [0, 1] + env() + [2, NONE] +
          kl_loss(lengths=True, Dr=2, N2=2, G=1, K=5))
    write("fuzz-aclnn", "op-kl-loss-tnd-bf16", [0, 1] + env(2) + [2, NONE] +
          kl_loss(dtype=BF16, tnd=True, sparse=True, idx64=True, S1=5, S2=7, Dm=10))
    # the quantized forward (operator byte 3): front-end defect byte, the problem as fuzz-lig-fwd's op 4
    # decodes it (query scales on: CANN requires them; no values), the victim byte
    write("fuzz-aclnn", "op-quant-fp8-bsnd", [0, 1] + env() + [3, NONE] + [8, 0, 0] +
          [2, 6, 30, 1, 4, 128, 8, 2] + [1, 2, 3, 4] + [0])
    write("fuzz-aclnn", "op-quant-int8-paged-tnd", [0, 1] + env(2) + [3, NONE] + [1 | 2 | 4 | 8 | 32, 1 + 3 + 12, 1 | 2] +
          [2, 5, 17, 2, 3, 129, 6, 3] + [5, 6, 7, 8] + [0])


if __name__ == "__main__":
    main()
