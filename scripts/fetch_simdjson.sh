#!/usr/bin/env bash
# Fetches simdjson's amalgamated source (simdjson.h, simdjson.cpp) from Debian's source package into DEST
# (default .deps/simdjson), which CMake builds as a static library: Debian's libsimdjson-dev ships only the
# shared library, and an installed opprof must not need one. Does nothing when DEST already holds the files.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.deps/simdjson}
[[ -f "$DEST/simdjson.cpp" && -f "$DEST/simdjson.h" ]] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts/fetch_debian_source.sh simdjson "$work/src"
orig=$(ls "$work"/src/simdjson_*.orig.tar.gz)
tar -xzf "$orig" -C "$work/src" --wildcards '*/singleheader/simdjson.h' '*/singleheader/simdjson.cpp' '*/LICENSE'
mkdir -p "$DEST"
cp "$work"/src/simdjson-*/singleheader/simdjson.{h,cpp} "$work"/src/simdjson-*/LICENSE "$DEST/"
echo "$(basename "$orig" .orig.tar.gz)" >"$DEST/VERSION"
echo "fetch_simdjson: $(cat "$DEST/VERSION")" >&2
