#!/usr/bin/env bash
# Runs every fuzz target of a build-fuzz tree for SECONDS each: first the committed regression inputs
# (regressions/<target>/, each once), then libFuzzer from the corpus kept in BUILD/corpus/<target> plus
# the seeds made from the fixtures (seed_corpus.sh), with the format's dictionary. A crash, a leak, a
# sanitizer report, a timeout or an out-of-memory fails the run; the input is kept in BUILD/crashes/.
# Executions per target are appended to BUILD/executions.tsv (docs/fuzzing.md).
# Usage: run.sh BUILD SECONDS [OPPROF] [TARGET...]   (OPPROF: an opprof executable for the profile seed)
# FUZZ_PROCESSES=N runs N fuzzer processes of each target at once (one corpus; their executions summed);
# FUZZ_KEEP_SEEDS=1 uses BUILD/seeds as it is (a machine without the fixtures' tools: sqlite3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1"
seconds="$2"
opprof="${3:-}"
shift $(( $# < 3 ? $# : 3 ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_kineto fuzz_ncu_csv fuzz_tracer_log fuzz_nsys_sqlite fuzz_metric_set fuzz_inductor_provenance
           fuzz_inductor_output_code fuzz_fx_modules fuzz_profile_reader fuzz_communication_args)
fi
declare -A dict=([fuzz_kineto]=kineto [fuzz_ncu_csv]=ncu_csv [fuzz_tracer_log]='' [fuzz_nsys_sqlite]=nsys_sqlite
                 [fuzz_metric_set]=metric_set [fuzz_inductor_provenance]=json_inductor
                 [fuzz_inductor_output_code]=output_code [fuzz_fx_modules]=json_inductor
                 [fuzz_profile_reader]=profile_db [fuzz_communication_args]=kineto)
# Inputs larger than the largest seed teach little and cost much; SQLite files need their pages.
declare -A max_len=([fuzz_kineto]=65536 [fuzz_ncu_csv]=65536 [fuzz_tracer_log]=32768 [fuzz_nsys_sqlite]=32768
                    [fuzz_metric_set]=16384 [fuzz_inductor_provenance]=32768 [fuzz_inductor_output_code]=32768
                    [fuzz_fx_modules]=16384 [fuzz_profile_reader]=131072 [fuzz_communication_args]=4096)

[ -n "${FUZZ_KEEP_SEEDS:-}" ] || "$here/seed_corpus.sh" "$build/seeds" "$opprof"
processes="${FUZZ_PROCESSES:-1}"
mkdir -p "$build/crashes" "$build/logs"
status=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is not built" >&2; exit 2; }
  mkdir -p "$build/corpus/$t"
  opts=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=20 -max_len="${max_len[$t]}"
        -artifact_prefix="$build/crashes/$t-" -print_final_stats=1)
  [ -n "${dict[$t]}" ] && opts+=(-dict="$here/dict/${dict[$t]}.dict")
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" UBSAN_OPTIONS="print_stacktrace=1"
  if [ -d "$here/regressions/$t" ] && [ -n "$(ls -A "$here/regressions/$t")" ]; then
    if ! "$bin" "${opts[@]}" "$here/regressions/$t"/* > "$build/logs/$t.regressions.log" 2>&1; then
      echo "fuzz: $t fails on a committed regression input (log: $build/logs/$t.regressions.log)" >&2
      tail -n 30 "$build/logs/$t.regressions.log" >&2
      status=1
      continue
    fi
  fi
  log="$build/logs/$t.log"
  part="$log.$$"  # this run's own: another run of the same target may be writing beside it
  pids=()
  for ((i = 1; i <= processes; i++)); do
    "$bin" "${opts[@]}" -max_total_time="$seconds" "$build/corpus/$t" "$build/seeds/$t" > "$part.$i" 2>&1 &
    pids+=($!)
  done
  result=ok
  for p in "${pids[@]}"; do wait "$p" || result=FAILED; done
  [ "$result" = ok ] || status=1
  execs=0
  for ((i = 1; i <= processes; i++)); do
    n="$(sed -n 's/^stat::number_of_executed_units: *//p' "$part.$i" | tail -n 1)"
    execs=$((execs + ${n:-0}))
  done
  cat "$part".* > "$log" && rm -f "$part".*
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$((seconds * processes))" "$execs" "$result" >> "$build/executions.tsv"
  echo "fuzz: $t: $execs executions in ${seconds} s x $processes processes: $result"
  if [ "$result" != ok ]; then
    grep -m 1 -E "ERROR: |SUMMARY: |runtime error|terminate called|deadly signal" "$log" >&2 || true
    echo "fuzz: log $log; input in $build/crashes/" >&2
  fi
done
exit $status
