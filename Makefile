# The README's commands. `make demo` and `make test` install what they need first (scripts/install_deps.sh).
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_CXX   ?= clang++-14
# `make fuzz`: seconds per target (corpora kept in $(BUILD_FUZZ)/corpus); `make test`: a short run of each.
FUZZ_SECONDS       ?= 600
FUZZ_SMOKE_SECONDS ?= 10
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
# Line tables only (-g1): backtraces and sanitizer reports keep file:line, and full debug info, about a
# third of the optimized tree's compile time, is left to those who debug (CMAKE_CXX_FLAGS_* of their own).
DEBUG_INFO := -g1
DEMO       := tests/fixtures/gpt2_compiled

.PHONY: all deps build build-asan build-fuzz demo test test-cpp test-asan test-fuzz fuzz-smoke test-python fuzz fuzz-carry bench clean

all: build

deps:
	@scripts/install_deps.sh

# The operator observer is built against the torch that loads it: the .venv's where there is one (looked
# up when the recipe runs, after `deps` may have created it).
TORCH_PYTHON = $$(if [ -x .venv/bin/python ]; then echo $(CURDIR)/.venv/bin/python; else echo python3; fi)

build:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPROF_WERROR=ON \
	      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG" -DOPPROF_TORCH_PYTHON=$(TORCH_PYTHON)
	cmake --build $(BUILD) -j $(JOBS)

build-asan:
	cmake -S . -B $(BUILD_ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DOPPROF_SANITIZE=ON -DOPPROF_WERROR=ON \
	      -DCMAKE_CXX_FLAGS_DEBUG="$(DEBUG_INFO)" -DOPPROF_BUILD_BENCH=OFF
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# The readers' libFuzzer targets (tests/fuzz, docs/fuzzing.md): clang, ASan + UBSan, the readers' sources only.
build-fuzz:
	cmake -S . -B $(BUILD_FUZZ) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPROF_FUZZ=ON -DOPPROF_WERROR=ON \
	      -DCMAKE_CXX_COMPILER=$(FUZZ_CXX)
	cmake --build $(BUILD_FUZZ) -j $(JOBS)

# The main job, on a machine without a GPU: attribute a real capture from an H200 (compiled GPT-2 small:
# torch.profiler trace, ncu counters of the same window, Inductor's debug directory) and print the report.
demo: deps build
	$(BUILD)/opprof attribute --trace $(DEMO)/trace.json.gz --ncu $(DEMO)/ncu.csv.gz \
	    --inductor $(DEMO)/inductor -o $(BUILD)/gpt2_compiled.db
	$(BUILD)/opprof report $(BUILD)/gpt2_compiled.db

# The fuzz targets' short runs (one core) go beside the Python tests (mostly one core), after the builds.
test: deps
	$(MAKE) test-cpp
	$(MAKE) test-asan
	$(MAKE) build-fuzz
	$(MAKE) -j 2 --output-sync=target fuzz-smoke test-python

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# Every fuzz target for FUZZ_SMOKE_SECONDS, after its committed regression inputs; fails on any finding.
test-fuzz: build build-fuzz
	$(MAKE) fuzz-smoke

# The same on trees already built (no build step runs beside the Python tests).
fuzz-smoke:
	tests/fuzz/run.sh $(BUILD_FUZZ) $(FUZZ_SMOKE_SECONDS) $(BUILD)/opprof

# Long runs, one target after another (FUZZ_TARGETS to pick some), growing the kept corpora.
fuzz: build build-fuzz
	nice -n 19 tests/fuzz/run.sh $(BUILD_FUZZ) $(FUZZ_SECONDS) $(BUILD)/opprof $(FUZZ_TARGETS)

# The fuzz targets and their corpus packed for another machine (scripts/gpu/fuzz.sh, carried as
# build-fuzz/carry): the binaries without debug info, the corpora and seeds.
fuzz-carry: build-fuzz
	rm -rf $(BUILD_FUZZ)/carry && mkdir -p $(BUILD_FUZZ)/carry/bin
	for f in $(BUILD_FUZZ)/tests/fuzz/fuzz_*; do [ -x "$$f" ] && strip --strip-debug -o $(BUILD_FUZZ)/carry/bin/$$(basename $$f) $$f; done
	tar -czf $(BUILD_FUZZ)/carry/bin.tgz -C $(BUILD_FUZZ)/carry bin && rm -rf $(BUILD_FUZZ)/carry/bin
	tests/fuzz/seed_corpus.sh $(BUILD_FUZZ)/seeds $(BUILD)/opprof
	# A fuzzer running meanwhile adds files: tar says so with status 1, and the archive is still whole.
	tar -czf $(BUILD_FUZZ)/carry/corpus.tgz -C $(BUILD_FUZZ) corpus seeds || [ $$? -eq 1 ]

# The HTML report's Chromium test runs, not skips (scripts/install_deps.sh installs chromium); set
# OPPROF_REQUIRE_CHROMIUM=0 to let it skip on a machine without a browser.
test-python:
	OPPROF_REQUIRE_CHROMIUM=$${OPPROF_REQUIRE_CHROMIUM:-1} .venv/bin/python -m pytest tests/python -q

bench: build
	$(BUILD)/bench/opprof_bench

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
