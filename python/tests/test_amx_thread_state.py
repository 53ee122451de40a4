"""lig's tile work leaves the caller's AMX state alone (issue 17): PyTorch's bf16 matmuls (oneDNN
uses AMX tiles where the CPU has them) interleaved on one thread with lig calls on the amx-bf16
kernel set give the same bytes as without lig in between. lig runs tile work on its own threads
only, never on the caller's, so a tile configuration oneDNN keeps on this thread survives.

Skipped by name on a CPU without AMX-BF16 or a lig built without the amx-bf16 set (-DLIG_AMX=ON)."""
import pytest
import torch

import lig


def _cpu_has_amx_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " amx_bf16" in line for line in f)
    except OSError:
        return False


needs_amx = pytest.mark.skipif(
    not _cpu_has_amx_bf16() or "amx-bf16" not in lig.kernel_sets(),
    reason="test_amx_thread_state: SKIPPED: needs a CPU with AMX-BF16 and lig built with -DLIG_AMX=ON "
    f"(this CPU has AMX-BF16: {_cpu_has_amx_bf16()}; lig's sets: {','.join(lig.kernel_sets())})")


@needs_amx
def test_torch_amx_matmuls_interleaved_with_lig_calls():
    g = torch.Generator().manual_seed(17)
    a = torch.randn(512, 512, generator=g).to(torch.bfloat16)
    b = torch.randn(512, 512, generator=g).to(torch.bfloat16)
    q = torch.randn(1, 256, 64, 128, generator=g).to(torch.bfloat16)
    k = torch.randn(1, 256, 1, 128, generator=g).to(torch.bfloat16)
    w = torch.randn(1, 256, 64, generator=g).to(torch.bfloat16)
    expected = torch.matmul(a, b)  # before any lig call on this thread
    lig.set_kernel_set("amx-bf16")
    try:
        idx0, val0 = lig.indexer(q, k, w, 64)
        dy = torch.randn(val0.shape, generator=g).to(torch.bfloat16)
        grads0 = lig.indexer_grad(q, k, dy, idx0, w)
        for _ in range(4):
            assert torch.equal(torch.matmul(a, b), expected)
            idx, val = lig.indexer(q, k, w, 64)
            assert torch.equal(torch.matmul(a, b), expected)
            grads = lig.indexer_grad(q, k, dy, idx, w)
            assert torch.equal(torch.matmul(a, b), expected)
            assert torch.equal(idx, idx0) and torch.equal(val, val0)
            assert all(torch.equal(x, y) for x, y in zip(grads, grads0))
    finally:
        lig.set_kernel_set(None)
