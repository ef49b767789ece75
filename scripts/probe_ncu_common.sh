# Sourced by the ncu probes (scripts/probe_ncu_selection.sh, scripts/probe_ncu_name_base.sh), with $out (the
# probe's folder) and $py (the program under ncu) set. Starts $out/summary.tsv and defines
#   probe NAME NCU_ARGS... -- PROGRAM_ARGS...
# which runs the program under ncu with those options and appends (case, rc, kernels profiled, seconds).
printf 'case\trc\tkernels\tseconds\n' > "$out/summary.tsv"
probe() {
  local name=$1; shift
  local nargs=(); while [[ $1 != -- ]]; do nargs+=("$1"); shift; done; shift
  local t0=$(date +%s%N)
  ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
      "${nargs[@]}" --log-file "$out/$name.csv" $py "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local t1=$(date +%s%N)
  local n=$(grep -c '"gpu__time_duration.sum"' "$out/$name.csv" 2>/dev/null)
  printf '%s\t%s\t%s\t%d.%d\n' "$name" "$rc" "$n" $(( (t1 - t0) / 1000000000 )) $(( (t1 - t0) / 100000000 % 10 )) >> "$out/summary.tsv"
}
