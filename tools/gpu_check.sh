#!/usr/bin/env bash
# Every GPU check of the CUDA backend in one run (docs/cuda.md), for a machine with an NVIDIA GPU
# and the CUDA toolkit (nvcc) but maybe nothing else (no network). About 6 minutes on one H200, and
# never more than GPU_CHECK_BUDGET_S (default 540 s): every step has its own time limit, clipped to
# what is left of the budget; a step with no time left is SKIPPED (no time left), not started.
#   tools/gpu_check.sh                  logs and tables under $OUT (default ./gpu-check-out)
#   BUILD=dir tools/gpu_check.sh        use (and update) that CMake build directory (default ./build-gpu)
#   GPU_CHECK_BUDGET_S=540              the whole run's time limit, in seconds
#   PYTHON=python3                      the interpreter for the Python steps (one with torch)
# Steps (a failing step is reported and the others still run; those needing the build are
# SKIPPED when it failed):
#   build        cmake -DLIG_CUDA=ON (Release; tests on, bench/examples/aclnn off), all cores, only
#                the targets below (the library, lig-tests, the CUDA tests and the benchmark)
#   ptxas        tools/ptxas_report.sh: no register spills
#   phase1-sizes lig-cuda-phase1-sizes: every CUDA operator's phase-1 workspace at B 1 S 128K and
#                B 1024 S 4096 within 4 GiB (+ the fp32 dK accumulator); no GPU needed
#   emulation    the host emulation of the kernels against the CPU backend
#   device       lig-cuda-device-tests: the emulation's case matrix on the GPU through the public API,
#                outputs poisoned before each call, 3 runs per case (the third in a CUDA graph),
#                deterministic runs compared byte for byte; it must run (a skip is a failure here)
#   memcheck     compute-sanitizer --tool memcheck on the device matrix's quick subset
#   racecheck    compute-sanitizer --tool racecheck on the same (shared-memory hazards of the
#                block kernels, src/backends/cuda/kernels/block.cuh)
#   synccheck    compute-sanitizer --tool synccheck on the same (__syncthreads reached by only part
#                of a block, the block kernels' barriers)
#   python       python/tests/test_cuda.py against $BUILD/liblig.so (LIG_LIBRARY), only when torch
#                with a CUDA device, pytest and hypothesis import; SKIPPED (with the reason) otherwise
#   bench        lig-cuda-bench (DeepSeek shape; bf16 cuBLAS GEMM peak of this GPU; both dK modes,
#                the determinism cost, rerun + memcmp of the deterministic backward, workspace bytes)
#   pytorch      the PyTorch eager peer (time, peak memory), only when torch with CUDA is importable
#   cpu-suite    the CPU suite of the same build (quick mode), the reference side of the matrix
# The summary table is printed last (and written to $OUT/summary.md). Exit 1 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=$(nproc 2>/dev/null || echo 8)
BUDGET=${GPU_CHECK_BUDGET_S:-540}
PYTHON=${PYTHON:-python3}
T0=$(date +%s)
rows=()
failed=0

# run NAME LIMIT_S CMD...: logs to $OUT/NAME.log, records PASS/FAIL/SKIPPED with the time taken. The
# limit is clipped to what is left of the budget (less 10 s for the summary); under 5 s left: SKIPPED.
run() {
  local name=$1 limit=$2
  shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) - 10 ))
  if [ "$left" -lt 5 ]; then
    rows+=("| $name | SKIPPED | 0s | no time left in the ${BUDGET}s budget |")
    echo "== $name: SKIPPED (no time left in the ${BUDGET}s budget)"
    return 75
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t=$(date +%s)
  echo "== $name (limit ${limit}s): $*"
  # through bash -c, so that a step may be one of the functions below (exported with export -f)
  timeout -k 5 "$limit" bash -c '"$@"' bash "$@" > "$OUT/$name.log" 2>&1 < /dev/null
  local rc=$? dt=$(( $(date +%s) - t ))
  local verdict=PASS
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict="FAIL (timeout ${limit}s)"; elif [ $rc -eq 77 ]; then verdict=SKIPPED; elif [ $rc -ne 0 ]; then verdict="FAIL (rc $rc)"; fi
  [ "${verdict#FAIL}" != "$verdict" ] && failed=$((failed + 1))
  local detail
  detail=$(grep -v '^\s*$' "$OUT/$name.log" | tail -1 | tr '|' '/' | cut -c1-110)
  rows+=("| $name | $verdict | ${dt}s | $detail |")
  echo "   $verdict in ${dt}s: $detail"
  return $rc
}
skip() { rows+=("| $1 | SKIPPED | 0s | $2 |"); echo "== $1: SKIPPED ($2)"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (see $OUT/nvidia-smi.txt)"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
NVCC=$(command -v nvcc || echo nvcc)
TARGETS="lig lig-tests lig-cuda-emulate lig-cuda-device-tests lig-cuda-phase1-sizes lig-cuda-bench"
export ROOT BUILD JOBS NVCC TARGETS PYTHON

build() {
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLIG_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" \
    -DLIG_BUILD_BENCH=OFF -DLIG_BUILD_EXAMPLES=OFF -DLIG_BUILD_ACLNN=OFF &&
    cmake --build "$BUILD" -j "$JOBS" --target $TARGETS
}
# Whether torch sees a CUDA device (and pytest + hypothesis, for the Python tests, import).
torch_cuda() {
  "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1
}
python_tests() {
  if ! "$PYTHON" -c 'import torch, pytest, hypothesis' >/dev/null 2>&1; then
    echo "SKIPPED python: torch, pytest or hypothesis does not import"; return 77
  fi
  if ! torch_cuda; then echo "SKIPPED python: torch sees no CUDA device"; return 77; fi
  LIG_LIBRARY="$BUILD/liblig.so" PYTHONPATH="$ROOT/python/src:$ROOT/python/tests" \
    "$PYTHON" -m pytest -q -p no:cacheprovider "$ROOT/python/tests/test_cuda.py"
}

export -f build torch_cuda python_tests
if run build 240 build; then
  run ptxas 60 tools/ptxas_report.sh
  run phase1-sizes 30 "$BUILD/tests/cuda/lig-cuda-phase1-sizes"
  run emulation 60 "$BUILD/tests/cuda/lig-cuda-emulate"
  # on a GPU machine the device matrix must run: exit 77 (no device) counts as a failure
  run device 90 "$BUILD/tests/cuda/lig-cuda-device-tests"
  if [ $? -eq 77 ]; then rows[-1]="${rows[-1]/SKIPPED/FAIL (no device seen)}"; failed=$((failed + 1)); fi
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$CS" ]; then
    run memcheck 90 "$CS" --tool memcheck --error-exitcode 1 --leak-check full "$BUILD/tests/cuda/lig-cuda-device-tests" --quick
    run racecheck 90 "$CS" --tool racecheck --error-exitcode 1 "$BUILD/tests/cuda/lig-cuda-device-tests" --quick
    run synccheck 60 "$CS" --tool synccheck --error-exitcode 1 "$BUILD/tests/cuda/lig-cuda-device-tests" --quick
  else
    for tool in memcheck racecheck synccheck; do skip $tool "compute-sanitizer not installed"; done
  fi
  run python 60 python_tests
  LIG_BENCH_BUDGET_S=${LIG_BENCH_BUDGET_S:-100} run bench 150 "$BUILD/tests/cuda/lig-cuda-bench" \
    4096 8192 16384 32768 65536 131072 16x4096
else
  for step in ptxas phase1-sizes emulation device memcheck racecheck synccheck python bench; do
    skip $step "the build failed (see $OUT/build.log)"
  done
fi

# The PyTorch eager peer: forward scores + backward through autograd at the DeepSeek shape.
peer() {
  if ! torch_cuda; then echo "SKIPPED pytorch: torch does not import or sees no CUDA device"; return 77; fi
  "$PYTHON" - <<'PY'
import time
import torch
N1, D, K = 64, 128, 2048
print("| PyTorch eager | S | ms (fwd+bwd) | peak GiB |")
for S in (4096, 8192):
    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(S, N1, D, device="cuda", dtype=torch.bfloat16, generator=g).requires_grad_()
    k = torch.randn(S, D, device="cuda", dtype=torch.bfloat16, generator=g).requires_grad_()
    w = (0.125 * torch.randn(S, N1, device="cuda", dtype=torch.bfloat16, generator=g)).requires_grad_()
    t = torch.arange(S, device="cuda")[:, None]; j = torch.arange(K, device="cuda")[None, :]
    vis = t + 1
    idx = torch.where(vis <= K, torch.where(j < vis, j, -1), (j * vis) // K)
    dy = torch.randn(S, K, device="cuda", dtype=torch.bfloat16, generator=g)
    def step():
        ks = k[idx.clamp(min=0)]                                   # [S, K, D]
        s = torch.einsum("thd,tjd->thj", q, ks).relu()            # [S, N1, K]
        I = (w[:, :, None] * s).sum(1).masked_fill(idx < 0, 0.0)   # [S, K]
        (I.float() * dy.float()).sum().backward()
    try:
        step(); torch.cuda.synchronize()
        t0 = time.time(); step(); torch.cuda.synchronize(); ms = (time.time() - t0) * 1e3
        print("| pytorch | %d | %.1f | %.2f |" % (S, ms, torch.cuda.max_memory_allocated() / 2**30))
    except torch.cuda.OutOfMemoryError:
        print("| pytorch | %d | out of memory | - |" % S)
    del q, k, w, dy
PY
}
export -f peer
run pytorch 60 peer
if [ -x "$BUILD/tests/lig-tests" ]; then
  LIG_TEST_QUICK=1 LIG_FUZZ_SECONDS=5 run cpu-suite 90 "$BUILD/tests/lig-tests"
else
  skip cpu-suite "no $BUILD/tests/lig-tests (the build failed)"
fi

TOTAL=$(( $(date +%s) - T0 ))
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
{
  echo
  echo "## tools/gpu_check.sh on ${GPU:-no GPU (nvidia-smi found none)} ($(date -u +%Y-%m-%dT%H:%MZ), ${TOTAL}s of ${BUDGET}s)"
  echo
  echo "| check | result | time | last line of its log |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if [ -f "$OUT/bench.log" ] && grep -q '^|' "$OUT/bench.log"; then
    echo
    grep '^|' "$OUT/bench.log"
  fi
  if [ -f "$OUT/pytorch.log" ] && grep -q '^| pytorch' "$OUT/pytorch.log"; then
    echo
    grep '^|' "$OUT/pytorch.log"
  fi
} > "$OUT/summary.md"
cat "$OUT/summary.md"
[ "$failed" -gt 0 ] && { echo "gpu_check: $failed step(s) failed"; exit 1; }
exit 0
