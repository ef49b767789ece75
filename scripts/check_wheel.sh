#!/usr/bin/env bash
# Checks that `pip install .` gives a working opprof on a machine without the build dependencies at run
# time: a fresh clone of the committed tree (HEAD) installed into a fresh venv, then
#   - `opprof doctor` reports the tracer library found (inside the installed package),
#   - `ldd` of the installed opprof lists no simdjson, fmt or sqlite shared library,
#   - opprof_trace_dump is installed, and the Python side finds the engine (python -m opprof.metricset),
#   - without pandas, opprof.load names the extra to install.
# OPPROF_WHEEL_TORCH=1 installs torch==2.13.0 into the venv first, so the torch observer is built too.
# Needs the network the build needs (PyPI for scikit-build-core, Debian for simdjson's source).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/opprof-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "check_wheel: FAIL: $*" >&2; exit 1; }
say() { echo "check_wheel: $*" >&2; }

say "fresh clone of $(git rev-parse --short HEAD) into $WORK/src"
git clone -q --no-hardlinks "$REPO" "$WORK/src"
python3 -m venv "$WORK/venv"
PIP=("$WORK/venv/bin/pip" install -q --disable-pip-version-check)
if [[ "${OPPROF_WHEEL_TORCH:-0}" == 1 ]]; then
  say "pip install torch==2.13.0"
  "${PIP[@]}" "torch==2.13.0"
fi
say "pip install $WORK/src"
"${PIP[@]}" "$WORK/src"

BIN=$WORK/venv/bin
[[ -x $BIN/opprof ]] || fail "pip install put no opprof in $BIN"
say "opprof doctor:"
(cd "$WORK" && "$BIN/opprof" doctor --python "$BIN/python") | sed 's/^/    /'
(cd "$WORK" && "$BIN/opprof" doctor --python "$BIN/python" --json) >"$WORK/doctor.json"
"$BIN/python" - "$WORK/doctor.json" <<'PY' || fail "doctor: see above"
import json, sys
d = json.load(open(sys.argv[1]))
tracer = d["agents"]["tracer"]
problems = []
if not tracer["found"]:
    problems.append("tracer not found (looked at %s)" % ", ".join(tracer["looked_at"]))
elif tracer["found_by"] != "Python package":
    problems.append("tracer found by %s (%s), not in the installed package" % (tracer["found_by"], tracer["path"]))
if d["backend"] != "tracer":
    problems.append("backend %s: %s" % (d["backend"], d["backend_why"]))
if not d["agents"]["trace dump"]["found"]:
    problems.append("opprof_trace_dump not installed")
for p in problems:
    print("check_wheel: FAIL: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
say "ldd $BIN/opprof:"
ldd "$BIN/opprof" | sed 's/^/    /'
if ldd "$BIN/opprof" | grep -Ei 'simdjson|libfmt|sqlite'; then
  fail "the installed opprof links a shared simdjson, fmt or sqlite"
fi
say "python -m opprof.metricset --chip gh100 (the Python side asks the installed engine)"
(cd "$WORK" && "$BIN/python" -m opprof.metricset --chip gh100 --check) >"$WORK/metrics.txt" ||
  fail "python -m opprof.metricset failed"
say "    $(tr ',' '\n' <"$WORK/metrics.txt" | wc -l) metrics"
(cd "$WORK" && "$BIN/python" -c "
import opprof
try:
    opprof.load('x.db')
except ImportError as e:
    assert 'opprof[pandas]' in str(e), e
    print('check_wheel: without pandas: ' + str(e))
else:
    raise SystemExit('opprof.load worked without pandas?')
") || fail "opprof.load without pandas"
say "OK: tracer found in the package, no shared simdjson/fmt/sqlite, opprof_trace_dump installed"
