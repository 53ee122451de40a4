"""lig: the DeepSeek-V3.2 lightning indexer (forward, fused KL step, backward) for PyTorch.

Bindings of the C library `lig` (loaded with ctypes from the package directory, bound in _capi). The
functions take CPU torch tensors, and the forward, backward and KL step CUDA tensors too with a CUDA
build of the library (each function's docstring says which, under "Devices"); they read the tensors in
place (strided views included). The contract (formulas, shapes,
which slots count, dtypes, errors, determinism) is docs/contract.md in the repository and the sdist.
Results are deterministic by default (``deterministic=False`` to opt out); lig's thread count follows
``torch.get_num_threads()`` unless set with :func:`set_num_threads` or LIG_NUM_THREADS; the CPU
kernel set is the widest the processor supports unless forced with :func:`set_kernel_set` or LIG_ISA.

    indices, values = lig.lightning_indexer(q, k, w, top_k)     # differentiable in `values`
    loss = lig.indexer_kl_loss(values, p, indices)              # fused KL, differentiable
    loss.backward()                                             # runs lig's C backward

    d_q, d_k, d_w = lig.indexer_grad(q, k, dy, indices, w)      # the backward operator itself
    indices, values = lig.indexer(q, k, w, top_k)               # the forward operator
    indices, values = lig.indexer_paged(q, key_cache, block_table, w, top_k, key_lengths)  # paged keys
    loss, dy = lig.indexer_kl_grad(values, p, indices)          # the fused KL step
    loss = lig.sparse_indexer_kl_loss(q_idx, k_idx, w, indices, q, kv, m, z, scale)  # target from the attention
    logits = lig.fp8_mqa_logits(q, (k, k_scale), w, starts, ends)  # DeepGEMM's names (also paged + metadata)
"""
from ._capi import INT64_MAX, LIG_ERR_INNER, LIG_ERR_PARAM_INVALID, LIG_ERR_PARAM_NULLPTR, LIG_ERR_RUNTIME
from ._lib import (
    LigError,
    LigRuntimeError,
    LigValueError,
    check_errors,
)
from ._lib import version as _version
from . import _args, _threads
from ._kernel_sets import get_kernel_set, kernel_sets, set_kernel_set
# one module per operator (op, fake rule, autograd rule, public function); importing registers the ops
from ._op_indexer import indexer, lightning_indexer
from ._op_indexer_grad import indexer_grad
from ._op_indexer_kl_grad import indexer_kl_grad, indexer_kl_loss
from ._op_indexer_paged import indexer_paged
from ._op_sparse_indexer_kl_loss import sparse_indexer_kl_loss
from ._op_quant_indexer import quant_lightning_indexer
from ._op_fp8_paged_mqa_topk import fp8_paged_mqa_topk
from ._op_indexer_k_quant_and_cache import indexer_k_quant_and_cache
from ._op_cp_gather_indexer_k_quant_cache import cp_gather_indexer_k_quant_cache
from ._act_quant import act_quant
from ._fp4_act_quant import fp4_act_quant
from ._op_indexer_k_mxfp4_quant_and_cache import indexer_k_mxfp4_quant_and_cache
from ._op_mqa_logits import fp8_mqa_logits, fp8_paged_mqa_logits, get_paged_mqa_logits_metadata
from ._op_sparse_mqa_logits import (fp8_fp4_paged_sparse_mqa_logits, fp8_fp4_sparse_mqa_logits,
                                    get_paged_sparse_mqa_logits_metadata, get_sparse_mqa_logits_metadata)

__version__ = _version()


def set_num_threads(n: int) -> None:
    """Threads lig uses: n > 0 fixes the count; 0 returns to the default, which is the
    LIG_NUM_THREADS environment variable when it is set, else ``torch.get_num_threads()``."""
    _threads.choose(_args.integer(n, "n", minimum=0))


def get_num_threads() -> int:
    """The number of threads lig's next call will use."""
    return _threads.current()


__all__ = [
    "__version__",
    "check_errors",
    "indexer",
    "indexer_paged",
    "indexer_grad",
    "indexer_kl_grad",
    "indexer_kl_loss",
    "lightning_indexer",
    "sparse_indexer_kl_loss",
    "quant_lightning_indexer",
    "fp8_paged_mqa_topk",
    "indexer_k_quant_and_cache",
    "cp_gather_indexer_k_quant_cache",
    "act_quant",
    "fp4_act_quant",
    "indexer_k_mxfp4_quant_and_cache",
    "fp8_mqa_logits",
    "fp8_paged_mqa_logits",
    "get_paged_mqa_logits_metadata",
    "get_sparse_mqa_logits_metadata",
    "get_paged_sparse_mqa_logits_metadata",
    "fp8_fp4_sparse_mqa_logits",
    "fp8_fp4_paged_sparse_mqa_logits",
    "set_num_threads",
    "get_num_threads",
    "kernel_sets",
    "set_kernel_set",
    "get_kernel_set",
    "LigError",
    "LigValueError",
    "LigRuntimeError",
    "INT64_MAX",
    "LIG_ERR_PARAM_NULLPTR",
    "LIG_ERR_PARAM_INVALID",
    "LIG_ERR_RUNTIME",
    "LIG_ERR_INNER",
]
