# The README's commands. `make demo` and `make test` install what they need first (scripts/install_deps.sh).
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
DEMO       := tests/fixtures/gpt2_compiled

.PHONY: all deps build build-asan demo test test-cpp test-asan test-python bench clean

all: build

deps:
	@scripts/install_deps.sh

# The operator observer is built against the torch that loads it: the .venv's where there is one (looked
# up when the recipe runs, after `deps` may have created it).
TORCH_PYTHON = $$(if [ -x .venv/bin/python ]; then echo $(CURDIR)/.venv/bin/python; else echo python3; fi)

build:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPROF_WERROR=ON \
	      -DOPPROF_TORCH_PYTHON=$(TORCH_PYTHON)
	cmake --build $(BUILD) -j $(JOBS)

build-asan:
	cmake -S . -B $(BUILD_ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DOPPROF_SANITIZE=ON -DOPPROF_WERROR=ON \
	      -DOPPROF_BUILD_BENCH=OFF
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# The main job, on a machine without a GPU: attribute a real capture from an H200 (compiled GPT-2 small:
# torch.profiler trace, ncu counters of the same window, Inductor's debug directory) and print the report.
demo: deps build
	$(BUILD)/opprof attribute --trace $(DEMO)/trace.json.gz --ncu $(DEMO)/ncu.csv.gz \
	    --inductor $(DEMO)/inductor -o $(BUILD)/gpt2_compiled.db
	$(BUILD)/opprof report $(BUILD)/gpt2_compiled.db

test: deps test-cpp test-asan test-python

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# The HTML report's Chromium test runs, not skips (scripts/install_deps.sh installs chromium); set
# OPPROF_REQUIRE_CHROMIUM=0 to let it skip on a machine without a browser.
test-python:
	OPPROF_REQUIRE_CHROMIUM=$${OPPROF_REQUIRE_CHROMIUM:-1} .venv/bin/python -m pytest tests/python -q

bench: build
	$(BUILD)/bench/opprof_bench

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
