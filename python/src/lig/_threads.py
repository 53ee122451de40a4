"""lig's thread count under PyTorch: torch's intra-op count, unless the user chose one.

A PyTorch program sizes its CPU parallelism with ``torch.set_num_threads`` (or OMP_NUM_THREADS);
lig follows it, so that lig's pool and torch's do not each claim every core. A count chosen for
lig itself wins: ``lig.set_num_threads(n)`` with n > 0, else the LIG_NUM_THREADS environment
variable, read here before each call (the library reads it once per process). The library keeps one process-wide count, so it is re-applied
before every call: torch's count may have changed since the last one.
"""
from __future__ import annotations

import os
import re
import threading

import torch

from . import _capi

_lock = threading.Lock()
_chosen = 0  # lig.set_num_threads(n > 0); 0 = follow the environment or torch
_MAX_THREADS = 1024  # the library's cap on LIG_NUM_THREADS (core/tuning.h)


def _environment_sets_count() -> bool:
    # The library's rule for LIG_NUM_THREADS: a whole positive decimal number, else ignored.
    value = os.environ.get("LIG_NUM_THREADS", "")
    return re.fullmatch(r"\s*\+?[0-9]+", value) is not None and int(value) > 0


def apply() -> None:
    """Hands the library the count its next call should use."""
    with _lock:
        if _chosen > 0:
            _capi.lig_set_num_threads(_chosen)
        elif _environment_sets_count():
            # the library reads its environment once per process (contract 8.1); a program that
            # sets LIG_NUM_THREADS later still gets it, through the call
            _capi.lig_set_num_threads(min(int(os.environ["LIG_NUM_THREADS"]), _MAX_THREADS))
        else:
            _capi.lig_set_num_threads(max(1, torch.get_num_threads()))


def choose(n: int) -> None:
    global _chosen
    with _lock:
        _chosen = n
    apply()


def current() -> int:
    apply()
    return int(_capi.lig_get_num_threads())
