"""Argument checks made in Python before any output is allocated.

The library validates every argument again, and everything that depends on several of them
(shapes against each other, sequence lengths, index ranges), before it writes anything. These
checks run first so that an argument torch would otherwise trip over while allocating an output
(a negative ``sparse_count`` reaching ``torch.empty``) is reported by its name, so that Python
numbers are never silently converted (2.5 is not a count), and so that a dtype error lists only
the dtypes that argument accepts. Errors the library would report with LIG_ERR_PARAM_INVALID
are raised as ``LigValueError`` with that status, in the library's wording; wrong Python types
and dtypes raise ``TypeError``.
"""
from __future__ import annotations

import numbers
import operator
from typing import Iterable, Optional, Sequence

import torch

from ._capi import LIG_ERR_PARAM_INVALID, LIG_MAX_DIMS
from ._lib import LigValueError

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INDEX_DTYPES = (torch.int32, torch.int64)

# Per layout: (rank, dimension names) of query and key.
_RANKS = {"BSND": ((4, "[B,S1,N1,D]"), (4, "[B,S2,N2,D]")), "TND": ((3, "[T1,N1,D]"), (3, "[T2,N2,D]"))}


def _names(dtypes: Sequence[torch.dtype], prefix: str = "") -> str:
    # A tensor's dtype is named as lig names it (float32); a dtype argument as it is passed (torch.float32).
    names = [prefix + str(d).replace("torch.", "") for d in dtypes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _shape(t: torch.Tensor) -> str:
    return "[" + ",".join(str(n) for n in t.shape) + "]"


def invalid(message: str) -> LigValueError:
    return LigValueError(f"lig: {message}", LIG_ERR_PARAM_INVALID)


def integer(x, name: str, minimum: Optional[int] = None) -> int:
    """A Python int (or anything with __index__: numpy integers, one-element integer tensors);
    bools and floats are refused rather than converted."""
    if isinstance(x, bool) or isinstance(x, float):
        raise TypeError(f"lig: {name}: expected an int, got {type(x).__name__} {x!r}")
    try:
        value = operator.index(x)
    except TypeError:
        raise TypeError(f"lig: {name}: expected an int, got {type(x).__name__} {x!r}") from None
    if minimum is not None and value < minimum:
        raise invalid(f"{name}: expected a value >= {minimum}, got {value}")
    return value


def flag(x, name: str) -> bool:
    """A bool (Python or numpy); anything else is refused rather than tested for truth."""
    if isinstance(x, bool):
        return x
    if type(x).__name__ == "bool_" and hasattr(x, "item"):  # numpy.bool_
        return bool(x.item())
    raise TypeError(f"lig: {name}: expected a bool, got {type(x).__name__} {x!r}")


def real(x, name: str) -> float:
    """A Python float or int (or a numpy float); bools are refused rather than read as 0 / 1."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"lig: {name}: expected a float, got {type(x).__name__} {x!r}")
    return float(x)


def string(x, name: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"lig: {name}: expected a str, got {type(x).__name__}")
    return x


def dtype_choice(dtype, allowed: Sequence[torch.dtype], name: str) -> None:
    if not isinstance(dtype, torch.dtype) or dtype not in allowed:
        raise TypeError(f"lig: {name}: expected {_names(allowed, 'torch.')}, got {dtype}")


def optional_dtype_choice(dtype, allowed: Sequence[torch.dtype], name: str) -> None:
    """An output dtype argument whose None means "the inputs' dtype"."""
    if dtype is not None:
        dtype_choice(dtype, allowed, name)


def tensor(t, name: str, dtypes: Sequence[torch.dtype], optional: bool = False) -> None:
    """A CPU or CUDA tensor of one of `dtypes` with at most LIG_MAX_DIMS dimensions (the library
    checks that one call's tensors share a device, and that sequence lengths are on the CPU)."""
    if t is None and optional:
        return
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"lig: {name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"lig: {name}: expected a CPU or CUDA tensor, got device {t.device}")
    if t.dtype not in dtypes:
        raise TypeError(f"lig: {name}: expected dtype {_names(dtypes)}, got {t.dtype}")
    if t.dim() > LIG_MAX_DIMS:
        raise invalid(f"{name}: expected at most {LIG_MAX_DIMS} dimensions, got {t.dim()} (shape {_shape(t)})")


def tensors(floats, indices=()) -> None:
    """floats: (tensor, name) pairs of float tensors; indices: (tensor, name, optional) triples of
    index tensors; checked in that order."""
    for t, name in floats:
        tensor(t, name, FLOAT_DTYPES)
    for t, name, optional in indices:
        tensor(t, name, INDEX_DTYPES, optional=optional)


def band(layout_value, sparse_mode, pre_tokens, next_tokens) -> tuple:
    """The layout and the mask (sparse_mode and its token band) as every operator takes them."""
    return (string(layout_value, "layout"), integer(sparse_mode, "sparse_mode"), integer(pre_tokens, "pre_tokens"),
            integer(next_tokens, "next_tokens"))


def layout(value, query: torch.Tensor, key: torch.Tensor, names: Sequence[str] = ("query", "key")) -> None:
    """The layout string, and the ranks of query and key it implies (the forward's output shape
    is derived from them); `names` are the two tensors' parameter names."""
    string(value, "layout")
    if value not in _RANKS:
        raise invalid(f'layout: expected "BSND" or "TND", got "{value}"')
    for t, name, (rank, dims) in zip((query, key), names, _RANKS[value]):
        if t.dim() != rank:
            raise invalid(f"{name}: expected rank {rank} ({dims}, layout {value}), got rank {t.dim()} "
                          f"shape {_shape(t)}")


def paged_layout(value, query: torch.Tensor, key_cache: torch.Tensor, block_table: torch.Tensor) -> None:
    """The layout string and the ranks of query, key_cache and block_table for the forward over a
    paged key cache (the output's shape is derived from query and key_cache)."""
    string(value, "layout")
    if value not in _RANKS:
        raise invalid(f'layout: expected "BSND" or "TND", got "{value}"')
    rank, dims = _RANKS[value][0]
    if query.dim() != rank:
        raise invalid(f"query: expected rank {rank} ({dims}, layout {value}), got rank {query.dim()} "
                      f"shape {_shape(query)}")
    for t, name, (rank, dims) in ((key_cache, "key_cache", (4, "[num_blocks,block_size,N2,D]")),
                                  (block_table, "block_table", (2, "[B,max_blocks_per_seq]"))):
        if t.dim() != rank:
            raise invalid(f"{name}: expected rank {rank} ({dims}), got rank {t.dim()} shape {_shape(t)}")


def lengths(x, name: str) -> Optional[torch.Tensor]:
    """None, a sequence of ints, or an int32/int64 tensor -> a CPU index tensor (or None)."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        tensor(x, name, INDEX_DTYPES)
        return x
    if isinstance(x, Iterable) and not isinstance(x, (str, bytes)):
        return torch.tensor([integer(v, f"{name}[{i}]") for i, v in enumerate(x)], dtype=torch.int64)
    raise TypeError(f"lig: {name}: expected None, a sequence of ints or an integer tensor, got {type(x).__name__}")


def required_lengths(x, name: str, why: str) -> torch.Tensor:
    """Like :func:`lengths`, but None is refused (in the library's words) instead of meaning
    "full length"."""
    if x is None:
        raise invalid(f"{name}: expected a [B] tensor of {why}, got None")
    return lengths(x, name)
