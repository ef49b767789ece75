#!/usr/bin/env bash
# Fetches simdjson's amalgamated source (simdjson.h, simdjson.cpp) from Debian's source package into DEST
# (default .deps/simdjson), which CMake builds as a static library: Debian's libsimdjson-dev ships only the
# shared library, and an installed opprof must not need one. Uses apt with a private list of deb-src
# entries, so the machine's apt configuration is left alone. Does nothing when DEST already holds the files.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.deps/simdjson}
[[ -f "$DEST/simdjson.cpp" && -f "$DEST/simdjson.h" ]] && exit 0
SUITE=${OPPROF_SIMDJSON_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
# The source archive is the one this machine's apt already uses for binary packages (the first URI of its
# sources), so no mirror is named here.
MIRROR=${OPPROF_DEBIAN_MIRROR:-$(
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' || true
    grep -hs '^deb ' /etc/apt/sources.list | awk '{for (i = 2; i <= NF; ++i) if ($i ~ /:\/\//) {print $i; exit}}' || true
  } | head -n 1)}
[[ -n "$MIRROR" ]] || { echo "fetch_simdjson: no apt source URI found (set OPPROF_DEBIAN_MIRROR)" >&2; exit 1; }
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/none"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root")
echo "fetch_simdjson: apt-get source simdjson ($SUITE) into $DEST" >&2
apt-get "${apt_opts[@]}" -qq update
(cd "$work/src" && apt-get "${apt_opts[@]}" -qq source --download-only simdjson >/dev/null)
orig=$(ls "$work"/src/simdjson_*.orig.tar.gz)
tar -xzf "$orig" -C "$work/src" --wildcards '*/singleheader/simdjson.h' '*/singleheader/simdjson.cpp' '*/LICENSE'
mkdir -p "$DEST"
cp "$work"/src/simdjson-*/singleheader/simdjson.{h,cpp} "$work"/src/simdjson-*/LICENSE "$DEST/"
echo "$(basename "$orig" .orig.tar.gz)" >"$DEST/VERSION"
echo "fetch_simdjson: $(cat "$DEST/VERSION")" >&2
