# Thin wrapper over CMake: the README's commands.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
CUDA_BUILD ?= build-cuda
AARCH64_BUILD ?= build-aarch64
# nvcc from PATH, else the toolkit's usual place (CI shells may not have it on PATH)
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
PYTHON ?= python3
VENV ?= .venv
PIP_FLAGS ?= --disable-pip-version-check --no-input -q
# The sanitizer build prefers clang (its UBSan flags more), when its runtime is installed.
SAN_CC ?= $(shell echo 'int main(void){return 0;}' | clang -fsanitize=address,undefined -x c - -o /dev/null 2>/dev/null && echo clang || echo cc)
# The libFuzzer targets need clang with libFuzzer's runtime (Debian: clang, libclang-rt-14-dev):
# probed by linking a tiny fuzzer; empty when it is missing.
FUZZ_BUILD ?= build-fuzz
FUZZ_CC ?= $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' | clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null && echo clang)
FUZZ_TARGETS ?= fuzz-lig-grad fuzz-lig-fwd fuzz-lig-lse fuzz-lig-l1norm fuzz-aclnn
FUZZ_SECONDS ?= 60
# The kernel sets a run must test (tests/harness/kernel_set_gate.h, docs/architecture.md "Tests"): comma-separated
# names or "all"; lig-tests fails, rather than skips, when this build or CPU lacks one. .ci/run sets
# it from the CI machine's CPU; passed to every native run of the suite below. The aarch64 run has
# its own (AARCH64_REQUIRE_SETS: qemu emulates every feature, so every set that build compiled).
export LIG_REQUIRE_SETS
AARCH64_REQUIRE_SETS ?= all

.PHONY: all build test test-release test-asan test-tsan test-python test-cuda test-cuda-run test-aarch64 test-aarch64-run test-fuzz test-fuzz-run fuzz venv bench bench-full bench-kl bench-kl-quick bench-quant bench-quant-quick demo demo-decode demo-grad install clean

all: build

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# The whole suite on the optimised build (SIMD and portable kernels), then again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then under ThreadSanitizer, then cross compiled for
# aarch64 and run under qemu (every aarch64 kernel set, and detection), then the Python package,
# then the CUDA backend (compiled, checked for spills, its kernels emulated on the host), then the
# libFuzzer targets for FUZZ_SECONDS each.
test: test-release test-asan test-tsan test-aarch64 test-python test-cuda test-fuzz

test-release: build
	cd $(BUILD) && ctest --output-on-failure

test-asan:
	CC=$(SAN_CC) $(CMAKE) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIG_SANITIZE=ON
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && LIG_TEST_QUICK=1 ctest --output-on-failure

# ThreadSanitizer over the whole suite, 3 threads on however many cores: the commit ring,
# the per-row locks and the pool.
test-tsan:
	$(CMAKE) -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIG_BUILD_BENCH=OFF -DLIG_BUILD_EXAMPLES=OFF \
	  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
	  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread
	$(CMAKE) --build $(TSAN_BUILD) -j $(JOBS)
	LIG_NUM_THREADS=3 LIG_MIN_FLOPS_PER_THREAD=0 LIG_TEST_QUICK=1 LIG_FUZZ_SECONDS=5 TSAN_OPTIONS=halt_on_error=1 ./$(TSAN_BUILD)/tests/lig-tests

# The Python package (python/): a virtual environment with torch & co. from PyPI (created when
# missing), the package built with CMake and installed from python/, then its pytest suite
# (which also builds the sdist and wheel and installs them into fresh environments). The build
# tools live in the venv, so the package builds without isolation (no download per build).
test-python: venv
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) torch numpy pytest hypothesis tqdm build 'scikit-build-core>=1.0'
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation ./python
	LIG_MIN_FLOPS_PER_THREAD=0 $(VENV)/bin/python -m pytest python/tests -q

# The CUDA backend (-DLIG_CUDA=ON, docs/cuda.md) on a machine without a GPU: build it (nvcc warnings
# are errors), check ptxas for register spills, run the host emulation of its kernels against the
# CPU backend, and the GPU tests, which report themselves SKIPPED (exit 77) without a device; then
# the device-tensor API tests of the CUDA build. Without nvcc: a clear skip, success.
test-cuda:
	@if [ -z "$(NVCC)" ]; then echo "test-cuda: SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin), the CUDA backend was not built"; \
	else $(MAKE) --no-print-directory test-cuda-run; fi

test-cuda-run:
	$(CMAKE) -S . -B $(CUDA_BUILD) -DCMAKE_BUILD_TYPE=Release -DLIG_CUDA=ON -DCMAKE_CUDA_COMPILER=$(NVCC) \
	  -DLIG_BUILD_BENCH=OFF -DLIG_BUILD_EXAMPLES=OFF -DLIG_BUILD_ACLNN=OFF
	$(CMAKE) --build $(CUDA_BUILD) -j $(JOBS)
	NVCC=$(NVCC) tools/ptxas_report.sh
	cd $(CUDA_BUILD) && ctest --output-on-failure -L cuda
	LIG_ISA=scalar $(CUDA_BUILD)/tests/lig-tests devices

# 64-bit ARM (cmake/toolchains/aarch64-linux-gnu.cmake): everything cross compiled with Debian's
# aarch64-linux-gnu-gcc/g++, then ctest runs under qemu-user the suite once per aarch64 kernel set
# (LIG_ISA=<set>, QEMU_CPU=max: every optional feature), once unforced on a CPU model without the
# optional features (QEMU_CPU=cortex-a57, where detection must fall back to the baseline set), the
# README example and the aclnn tests. The 128K-row tests shrink (LIG_TEST_QUICK) as emulation is slow. Without the cross compiler or qemu: a clear
# skip, success (.ci/run installs both).
test-aarch64:
	@if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then \
	  echo "test-aarch64: SKIPPED: aarch64-linux-gnu-gcc not found (Debian: gcc-aarch64-linux-gnu libc6-dev-arm64-cross), the aarch64 build was not made"; \
	elif ! command -v qemu-aarch64-static >/dev/null 2>&1 && ! command -v qemu-aarch64 >/dev/null 2>&1; then \
	  echo "test-aarch64: SKIPPED: qemu-aarch64-static not found (Debian: qemu-user-static), the aarch64 build cannot run"; \
	else $(MAKE) --no-print-directory test-aarch64-run; fi

test-aarch64-run:
	$(CMAKE) -S . -B $(AARCH64_BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchains/aarch64-linux-gnu.cmake
	$(CMAKE) --build $(AARCH64_BUILD) -j $(JOBS)
	cd $(AARCH64_BUILD) && LIG_TEST_QUICK=1 LIG_REQUIRE_SETS=$(AARCH64_REQUIRE_SETS) ctest --output-on-failure -j $(JOBS)

# The libFuzzer targets (tests/fuzz/, docs/fuzzing.md) in their own build (clang, coverage and
# ASan + UBSan through the library), each run FUZZ_SECONDS on a copy of its seed corpus: any crash,
# sanitizer report, failed check, timeout or leak fails. Prints executions per second and the
# coverage reached. Without clang's fuzzer runtime (.ci/run installs it): a clear skip, success.
test-fuzz:
	@if [ -z "$(FUZZ_CC)" ]; then echo "test-fuzz: SKIPPED: clang cannot link -fsanitize=fuzzer (Debian: apt-get install clang libclang-rt-14-dev)"; \
	else $(MAKE) --no-print-directory test-fuzz-run; fi

test-fuzz-run:
	CC=$(FUZZ_CC) $(CMAKE) -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIG_FUZZ=ON \
	  -DLIG_BUILD_TESTS=OFF -DLIG_BUILD_EXAMPLES=OFF -DLIG_BUILD_BENCH=OFF
	$(CMAKE) --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	tests/fuzz/run_fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The same, ten minutes per target.
fuzz:
	$(MAKE) --no-print-directory test-fuzz FUZZ_SECONDS=600

venv:
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)

# lig-bench (every kernel set: forward, backward, training step) and the PyTorch peer side by
# side (BENCHMARKS.md, bench/README.md): tables with the ratios, and
# bench/results/{bench.json,gflops_vs_seq.png}. bench-full sweeps S from 1K to 32K without the
# portable scalar set (minutes per run at those sizes).
BENCH_SEQ ?= 1024,2048
BENCH_THREADS ?= 1,$(JOBS)
BENCH_OPS ?= grad,fwd,step
BENCH_SETS ?= all
bench: build venv
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) torch numpy matplotlib
	$(VENV)/bin/python bench/run_bench.py --seq $(BENCH_SEQ) --threads $(BENCH_THREADS) \
	  --ops $(BENCH_OPS) --sets $(BENCH_SETS) --lig-bench $(BUILD)/bench/lig-bench

bench-full:
	$(MAKE) bench BENCH_SEQ=1024,2048,4096,8192,16384,32768 BENCH_SETS=all,-scalar

# The fused KL loss (lig_sparse_indexer_grad_kl_loss) and its PyTorch peer: bench-kl at
# DeepSeek-V3.2's training shape (S = 4096, N1 = 128, K = 2048: about 15-20 minutes on 2 quiet
# cores, mostly the peer), bench-kl-quick at a small shape (about a minute). Tables on stdout,
# bench/results/kl_loss.json (BENCHMARKS.md, bench/README.md).
bench-kl: build venv
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) torch numpy
	$(VENV)/bin/python bench/run_kl_bench.py --threads $(BENCH_THREADS) --peer-warmup-rows 256 \
	  --lig-kl-bench $(BUILD)/bench/lig-kl-bench

bench-kl-quick: build venv
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) torch numpy
	$(VENV)/bin/python bench/run_kl_bench.py --quick --reps 3 --peer-reps 2 --threads $(BENCH_THREADS) \
	  --lig-kl-bench $(BUILD)/bench/lig-kl-bench

# The quantized inference forward: every table of its benchmark in one run
# (bench/run_quant_bench.py): prefill S = 4096 (every set) and 32768 (the fastest set, 1 run), decode
# B = 1, 16 x next_n = 1, 2 x context 8K / 64K / 128K (every set but scalar), 1 and 2 threads,
# against the unit peaks, the streaming read of the cache, lig's bf16 forward and the PyTorch
# formulation, with the recall of the fp8 / int8 selections. bench-quant: about 12 minutes on 2 quiet
# cores, wall clock; bench-quant-quick: small shapes, a few minutes. Tables on stdout,
# bench/results/quant{,_quick}.json and .md (BENCHMARKS.md, bench/README.md). The inputs dumped for
# the peer go to QUANT_BENCH_DATA (about 2.5 GB at the full shapes).
QUANT_BENCH_DATA ?= /tmp/lig-quant-bench
QUANT_BENCH_CLOCK ?= wall
bench-quant: venv
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target lig-quant-bench lig-decode-bench
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) torch numpy
	$(VENV)/bin/python bench/run_quant_bench.py --threads $(BENCH_THREADS) --clock $(QUANT_BENCH_CLOCK) \
	  --data $(QUANT_BENCH_DATA) --bench-dir $(BUILD)/bench --md bench/results/quant.md

bench-quant-quick: venv
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target lig-quant-bench lig-decode-bench
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) torch numpy
	$(VENV)/bin/python bench/run_quant_bench.py --quick --threads $(BENCH_THREADS) --clock $(QUANT_BENCH_CLOCK) \
	  --data $(QUANT_BENCH_DATA)-quick --bench-dir $(BUILD)/bench --md bench/results/quant_quick.md

# The main job: train an indexer from scratch on a small main attention (forward -> the main
# attention's statistics over the selection -> fused KL loss -> Adam), then the decode demo
# (demo-decode, a few seconds). Only the library and the demos are built (same build tree as
# `make build`, other targets left alone).
demo:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target lig-train-indexer lig-decode-indexer
	$(BUILD)/examples/lig-train-indexer
	$(BUILD)/examples/lig-decode-indexer

# Inference: an 8K-token prompt, then 64 decode steps, the keys in DeepGEMM's fused FP8 paged cache,
# lig_quant_indexer's top-2048 each step against lig's bf16 forward (examples/decode_indexer.c).
demo-decode:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target lig-decode-indexer
	$(BUILD)/examples/lig-decode-indexer

# DeepSeek-shaped backward, timed and checked against float64.
demo-grad:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target lig-deepseek-grad
	$(BUILD)/examples/lig-deepseek-grad

install: build
	$(CMAKE) --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(CUDA_BUILD) $(AARCH64_BUILD) $(FUZZ_BUILD)
