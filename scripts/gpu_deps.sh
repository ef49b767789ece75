#!/usr/bin/env bash
# Builds .deps/, a prefix with the C++ libraries opprof links against, unpacked from Debian's packages,
# and simdjson's source (.deps/simdjson, which CMake compiles), for a machine that can build but cannot
# download (a GPU machine with no package registry). Carry it there and configure with
# -DCMAKE_PREFIX_PATH=$PWD/.deps/usr.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download libcli11-dev libfmt-dev libfmt9 \
   libsqlite3-dev zlib1g-dev >/dev/null)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps; done
rm -rf .deps/debs .deps/usr/share/doc
# The development links of zlib and SQLite point at this machine's runtime libraries: link the static
# archives instead.
rm -f .deps/usr/lib/x86_64-linux-gnu/libz.so .deps/usr/lib/x86_64-linux-gnu/libsqlite3.so
# Debian's CMake package files point at /usr; make them point into this prefix.
grep -rl '/usr/lib/x86_64-linux-gnu' .deps/usr/lib/x86_64-linux-gnu/cmake 2>/dev/null |
  xargs -r sed -i "s#\"/usr/lib/x86_64-linux-gnu#\"\${_IMPORT_PREFIX}/lib/x86_64-linux-gnu#g"
scripts/fetch_simdjson.sh .deps/simdjson
du -sh .deps
