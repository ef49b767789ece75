#!/usr/bin/env bash
# Makes SQLite's amalgamation (sqlite3.c, sqlite3.h) from Debian's source package, with Debian's patches (its
# security fixes among them), into DEST (default .deps/sqlite), which CMake compiles into a static library with
# the settings the profile writer wants (cmake/StaticDependencies.cmake). Debian's own libsqlite3.a is built
# without the lookaside allocator and with memory statistics and secure delete on, which cost the writer about
# a tenth of a million-kernel tracer log's time (bench/README.md). Needs tclsh (Debian: tcl), which generates the
# amalgamation. Does nothing when DEST already holds the files.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.deps/sqlite}
[[ -f "$DEST/sqlite3.c" && -f "$DEST/sqlite3.h" ]] && exit 0
command -v tclsh >/dev/null || { echo "fetch_sqlite: tclsh is needed to make SQLite's amalgamation (apt-get install tcl)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts/fetch_debian_source.sh sqlite3 "$work/src"
dsc=$(ls "$work"/src/sqlite3_*.dsc)
orig=$(ls "$work"/src/sqlite3_*.orig.tar.xz | grep -v -- '-www' | head -n 1)
tar -xJf "$orig" -C "$work/src"
tree=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'sqlite*' | head -n 1)
tar -xJf "$(ls "$work"/src/sqlite3_*.debian.tar.xz)" -C "$tree"
# Debian's patches in their order (dpkg-source applies the same series).
while read -r patch; do
  [[ -z "$patch" || "$patch" == \#* ]] && continue
  patch -d "$tree" -p1 -s -N <"$tree/debian/patches/$patch"
done <"$tree/debian/patches/series"
mkdir -p "$work/build"
(cd "$work/build" && "$tree/configure" --disable-tcl >/dev/null && make sqlite3.c >/dev/null)
mkdir -p "$DEST"
cp "$work/build/sqlite3.c" "$work/build/sqlite3.h" "$tree/LICENSE.md" "$DEST/"
basename "$dsc" .dsc >"$DEST/VERSION"
echo "fetch_sqlite: $(cat "$DEST/VERSION")" >&2
