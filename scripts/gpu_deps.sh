#!/usr/bin/env bash
# Builds .deps/, a prefix with the C++ libraries opprof links against, unpacked from Debian's packages,
# and simdjson's and SQLite's sources (.deps/simdjson, .deps/sqlite, which CMake compiles), for a machine
# that can build but cannot download (a GPU machine with no package registry). Carry it there and configure
# with -DCMAKE_PREFIX_PATH=$PWD/.deps/usr.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download libcli11-dev libfmt-dev libfmt9 zlib1g-dev >/dev/null)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps; done
rm -rf .deps/debs .deps/usr/share/doc
# zlib's development link points at this machine's runtime library: link the static archive instead.
rm -f .deps/usr/lib/x86_64-linux-gnu/libz.so
# Debian's CMake package files point at /usr; make them point into this prefix.
grep -rl '/usr/lib/x86_64-linux-gnu' .deps/usr/lib/x86_64-linux-gnu/cmake 2>/dev/null |
  xargs -r sed -i "s#\"/usr/lib/x86_64-linux-gnu#\"\${_IMPORT_PREFIX}/lib/x86_64-linux-gnu#g"
scripts/fetch_simdjson.sh .deps/simdjson
scripts/fetch_sqlite.sh .deps/sqlite
du -sh .deps
