#!/usr/bin/env bash
# Compiles the CUDA backend's kernels with `ptxas -v` for every target of the build (sm_80,
# sm_90a) and prints one line per kernel and target: registers, stack frame, spill stores and
# loads. Fails (exit 1) when any kernel spills registers, or when nvcc fails.
#   tools/ptxas_report.sh            (NVCC=/path/to/nvcc to choose the compiler)
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
CUDA_INC=$(dirname "$(command -v "$NVCC")")/../include
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$NVCC" -std=c++17 -c src/backends/cuda/cuda_backend.cu -o "$tmp/cuda_backend.o" -Iinclude -Isrc -I"$CUDA_INC" \
  -DLIG_HAVE_CUDA=1 -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90a,code=sm_90a \
  -Werror=all-warnings -Xptxas -v 2> "$tmp/ptxas.log" || { cat "$tmp/ptxas.log"; exit 1; }
demangle() { if command -v c++filt >/dev/null 2>&1; then c++filt; else cat; fi; }
# ptxas prints, per entry: "Compiling entry function 'NAME' for 'sm_XX'", then
# "N bytes stack frame, N bytes spill stores, N bytes spill loads", then "Used N registers, ...".
awk '
  /Compiling entry function/ {
    fn = $0; sub(/.*function ./, "", fn); sub(/. for .*/, "", fn)
    sm = $0; sub(/.* for ./, "", sm); sub(/.$/, "", sm); next
  }
  /bytes stack frame/ {
    stack = $5; split($0, a, ","); st = a[2]; ld = a[3]; gsub(/[^0-9]/, "", st); gsub(/[^0-9]/, "", ld); next
  }
  /Used [0-9]+ registers/ {
    match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
    print fn "\t" sm "\t" regs "\t" stack "\t" st "\t" ld
  }
' "$tmp/ptxas.log" > "$tmp/table.tsv"
n=$(wc -l < "$tmp/table.tsv")
if [ "$n" -eq 0 ]; then
  echo "ptxas_report: no kernel found in the ptxas output" >&2
  cat "$tmp/ptxas.log" >&2
  exit 1
fi
bad=0
printf '%-40s %-7s %5s %6s %7s %7s\n' kernel target regs stack spill_st spill_ld
while IFS=$'\t' read -r fn sm regs stack st ld; do
  # lig's bodies by name (ligcu::k_...); CUB's kernels (the deterministic dK's radix sort) by theirs
  name=$(printf '%s' "$fn" | demangle | { grep -o 'ligcu::k_[a-z0-9_]*\|cub::[A-Za-z0-9_:]*Kernel' || true; } | head -1 | sed 's/ligcu:://')
  [ -n "$name" ] || name=$fn
  printf '%-40s %-7s %5s %6s %7s %7s\n' "$name" "$sm" "$regs" "$stack" "$st" "$ld"
  if [ "${st:-0}" != 0 ] || [ "${ld:-0}" != 0 ]; then bad=1; fi
done < "$tmp/table.tsv"
if [ "$bad" -ne 0 ]; then
  echo "ptxas_report: FAILED: a kernel spills registers (spill stores/loads above)" >&2
  exit 1
fi
echo "ptxas_report: $n kernel builds, no register spills"
