#!/usr/bin/env bash
# Issue 17's fuzz executions on the GPU machine's CPU cores (16), which the 2-core development machine lacks:
# the ASan + UBSan fuzz targets built here by `make build-fuzz` (clang 14, which that machine does not have),
# packed with their corpus by `make fuzz-carry` into build-fuzz/carry/ and carried there, run by
# tests/fuzz/run.sh with several processes per target at once. Run from the repository root:
#
#   OUT=/some/dir FUZZ_SECONDS=540 scripts/gpu/fuzz.sh      (carry build-fuzz/carry)
#
# $OUT/executions.tsv: one line per target (time, target, core-seconds, executions, result);
# $OUT/findings.tgz: what a target found, if anything (crashing inputs and their logs);
# $OUT/corpus.tgz: the corpus entries the run added, for build-fuzz/corpus/ here.
set -uo pipefail
OUT=${OUT:-$PWD/fuzz-out}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-540}
REPO=$PWD
B=$(mktemp -d /tmp/fuzz.XXXXXX)
mkdir -p "$OUT" "$B/tests/fuzz"
tar -xzf "$REPO/build-fuzz/carry/bin.tgz" -C "$B" && mv "$B"/bin/* "$B/tests/fuzz/" || { echo "fuzz: no build-fuzz/carry/bin.tgz" >&2; exit 2; }
tar -xzf "$REPO/build-fuzz/carry/corpus.tgz" -C "$B" || exit 2
find "$B/corpus" -type f | sort > "$B/corpus_before.txt"
# Processes per target, about in proportion to how slowly each runs (16 cores); FUZZ_PLAN="target=N ..."
# replaces the plan (a target left out does not run).
declare -A procs=([fuzz_kineto]=2 [fuzz_ncu_csv]=2 [fuzz_tracer_log]=1 [fuzz_nsys_sqlite]=2 [fuzz_metric_set]=1
                  [fuzz_inductor_provenance]=1 [fuzz_inductor_output_code]=3 [fuzz_fx_modules]=1
                  [fuzz_profile_reader]=2 [fuzz_communication_args]=1)
if [ -n "${FUZZ_PLAN:-}" ]; then
  procs=()
  for entry in $FUZZ_PLAN; do procs[${entry%%=*}]=${entry#*=}; done
fi
for t in "${!procs[@]}"; do
  FUZZ_KEEP_SEEDS=1 FUZZ_PROCESSES=${procs[$t]} "$REPO/tests/fuzz/run.sh" "$B" "$SECONDS_PER_TARGET" "" "$t" \
    > "$B/run_$t.txt" 2>&1 &
done
wait
cat "$B"/run_*.txt
cp "$B/executions.tsv" "$OUT/executions.tsv"
if [ -n "$(ls -A "$B/crashes" 2>/dev/null)" ]; then
  tar -czf "$OUT/findings.tgz" -C "$B" crashes logs
fi
find "$B/corpus" -type f | sort | comm -13 "$B/corpus_before.txt" - | sed "s|^$B/||" > "$B/new.txt"
tar -czf "$OUT/corpus.tgz" -C "$B" -T "$B/new.txt"
echo "fuzz: $(wc -l < "$B/new.txt") new corpus entries ($(du -h "$OUT/corpus.tgz" | cut -f1))"
