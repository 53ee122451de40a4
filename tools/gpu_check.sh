#!/usr/bin/env bash
# Every GPU check of the CUDA backend in one run (docs/cuda.md), for a machine with an NVIDIA GPU
# and the CUDA toolkit (nvcc) but maybe nothing else (no network). Under 8 minutes on one H200.
#   tools/gpu_check.sh                  logs and tables under $OUT (default ./gpu-check-out)
# Steps (each with a time limit; a failing step is reported and the others still run):
#   build        cmake -DLIG_CUDA=ON (Release; tests on, bench/examples/aclnn off), all cores
#   ptxas        tools/ptxas_report.sh: no register spills
#   emulation    the host emulation of the kernels against the CPU backend
#   device       lig-cuda-device-tests: the emulation's case matrix on the GPU through the public API,
#                outputs poisoned before each call, 3 runs per case (the third in a CUDA graph),
#                deterministic runs compared byte for byte; it must run (a skip is a failure here)
#   cpu-suite    the CPU suite of the same build (quick mode), the reference side of the matrix
#   memcheck     compute-sanitizer --tool memcheck on the device matrix's quick subset
#   racecheck    compute-sanitizer --tool racecheck on the same
#   bench        lig-cuda-bench 4096 8192 16384 (DeepSeek shape; bf16 GEMM peak; both dK modes;
#                rerun + memcmp of the deterministic backward)
#   pytorch      the PyTorch eager peer (time, peak memory), only when torch with CUDA is importable
# The summary table is printed last (and written to $OUT/summary.md).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=$(nproc 2>/dev/null || echo 8)
T0=$(date +%s)
rows=()

# run NAME LIMIT_S CMD...: logs to $OUT/NAME.log, records PASS/FAIL/SKIP with the time taken.
run() {
  local name=$1 limit=$2
  shift 2
  local t=$(date +%s)
  echo "== $name (limit ${limit}s): $*"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t ))
  local verdict=PASS
  if [ $rc -eq 124 ]; then verdict="FAIL (timeout)"; elif [ $rc -eq 77 ]; then verdict=SKIPPED; elif [ $rc -ne 0 ]; then verdict="FAIL (rc $rc)"; fi
  local detail
  detail=$(grep -v '^\s*$' "$OUT/$name.log" | tail -1 | tr '|' '/' | cut -c1-110)
  rows+=("| $name | $verdict | ${dt}s | $detail |")
  echo "   $verdict in ${dt}s: $detail"
  return $rc
}

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (see $OUT/nvidia-smi.txt)"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

build() {
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLIG_CUDA=ON -DLIG_BUILD_BENCH=OFF \
    -DLIG_BUILD_EXAMPLES=OFF -DLIG_BUILD_ACLNN=OFF && cmake --build "$BUILD" -j "$JOBS"
}
if run build 300 build; then
  run ptxas 120 tools/ptxas_report.sh
  run emulation 60 "$BUILD/tests/cuda/lig-cuda-emulate"
  # on a GPU machine the device matrix must run: exit 77 (no device) counts as a failure
  run device 120 "$BUILD/tests/cuda/lig-cuda-device-tests"
  [ $? -eq 77 ] && rows[-1]="${rows[-1]/SKIPPED/FAIL (no device seen)}"
  LIG_TEST_QUICK=1 LIG_FUZZ_SECONDS=5 run cpu-suite 150 "$BUILD/tests/lig-tests"
  if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    run memcheck 150 "$CS" --tool memcheck --error-exitcode 1 --leak-check full "$BUILD/tests/cuda/lig-cuda-device-tests" --quick
    run racecheck 150 "$CS" --tool racecheck --error-exitcode 1 "$BUILD/tests/cuda/lig-cuda-device-tests" --quick
  else
    rows+=("| memcheck | SKIPPED | 0s | compute-sanitizer not installed |")
    rows+=("| racecheck | SKIPPED | 0s | compute-sanitizer not installed |")
  fi
  LIG_BENCH_BUDGET_S=${LIG_BENCH_BUDGET_S:-150} run bench 240 "$BUILD/tests/cuda/lig-cuda-bench" 4096 8192 16384
fi

# The PyTorch eager peer: forward scores + backward through autograd at the DeepSeek shape.
peer() {
  python3 - <<'PY'
import sys, time
try:
    import torch
except Exception as e:
    print("SKIPPED pytorch: torch not importable (%s)" % e); sys.exit(77)
if not torch.cuda.is_available():
    print("SKIPPED pytorch: torch has no CUDA device"); sys.exit(77)
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
run pytorch 150 peer

TOTAL=$(( $(date +%s) - T0 ))
{
  echo
  echo "## tools/gpu_check.sh on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) ($(date -u +%Y-%m-%dT%H:%MZ), ${TOTAL}s)"
  echo
  echo "| check | result | time | last line of its log |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if [ -f "$OUT/bench.log" ]; then
    echo
    grep '^|' "$OUT/bench.log"
  fi
  if [ -f "$OUT/pytorch.log" ] && grep -q '^| pytorch' "$OUT/pytorch.log"; then
    echo
    grep '^|' "$OUT/pytorch.log"
  fi
} > "$OUT/summary.md"
cat "$OUT/summary.md"
grep -q "FAIL" "$OUT/summary.md" && exit 1
exit 0
