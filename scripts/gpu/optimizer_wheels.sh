#!/usr/bin/env bash
# Puts the wheels `opprof optimize` needs beyond torch (pandas, for opprof.load, and what pandas imports) for
# the GPU machine's Python 3.12 into .deps/wheels, for a machine without a package registry. Run here, where pip
# works, after scripts/gpu_deps.sh (which recreates .deps); scripts/gpu/optimizer.sh unpacks them only when
# that machine's Python cannot import pandas.
set -euo pipefail
cd "$(dirname "$0")/../.."
PIP=${PIP:-.venv/bin/python -m pip}
mkdir -p .deps/wheels
$PIP download --quiet --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --no-deps -d .deps/wheels \
  "pandas==2.2.3" "python-dateutil<3" "pytz" "tzdata" "six"
ls -la .deps/wheels
