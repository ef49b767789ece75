#!/usr/bin/env bash
# Runs scripts/probe_ncu_selection.py under each ncu selection mechanism and counts the kernels ncu
# profiled. Writes $OUT/probe_summary.tsv (case, rc, kernels, seconds) and every case's CSV and log in
# $OUT/probe.tgz (the device machine returns at most 8 files).
set -u
out=/tmp/probe; rm -rf "$out"; mkdir -p "$out"
export TORCHINDUCTOR_CACHE_DIR=/tmp/probe_inductor TRITON_CACHE_DIR=/tmp/probe_triton
py="python3 scripts/probe_ncu_selection.py"
ncu --help > "$out/ncu_help.txt" 2>&1
ncu --version > "$out/ncu_version.txt" 2>&1
source "$(dirname "$0")/probe_ncu_common.sh"
for mode in eager_fwd eager_train compiled_fwd cudagraph; do
  probe ${mode}_all -- $mode none
  probe ${mode}_perconfig --filter-mode per-launch-config --launch-count 1 -- $mode none
done
for scope in thread process; do
  probe eager_fwd_nvtx_module_$scope --nvtx --nvtx-exclude "opprof.dup/" --nvtx-push-pop-scope $scope -- eager_fwd module
  probe eager_train_nvtx_module_$scope --nvtx --nvtx-exclude "opprof.dup/" --nvtx-push-pop-scope $scope -- eager_train module
done
probe compiled_fwd_nvtx_triton --nvtx --nvtx-exclude "opprof.dup/" -- compiled_fwd triton
probe compiled_fwd_nvtx_whole --nvtx --nvtx-exclude "opprof.dup/" -- compiled_fwd whole
probe cudagraph_nvtx_whole_node --nvtx --nvtx-exclude "opprof.dup/" --graph-profiling node -- cudagraph whole
probe cudagraph_nvtx_triton --nvtx --nvtx-exclude "opprof.dup/" -- cudagraph triton
probe eager_fwd_two_kernel_ids --kernel-id ::regex:gemm:1 --kernel-id ::regex:gemm:2 -- eager_fwd none
probe eager_fwd_kernel_id_regex_invocation --kernel-id "::regex:.*:regex:^(1|3|5)$" -- eager_fwd none
probe eager_fwd_skip_count --launch-skip 3 --launch-count 5 -- eager_fwd none
cp "$out/summary.tsv" "${OUT:-/tmp}/probe_summary.tsv"
tar -czf "${OUT:-/tmp}/probe.tgz" -C /tmp probe
cat "$out/summary.tsv"
