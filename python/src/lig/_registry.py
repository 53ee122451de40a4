"""How lig's operators are registered with torch.library, and what every operator module shares.

Each operator lives in a module of its own (``_op_indexer``, ``_op_indexer_paged``,
``_op_indexer_grad``, ``_op_indexer_kl_grad``, ``_op_sparse_indexer_kl_loss``): the op (one call
into lig's two-phase C API), its fake rule for torch.compile, its autograd rule and the public
function that normalises arguments and calls it, so that every public function runs under ``torch.compile(fullgraph=True)``.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch
from torch import Tensor

from . import _lib, _threads

LengthsLike = Union[None, Tensor, Sequence[int]]

# The ops are registered with torch.library's lower-level API (define / impl / register_fake /
# register_autograd), not with torch.library.custom_op: custom_op wraps each kernel in
# torch._disable_dynamo, which imports torch._dynamo (and with it inductor) at the first call of
# any op, about 1 s however small the problem (bench/first_call.py). The kernels here are only
# ever reached through the dispatcher, where dynamo never traces into them, so the wrapper buys
# nothing; torch.compile uses the fake rules, as with custom_op.
_LIB = torch.library.Library("lig", "DEF")


class Op:
    """One operator lig::<name>: its schema inferred from the kernel's annotations (as custom_op
    does), the kernel for every device, and the fake / autograd rules registered through it."""

    def __init__(self, name: str, kernel, mutates_args: Sequence[str] = ()) -> None:
        self.qualname = f"lig::{name}"
        _LIB.define(name + torch.library.infer_schema(kernel, mutates_args=tuple(mutates_args)))
        _LIB.impl(name, kernel, "CompositeExplicitAutograd")

    def register_fake(self, fake):
        torch.library.register_fake(self.qualname, fake, lib=_LIB)
        return fake

    def register_autograd(self, backward, setup_context=None) -> None:
        torch.library.register_autograd(self.qualname, backward, setup_context=setup_context, lib=_LIB)

    def refuse_autograd(self) -> None:
        """An op without a derivative: a backward through its outputs raises (custom_op's rule),
        rather than torch's fallback for ops without an autograd kernel, which only warns."""

        def backward(ctx, *grads):
            raise RuntimeError(f"{self.qualname} is not differentiable (lig has no derivative of it), but a "
                               "gradient reached its outputs")

        self.register_autograd(backward)


def op(name: str, mutates_args: Sequence[str] = ()):
    """Registers the decorated kernel as lig::<name>; returns its Op. `mutates_args` names the
    arguments the kernel writes in place (a cache writer's cache), as torch.library requires."""
    return lambda kernel: Op(name, kernel, mutates_args)


def run(get_workspace_size, run_fn, args, what: str, device=None) -> None:
    """lig's two phases with the thread count in effect (see _threads)."""
    _threads.apply()
    _lib.run(get_workspace_size, run_fn, args, what, device)


def tensor(x, name: str) -> Tensor:
    """torch tensors as they are; numpy arrays viewed as tensors (negative strides copied)."""
    if isinstance(x, Tensor):
        return x
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None and isinstance(x, np.ndarray):
        if any(s < 0 for s in x.strides):
            x = np.ascontiguousarray(x)  # lig takes non-negative strides only
        return torch.from_numpy(x)
    raise TypeError(f"lig: {name}: expected a torch.Tensor, got {type(x).__name__}")


def tensors(*named) -> tuple:
    """:func:`tensor` of each (x, name) pair, in order."""
    return tuple([tensor(x, name) for x, name in named])


def optional_tensor(x, name: str) -> Optional[Tensor]:
    return None if x is None else tensor(x, name)
