# Thin wrapper over CMake: the README's commands.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
# The sanitizer build prefers clang (its UBSan flags more), when its runtime is installed.
SAN_CC ?= $(shell echo 'int main(void){return 0;}' | clang -fsanitize=address,undefined -x c - -o /dev/null 2>/dev/null && echo clang || echo cc)

.PHONY: all build test test-release test-asan demo demo-grad install clean

all: build

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# The whole suite on the optimised build (SIMD and portable kernels), then again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-release test-asan

test-release: build
	cd $(BUILD) && ctest --output-on-failure

test-asan:
	CC=$(SAN_CC) $(CMAKE) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIG_SANITIZE=ON
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && LIG_TEST_QUICK=1 ctest --output-on-failure

# The main job: train an indexer from scratch (forward -> KL step -> backward -> Adam).
demo: build
	./$(BUILD)/examples/lig-train-indexer

# DeepSeek-shaped backward, timed and checked against float64.
demo-grad: build
	./$(BUILD)/examples/lig-deepseek-grad

install: build
	$(CMAKE) --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
