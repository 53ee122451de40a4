"""Generated problems for the property tests (driven by hypothesis).

Data sit on a coarse grid (small integers / 8) so that every score, ReLU decision and gradient sum
is exact in fp32: lig's results can then be compared with the float64 reference exactly, not just
to a tolerance, and ties in the top-k are common and exact.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Union

import torch
from hypothesis import strategies as st

from _reference import INT64_MAX, counted_mask, geometry, grid

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@dataclasses.dataclass
class Case:
    layout: str
    dtype: torch.dtype
    q: torch.Tensor
    k: torch.Tensor
    w: torch.Tensor
    idx: torch.Tensor
    dy: torch.Tensor
    aq: Optional[List[int]]
    ak: Optional[List[int]]
    aq_arg: Union[None, list, torch.Tensor]
    ak_arg: Union[None, list, torch.Tensor]
    mode: int
    pre: int
    nxt: int
    K: int
    N2: int
    index_dtype: torch.dtype
    deterministic: bool
    dw_dtype: Optional[torch.dtype]
    values_dtype: Optional[torch.dtype]

    def kwargs(self):
        return dict(
            actual_seq_lengths_query=self.aq_arg,
            actual_seq_lengths_key=self.ak_arg,
            layout=self.layout,
            sparse_mode=self.mode,
            pre_tokens=self.pre,
            next_tokens=self.nxt,
        )

    def ref_args(self):
        return self.aq, self.ak, self.mode, self.pre, self.nxt


def _strided(x: torch.Tensor, how: int) -> torch.Tensor:
    """The same values as a non-contiguous view (positive strides)."""
    if how == 1:  # every other element of a wider buffer
        buf = torch.zeros(x.shape + (2,), dtype=x.dtype)
        buf[..., 0] = x
        return buf[..., 0]
    if how == 2 and x.dim() >= 2:  # transposed storage
        return x.transpose(0, -1).contiguous().transpose(0, -1)
    return x


def _lengths_arg(values: Optional[List[int]], form: int):
    if values is None:
        return None
    if form == 0:
        return list(values)
    return torch.tensor(values, dtype=torch.int32 if form == 1 else torch.int64)


@st.composite
def cases(draw, max_batch=3, max_rows=6, max_keys=9, max_d=40, max_k=20) -> Case:
    layout = draw(st.sampled_from(["BSND", "TND"]))
    dtype = draw(st.sampled_from(DTYPES))
    N2 = draw(st.sampled_from([1, 1, 2, 3]))
    G = draw(st.integers(1, 4))
    N1 = N2 * G
    D = draw(st.one_of(st.integers(1, 8), st.integers(1, max_d)))
    K = draw(st.one_of(st.integers(1, 6), st.integers(1, max_k)))
    B = draw(st.integers(1, max_batch))
    mode = draw(st.sampled_from([0, 3]))
    pre = draw(st.one_of(st.just(INT64_MAX), st.integers(0, 8)))
    nxt = draw(st.one_of(st.just(INT64_MAX), st.integers(0, 8)))
    if layout == "BSND":
        S1 = draw(st.integers(0, max_rows))
        S2 = draw(st.integers(0, max_keys))
        aq = draw(st.one_of(st.none(), st.lists(st.integers(0, S1), min_size=B, max_size=B)))
        ak = draw(st.one_of(st.none(), st.lists(st.integers(0, S2), min_size=B, max_size=B)))
        q_shape, k_shape, w_shape, lead = (B, S1, N1, D), (B, S2, N2, D), (B, S1, N1), (B, S1)
    else:
        qlen = draw(st.lists(st.integers(0, max_rows - 1), min_size=B, max_size=B))
        klen = draw(st.lists(st.integers(0, max_keys - 1), min_size=B, max_size=B))
        aq = [sum(qlen[: b + 1]) for b in range(B)]
        ak = [sum(klen[: b + 1]) for b in range(B)]
        T1 = aq[-1] + draw(st.integers(0, 2))
        T2 = ak[-1] + draw(st.integers(0, 2))
        q_shape, k_shape, w_shape, lead = (T1, N1, D), (T2, N2, D), (T1, N1), (T1,)
    drop_n2 = N2 == 1 and draw(st.booleans())
    slot_shape = lead + ((K,) if drop_n2 else (N2, K))
    seed = draw(st.integers(0, 2**31 - 1))
    strided = draw(st.sampled_from([0, 0, 1, 2]))
    broadcast_w = draw(st.booleans())
    nonfinite_dy = draw(st.booleans())
    index_dtype = draw(st.sampled_from([torch.int32, torch.int64]))
    deterministic = draw(st.booleans())
    dw_dtype = draw(st.sampled_from([None, None, torch.float32]))
    values_dtype = draw(st.sampled_from([None, torch.float32]))
    aq_form, ak_form = draw(st.integers(0, 2)), draw(st.integers(0, 2))

    gen = torch.Generator().manual_seed(seed)
    q = grid(gen, q_shape).to(dtype)
    k = grid(gen, k_shape).to(dtype)
    if broadcast_w:  # one weight per head, broadcast over rows (stride 0), as a trained `u` is
        w = grid(gen, (N1,)).to(dtype).expand(w_shape)
    else:
        w = grid(gen, w_shape).to(dtype)

    geo = geometry(layout, q_shape, k_shape, aq, ak)
    R = geo.rows
    u = torch.rand((R, N2, K), generator=gen)
    Lk = geo.Lk.view(-1, 1, 1).expand(R, N2, K)
    pick = (torch.rand((R, N2, K), generator=gen) * Lk.clamp(min=1)).floor().to(torch.int64)
    idx = torch.where((u < 0.2) | (Lk == 0), torch.full_like(pick, -1), pick)
    # rows outside the valid lengths are never read: fill them with garbage
    garbage = torch.randint(-7, 1000, (R, N2, K), generator=gen)
    idx = torch.where(geo.valid.view(-1, 1, 1), idx, garbage)
    dy = grid(gen, (R, N2, K))
    if nonfinite_dy:  # slots that do not count may hold anything
        counted = counted_mask(geo, idx, mode, pre, nxt)
        junk = torch.tensor([float("nan"), float("inf"), float("-inf")], dtype=torch.float64)
        pick_junk = junk[torch.randint(0, 3, (R, N2, K), generator=gen)]
        dy = torch.where(counted, dy, pick_junk)
    idx = idx.to(index_dtype).reshape(slot_shape)
    dy = dy.to(dtype).reshape(slot_shape)

    if strided:
        q, k, idx, dy = (_strided(x, strided) for x in (q, k, idx, dy))
        if not broadcast_w:
            w = _strided(w, strided)
    return Case(
        layout=layout, dtype=dtype, q=q, k=k, w=w, idx=idx, dy=dy, aq=aq, ak=ak,
        aq_arg=_lengths_arg(aq, aq_form), ak_arg=_lengths_arg(ak, ak_form),
        mode=mode, pre=pre, nxt=nxt, K=K, N2=N2, index_dtype=index_dtype, deterministic=deterministic,
        dw_dtype=dw_dtype, values_dtype=values_dtype,
    )


def examples(n: int) -> int:
    """max_examples for a property test: n, or LIG_HYPOTHESIS_EXAMPLES when set (longer hunts)."""
    import os

    return int(os.environ.get("LIG_HYPOTHESIS_EXAMPLES", n))


# ---- paged key caches ------------------------------------------------------------------------------

# What fills everything a paged forward must not read: spare blocks, the rows past a batch's length
# in its last block, and the table entries past the blocks a batch uses. Read garbage keys change
# the scores (64 and inf dominate any grid score; NaN counts as 0); read garbage entries lie outside
# [0, num_blocks), which the library would refuse.
KEY_GARBAGE = (64.0, -64.0, float("nan"), float("inf"), float("-inf"))
BLOCK_SIZES = (1, 2, 3, 4, 7, 16, 64)


def table_garbage(num_blocks: int):
    return (-1, -7, num_blocks, num_blocks + 100, 2**31 - 1, -(2**31))


@dataclasses.dataclass
class PagedCase:
    base: Case  # the same problem with contiguous keys (base.k, base.ak), for lig.indexer
    key_cache: torch.Tensor  # [num_blocks, block_size, N2, D]
    block_table: torch.Tensor  # [B, max_blocks_per_seq]
    lengths: List[int]  # per-batch key lengths
    lengths_arg: Union[list, torch.Tensor]
    block_size: int

    def kwargs(self):
        c = self.base
        return dict(actual_seq_lengths_query=c.aq_arg, layout=c.layout, sparse_mode=c.mode, pre_tokens=c.pre,
                    next_tokens=c.nxt)


def batch_keys(layout: str, k: torch.Tensor, B: int, ak: Optional[List[int]]) -> List[torch.Tensor]:
    """The keys of each batch of a contiguous key tensor: [Lk, N2, D] each."""
    if layout == "BSND":
        return [k[b, : (ak[b] if ak is not None else k.shape[1])] for b in range(B)]
    starts = [0] + list(ak[:-1])
    return [k[s:e] for s, e in zip(starts, ak)]


def page(keys: List[torch.Tensor], n2: int, d: int, dtype: torch.dtype, block_size: int, spare: int, extra: int,
         table_dtype: torch.dtype, gen: torch.Generator, cache_strides: int = 0, table_view: bool = False):
    """Scatters each batch's keys over the blocks of a cache, in a random block order, with `spare`
    blocks nobody uses and `extra` unused columns in the table; everything unused holds garbage.
    Returns (key_cache, block_table)."""
    need = [-(-kb.shape[0] // block_size) for kb in keys]
    B = len(keys)
    width = max(need, default=0) + extra
    num_blocks = sum(need) + spare
    junk = torch.tensor(KEY_GARBAGE, dtype=torch.float64)
    cache = junk[torch.randint(0, len(KEY_GARBAGE), (num_blocks, block_size, n2, d), generator=gen)].to(dtype)
    tjunk = torch.tensor(table_garbage(num_blocks), dtype=torch.int64)
    table = tjunk[torch.randint(0, len(tjunk), (B, width), generator=gen)]
    order = torch.randperm(num_blocks, generator=gen).tolist()
    for b, kb in enumerate(keys):
        for j in range(need[b]):
            block = order.pop()
            table[b, j] = block
            rows = kb[j * block_size: (j + 1) * block_size]
            cache[block, : rows.shape[0]] = rows.to(dtype)
    table = table.to(table_dtype)
    if cache_strides:
        cache = _strided(cache, cache_strides)
    if table_view:  # the table as columns of a wider one (non-contiguous rows), garbage in the rest
        wide = tjunk[torch.randint(0, len(tjunk), (B, width + 3), generator=gen)].to(table_dtype)
        wide[:, 1: width + 1] = table
        table = wide[:, 1: width + 1]
    return cache, table


@st.composite
def paged_cases(draw, block_sizes=BLOCK_SIZES, **limits) -> PagedCase:
    base = draw(cases(**limits))
    n2, d = base.k.shape[-2], base.k.shape[-1]
    B = base.q.shape[0] if base.layout == "BSND" else len(base.aq)
    keys = batch_keys(base.layout, base.k, B, base.ak)
    lengths = [kb.shape[0] for kb in keys]
    block_size = draw(st.sampled_from(block_sizes))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    cache, table = page(keys, n2, d, base.dtype, block_size, spare=draw(st.integers(0, 3)),
                        extra=draw(st.integers(0, 2)), table_dtype=draw(st.sampled_from([torch.int32, torch.int64])),
                        gen=gen, cache_strides=draw(st.sampled_from([0, 0, 1, 2])), table_view=draw(st.booleans()))
    return PagedCase(base=base, key_cache=cache, block_table=table, lengths=lengths,
                     lengths_arg=_lengths_arg(lengths, draw(st.integers(0, 2))), block_size=block_size)
