"""The package's runtime over the C library (bound in _capi): its errors as Python exceptions, torch
tensors as lig_tensor descriptors, the two-phase call, and the verdicts of CUDA calls.

Nothing here copies a tensor that lig can read in place: a descriptor carries the tensor's data
pointer, shape and element strides. Only layouts lig refuses (negative strides, which torch never
makes but numpy can) are made contiguous first.
"""
from __future__ import annotations

import collections
import ctypes
import threading
from typing import Optional, Sequence

import torch

from ._capi import (
    LIG_BFLOAT16,
    LIG_DEVICE_CUDA,
    LIG_ERR_PARAM_INVALID,
    LIG_ERR_PARAM_NULLPTR,
    LIG_FLOAT4_E2M1X2,
    LIG_FLOAT8_E4M3FN,
    LIG_FLOAT16,
    LIG_FLOAT32,
    LIG_INT8,
    LIG_INT32,
    LIG_INT64,
    LIG_SUCCESS,
    LIG_UINT8,
    LIG_WORKSPACE_STATUS_BYTES,
    lig_create_tensor,
    lig_create_tensor_on,
    lig_destroy_executor,
    lig_destroy_tensor,
    lig_get_last_error,
    lig_status_string,
    lig_version,
    lig_workspace_status_from_copy,
)

# torch's dtypes by their lig_dtype codes
_DTYPES = {
    torch.float32: LIG_FLOAT32,
    torch.float16: LIG_FLOAT16,
    torch.bfloat16: LIG_BFLOAT16,
    torch.int32: LIG_INT32,
    torch.int64: LIG_INT64,
    torch.float8_e4m3fn: LIG_FLOAT8_E4M3FN,
    torch.int8: LIG_INT8,
    torch.uint8: LIG_UINT8,
}
if hasattr(torch, "float4_e2m1fn_x2"):  # torch 2.8+: two e2m1 codes a byte, as lig's FLOAT4_E2M1X2
    _DTYPES[torch.float4_e2m1fn_x2] = LIG_FLOAT4_E2M1X2


class LigError(Exception):
    """An error reported by the C library; ``status`` is the lig_status code."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class LigValueError(LigError, ValueError):
    """LIG_ERR_PARAM_INVALID or LIG_ERR_PARAM_NULLPTR: the arguments are wrong."""


class LigRuntimeError(LigError, RuntimeError):
    """LIG_ERR_RUNTIME or LIG_ERR_INNER: the library failed while running."""


def version() -> str:
    return lig_version().decode()


def last_error() -> str:
    msg = lig_get_last_error()
    return msg.decode(errors="replace") if msg else ""


def status_string(status: int) -> str:
    s = lig_status_string(status)
    return s.decode(errors="replace") if s else str(status)


def check(status: int, what: str) -> None:
    """Raises the Python exception matching a lig_status (the message is the library's)."""
    if status == LIG_SUCCESS:
        return
    message = f"{what}: {last_error()} ({status_string(status)})"
    if status in (LIG_ERR_PARAM_INVALID, LIG_ERR_PARAM_NULLPTR):
        raise LigValueError(message, status)
    raise LigRuntimeError(message, status)


# ---- tensor descriptors ----------------------------------------------------------------------


class Descriptors:
    """Creates lig_tensor descriptors for torch tensors and destroys them on exit.

    Keeps every tensor it describes (and any contiguous copy it had to make) alive for as long as
    the descriptors live.
    """

    def __init__(self) -> None:
        self._handles: list = []
        self._keep: list = []
        self.device: Optional[torch.device] = None  # the first CUDA device described, if any

    def __enter__(self) -> "Descriptors":
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            lig_destroy_tensor(h)
        self._handles.clear()
        self._keep.clear()

    def __call__(self, t: Optional[torch.Tensor], name: str, as_dtype: Optional[int] = None) -> Optional[int]:
        """The descriptor of t (None for None). ``as_dtype``: a lig dtype the tensor's bytes are
        described as, instead of the one its torch dtype maps to (MXFP4 codes held in int8 or uint8
        tensors, as DeepGEMM and the engines keep them, described as FLOAT4_E2M1X2)."""
        if t is None:
            return None
        # Callers check each argument's dtype first (lig._args); this is the mapping's own guard.
        if not isinstance(t, torch.Tensor) or t.device.type not in ("cpu", "cuda") or t.dtype not in _DTYPES:
            raise TypeError(f"lig: {name}: cannot describe {type(t).__name__} "
                            f"{getattr(t, 'dtype', '')} {getattr(t, 'device', '')} to the library")
        t = t.detach()
        if t.is_neg() or t.is_conj():
            t = t.resolve_neg().resolve_conj()
        retyped = () if as_dtype is None else (as_dtype,)
        handle = self._create(t, *retyped)
        if handle is None and not t.is_contiguous():
            # A layout lig does not take: describe a contiguous copy instead.
            t = t.contiguous()
            handle = self._create(t, *retyped)
        if handle is None:
            raise LigValueError(f"lig_create_tensor({name}): {last_error()}", LIG_ERR_PARAM_INVALID)
        self._handles.append(handle)
        self._keep.append(t)
        if t.device.type == "cuda" and self.device is None:
            self.device = t.device
        return handle

    def each(self, named) -> tuple:
        """The descriptors of (tensor, name) pairs (or (tensor, name, as_dtype) triples), in their order."""
        return tuple(self(*item) for item in named)

    @staticmethod
    def _create(t: torch.Tensor, as_dtype: Optional[int] = None) -> Optional[int]:
        if any(s < 0 for s in t.stride()):
            return None
        dtype = _DTYPES[t.dtype] if as_dtype is None else as_dtype
        nd = t.dim()
        shape = (ctypes.c_int64 * max(nd, 1))(*t.shape)
        strides = (ctypes.c_int64 * max(nd, 1))(*t.stride())
        ptr = t.data_ptr() if t.numel() > 0 else None
        if t.device.type == "cuda":  # a build without the CUDA backend refuses it in phase 1, by name
            return lig_create_tensor_on(ptr, dtype, nd, shape, strides, LIG_DEVICE_CUDA, t.device.index or 0)
        return lig_create_tensor(ptr, dtype, nd, shape, strides)


class _DeviceVerdicts:
    """The device-side checks of CUDA calls whose verdict has not been read yet.

    A CUDA phase 2 only enqueues work; its index and target checks run on the device and leave their
    verdict in the workspace. Reading it at once would wait for the stream at every call (and cannot
    be done while a stream is being captured into a CUDA graph), so each call instead enqueues an
    asynchronous copy of the verdict into pinned memory plus an event, and the verdict is read once
    the event has completed: at the start of the next lig call on a CUDA device (without waiting) or
    in :func:`lig.check_errors` (waiting). The first failure raises there, in call order.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = collections.deque()

    def defer(self, workspace: torch.Tensor, stream: "torch.cuda.Stream", what: str) -> None:
        if torch.cuda.is_current_stream_capturing():
            # the checks are part of the graph and still keep bad input from being written; no
            # verdict of a capture can be read (nor copied) until the graph is replayed
            return
        copy = torch.empty(LIG_WORKSPACE_STATUS_BYTES, dtype=torch.uint8, pin_memory=True)
        with torch.cuda.stream(stream):
            copy.copy_(workspace[:LIG_WORKSPACE_STATUS_BYTES], non_blocking=True)
            done = torch.cuda.Event()
            done.record(stream)
        with self._lock:
            self._pending.append((done, copy, workspace.data_ptr(), what))

    def read(self, wait: bool) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    return
                done, copy, at, what = self._pending[0]
                if not wait and not done.query():
                    return
                self._pending.popleft()
            done.synchronize()
            check(lig_workspace_status_from_copy(LIG_DEVICE_CUDA, at, copy.data_ptr()), what)


device_verdicts = _DeviceVerdicts()


def check_errors() -> None:
    """Waits for lig's CUDA calls so far and raises the first failure of their device-side checks
    (a bad index or KL target: :class:`LigValueError`, with the message the CPU gives). CPU calls
    raise at the call and leave nothing here."""
    device_verdicts.read(wait=True)


def run(get_workspace_size, run_fn, args: Sequence, what: str, device: Optional[torch.device] = None) -> None:
    """Phase 1 (`get_workspace_size(*args, &size, &executor)`), then phase 2 in a torch workspace.

    With CUDA tensors (`device`): the workspace is device memory, phase 2 runs on
    torch.cuda.current_stream(device), and the verdict of the device-side checks is read later
    without a synchronisation (see _DeviceVerdicts): errors of this call raise at a later lig call
    or in lig.check_errors(). The verdicts of earlier calls that have completed are read first.
    """
    if device is not None and not torch.cuda.is_current_stream_capturing():
        device_verdicts.read(wait=False)
    size = ctypes.c_uint64(0)
    executor = ctypes.c_void_p(None)
    check(get_workspace_size(*args, ctypes.byref(size), ctypes.byref(executor)), f"{what}_get_workspace_size")
    try:
        # Never hand a NULL workspace to phase 2, even for an empty problem.
        workspace = torch.empty(max(int(size.value), LIG_WORKSPACE_STATUS_BYTES), dtype=torch.uint8,
                                device=device if device is not None else "cpu")
    except BaseException:
        lig_destroy_executor(executor)
        raise
    if device is None:
        # Phase 2 consumes the executor, success or not.
        check(run_fn(workspace.data_ptr(), size.value, executor, None), what)
        return
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        check(run_fn(workspace.data_ptr(), size.value, executor, ctypes.c_void_p(stream.cuda_stream)), what)
        device_verdicts.defer(workspace, stream, what)
