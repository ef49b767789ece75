#!/usr/bin/env bash
# Downloads the Debian source package PACKAGE (its .dsc, orig and debian tarballs) into the folder DIR, for the
# libraries opprof compiles from their source (scripts/fetch_simdjson.sh, scripts/fetch_sqlite.sh). Uses apt with
# a private list of deb-src entries, so the machine's apt configuration is left alone. The suite is this
# machine's release (OPPROF_DEBIAN_SUITE overrides it), the archive the first URI of its apt sources
# (OPPROF_DEBIAN_MIRROR overrides it).
#
#   scripts/fetch_debian_source.sh PACKAGE DIR
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 PACKAGE DIR" >&2; exit 2; }
PACKAGE=$1
DIR=$2
SUITE=${OPPROF_DEBIAN_SUITE:-${OPPROF_SIMDJSON_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$DIR"
# The source archive is the one this machine's apt already uses for binary packages (the first URI of its
# sources), so no mirror is named here.
MIRROR=${OPPROF_DEBIAN_MIRROR:-$(
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' || true
    grep -hs '^deb ' /etc/apt/sources.list | awk '{for (i = 2; i <= NF; ++i) if ($i ~ /:\/\//) {print $i; exit}}' || true
  } | head -n 1)}
[[ -n "$MIRROR" ]] || { echo "fetch_debian_source: no apt source URI found (set OPPROF_DEBIAN_MIRROR)" >&2; exit 1; }
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/none"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root")
echo "fetch_debian_source: apt-get source $PACKAGE ($SUITE) into $DIR" >&2
apt-get "${apt_opts[@]}" -qq update
(cd "$DIR" && apt-get "${apt_opts[@]}" -qq source --download-only "$PACKAGE" >/dev/null)
