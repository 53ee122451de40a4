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
