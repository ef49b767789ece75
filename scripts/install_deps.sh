#!/usr/bin/env bash
# Installs what building and testing opprof needs on a fresh Debian/Ubuntu machine: the C++ libraries
# from the distribution, and a Python virtual environment (.venv) with the CPU build of torch for the
# Python tests. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the HTML report's browser test (tests/python/test_html_report.py) renders the page in it.
# tcl: its tclsh makes SQLite's amalgamation from Debian's source (scripts/fetch_sqlite.sh).
DEBS=(cmake ninja-build g++ pkg-config tcl libcli11-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev sqlite3 chromium
      clang-14 libclang-rt-14-dev)  # the fuzz targets: clang's libFuzzer and sanitizer runtimes (tests/fuzz)
missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: apt-get install ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# simdjson and SQLite are built from their source (Debian ships simdjson only as a shared library, and SQLite's
# archive with settings that slow the profile writer; see scripts/fetch_simdjson.sh, scripts/fetch_sqlite.sh).
scripts/fetch_simdjson.sh
scripts/fetch_sqlite.sh

if [ "${OPPROF_SKIP_PYTHON:-0}" != "1" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "install_deps: creating .venv" >&2
    python3 -m venv .venv
  fi
  # torch is pinned: an unpinned torch pulls a CUDA build of several GB; the tests need the CPU build only.
  if ! .venv/bin/python -c "import torch, pytest, numpy" 2>/dev/null; then
    echo "install_deps: pip install torch==2.13.0 pytest numpy (CPU build)" >&2
    .venv/bin/pip install -q --disable-pip-version-check "torch==2.13.0" pytest numpy
  fi
  # The report tests' drivers (pyproject's test extra): Playwright drives the system chromium (it downloads
  # no browser of its own here), jsonschema checks the Perfetto export against the trace-event format.
  if ! .venv/bin/python -c "import playwright.sync_api, jsonschema" 2>/dev/null; then
    echo "install_deps: pip install playwright==1.65.2 jsonschema==4.26.0" >&2
    .venv/bin/pip install -q --disable-pip-version-check "playwright==1.65.2" "jsonschema==4.26.0"
  fi
  # pyarrow: its Arrow C++ library (headers and libarrow/libparquet) is what `opprof export --parquet` is built
  # with (cmake/FindArrowParquet.cmake); duckdb: the test that reads the export back.
  if ! .venv/bin/python -c "import pyarrow, duckdb" 2>/dev/null; then
    echo "install_deps: pip install pyarrow==25.0.1 duckdb==1.5.6" >&2
    .venv/bin/pip install -q --disable-pip-version-check "pyarrow==25.0.1" "duckdb==1.5.6"
  fi
  # pandas: opprof.load's optional extra (pip install 'opprof[pandas]'), which the Python tests exercise.
  if ! .venv/bin/python -c "import pandas" 2>/dev/null; then
    echo "install_deps: pip install pandas" >&2
    .venv/bin/pip install -q --disable-pip-version-check pandas
  fi
fi
