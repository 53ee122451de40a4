"""lig's CPU kernel sets: the micro-kernels of one ISA level each ("scalar", "avx2", ...).

Phase 1 of every operator plans with the set in effect: the one forced with
:func:`set_kernel_set`, else the LIG_ISA environment variable, else the widest set the CPU
supports. The choice is the library's, process-wide. Results are bitwise reproducible for a
given set (with ``deterministic=True`` for the backward); two sets may differ in the last bits.
"""
from __future__ import annotations

from typing import List, Optional

from . import _args, _capi, _lib


def kernel_sets() -> List[str]:
    """The kernel sets this build and CPU support, portable first, e.g. ``["scalar", "avx2"]``."""
    listed = _capi.lig_kernel_sets()
    return [name for name in (listed.decode() if listed else "").split(",") if name]


def set_kernel_set(name: Optional[str]) -> None:
    """Forces the kernel set the following calls plan with; ``None`` or ``""`` returns to automatic
    selection (LIG_ISA, else the widest set the CPU supports). An unknown set, or one this CPU
    lacks, raises :class:`lig.LigValueError` (a ``ValueError``) with the library's message, and
    changes nothing."""
    if name is None:
        name = ""
    _args.string(name, "name")
    if "\0" in name:  # C would read only up to the NUL: refuse rather than force another set
        raise _args.invalid(f"name: expected a kernel set name without NUL characters, got {name!r}")
    _lib.check(_capi.lig_set_kernel_set(name.encode() if name else None), "lig_set_kernel_set")


def get_kernel_set() -> str:
    """The kernel set the next call plans with; ``""`` when LIG_ISA names a set this CPU cannot
    run (the operators then fail with the library's message)."""
    current = _capi.lig_get_kernel_set()
    return current.decode() if current else ""
