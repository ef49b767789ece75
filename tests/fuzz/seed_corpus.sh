#!/usr/bin/env bash
# Builds the seed corpus of every fuzz target from the committed fixtures: small files as they are, large
# ones trimmed (the first events of a trace, the first rows of a CSV, the head of a tracer log, which the
# reader takes for a log cut by a crash), the nsys seed from seeds/nsys_export.sql and, given the opprof
# executable, a profile database of a small fixture. Usage: seed_corpus.sh OUT_DIR [OPPROF]
set -eu  # no pipefail: head and awk end their pipes early on purpose
here="$(cd "$(dirname "$0")" && pwd)"
fixtures="$here/../fixtures"
out="$1"
opprof="${2:-}"
rm -rf "$out"
mkdir -p "$out"/{fuzz_kineto,fuzz_ncu_csv,fuzz_tracer_log,fuzz_nsys_sqlite,fuzz_metric_set,fuzz_inductor_provenance,fuzz_inductor_output_code,fuzz_fx_modules,fuzz_profile_reader,fuzz_communication_args}
# A unique seed name for a fixture path: tests/fixtures/a/b/c.json -> a_b_c.json
name() { local rel="${1#"$fixtures"/}"; echo "${rel//\//_}"; }
cat_any() { case "$1" in *.gz) zcat "$1" ;; *) cat "$1" ;; esac; }

# Kineto: the whole small traces, and the first events of every trace closed into valid JSON again (Kineto
# writes one "  {" ... "  }," block per event).
for f in "$fixtures"/kineto/*.json "$fixtures"/kineto/*/*.json "$fixtures"/*/trace.json.gz "$fixtures"/*/*/trace.json.gz "$fixtures"/*/torch_trace.json.gz; do
  [ -f "$f" ] || continue
  n="$(name "$f")"; n="${n%.gz}"
  [ "$(stat -c %s "$f")" -le 65536 ] && [[ "$f" != *.gz ]] && cp "$f" "$out/fuzz_kineto/$n"
  cat_any "$f" | awk 'NR <= 400 { print } NR > 400 && /^  },$/ { print "  }"; exit } NR > 400 { print }' \
    | awk '{ print } END { print "]}" }' > "$out/fuzz_kineto/head_$n"
done

# ncu CSV: header, units row and the first three kernels of every capture.
for f in "$fixtures"/*/ncu.csv.gz "$fixtures"/*/*/ncu.csv.gz; do
  [ -f "$f" ] || continue
  n="$(name "$f")"
  zcat "$f" | head -n 5 > "$out/fuzz_ncu_csv/${n%.gz}"
done

# Tracer logs: small ones whole, the first 16 KiB of every one.
while IFS= read -r f; do
  n="$(name "$f")"
  [ "$(stat -c %s "$f")" -le 32768 ] && cp "$f" "$out/fuzz_tracer_log/$n"
  head -c 16384 "$f" > "$out/fuzz_tracer_log/head_$n"
done < <(find "$fixtures" -name '*.opprof' | sort)

# nsys: the committed SQL, built with a small page size.
sqlite3 "$out/fuzz_nsys_sqlite/nsys_export.sqlite" < "$here/seeds/nsys_export.sql"

# Metric sets: the built-in one.
cp "$here/../../data/metrics_default.tsv" "$out/fuzz_metric_set/"

# Inductor: provenance JSON and output_code.py of every graph (output_code.py trimmed to 32 KiB), the
# FX module maps.
while IFS= read -r f; do
  n="$(name "$f")"
  case "$(basename "$f")" in
    inductor_provenance_tracking_node_mappings.json) cp "$f" "$out/fuzz_inductor_provenance/$n" ;;
    output_code.py) head -c 32768 "$f" > "$out/fuzz_inductor_output_code/$n" ;;
    opprof_fx_modules.json) cp "$f" "$out/fuzz_fx_modules/$n" ;;
  esac
done < <(find "$fixtures" \( -name inductor_provenance_tracking_node_mappings.json -o -name output_code.py \
                             -o -name opprof_fx_modules.json \) -size -64k | sort)

# Collectives' arguments: the first byte picks the parser (fuzz_communication_args.cpp), then what the
# tracer's marks and torch.profiler's record_shapes write.
c="$out/fuzz_communication_args"
printf '\000opprof.comm {"elements": 44111616, "bytes": 176446464, "dtype": "Float", "process_group": "0", "process_group_desc": "default_pg", "group_size": 2, "collective": "allreduce"}' > "$c/comm_mark"
printf '\001opprof.process_group {"backend_config": "cuda:gloo", "pg_desc": "default_pg", "pg_name": "0", "pg_size": 2, "ranks": [0, 1]}' > "$c/process_group_mark"
printf '\002[[[4160], [10]], [], [2, 3]]\n["TensorList", "Scalar", "c10::BFloat16"]' > "$c/input_tensors"
printf '\003{"backend": "gloo", "rank": 0, "world_size": 2, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo,cuda:gloo", "pg_size": 2, "ranks": [0, 1]}]}' > "$c/distributed_info"

# Profile database: a small capture attributed by this tree's opprof, with small pages.
if [ -n "$opprof" ]; then
  db="$out/fuzz_profile_reader/mlp_compiled.db"
  "$opprof" attribute -q --trace "$fixtures/kineto/mlp_compiled.kineto.json" -o "$db" 2>/dev/null  # its warning: no --inductor
  sqlite3 "$db" "PRAGMA page_size = 512; VACUUM;"
fi
