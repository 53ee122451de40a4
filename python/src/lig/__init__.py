"""lig: the DeepSeek-V3.2 lightning indexer (forward, fused KL step, backward) for PyTorch.

Bindings of the C library `lig` (loaded with ctypes from the package directory). All functions take
CPU torch tensors and read them in place (strided views included); see SPEC.md for the contract.

    indices, values = lig.lightning_indexer(q, k, w, top_k)     # differentiable in `values`
    loss = lig.indexer_kl_loss(values, p, indices)              # fused KL, differentiable
    loss.backward()                                             # runs lig's C backward

    d_q, d_k, d_w = lig.indexer_grad(q, k, dy, indices, w)      # the backward operator itself
    indices, values = lig.indexer(q, k, w, top_k)               # the forward operator
    loss, dy = lig.indexer_kl_grad(values, p, indices)          # the fused KL step
"""
from ._lib import (
    INT64_MAX,
    LIG_ERR_INNER,
    LIG_ERR_PARAM_INVALID,
    LIG_ERR_PARAM_NULLPTR,
    LIG_ERR_RUNTIME,
    LigError,
    LigRuntimeError,
    LigValueError,
)
from ._lib import lig_get_num_threads as _get_num_threads
from ._lib import lig_set_num_threads as _set_num_threads
from ._lib import version as _version
from ._ops import indexer, indexer_grad, indexer_kl_grad, indexer_kl_loss, lightning_indexer

__version__ = _version()


def set_num_threads(n: int) -> None:
    """Threads lig uses (0 = default: the LIG_NUM_THREADS environment variable, else all online CPUs)."""
    n = int(n)
    if n < 0:
        raise ValueError(f"lig.set_num_threads: expected n >= 0, got {n}")
    _set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads lig's next call will use."""
    return int(_get_num_threads())


__all__ = [
    "__version__",
    "indexer",
    "indexer_grad",
    "indexer_kl_grad",
    "indexer_kl_loss",
    "lightning_indexer",
    "set_num_threads",
    "get_num_threads",
    "LigError",
    "LigValueError",
    "LigRuntimeError",
    "INT64_MAX",
    "LIG_ERR_PARAM_NULLPTR",
    "LIG_ERR_PARAM_INVALID",
    "LIG_ERR_RUNTIME",
    "LIG_ERR_INNER",
]
