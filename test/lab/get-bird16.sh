#!/usr/bin/env bash
# Unpacks BIRD 1.6.8 (Debian's `bird` package) into DIR (default /tmp/bird16) without installing it:
# `bird` conflicts with `bird2`, which the lab also needs. Idempotent: does nothing if DIR already
# holds the binaries. Usage: test/lab/get-bird16.sh [DIR]
set -euo pipefail

dir="${1:-/tmp/bird16}"
if [[ -x "$dir/usr/sbin/bird" && -x "$dir/usr/sbin/birdc" ]]; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get download bird >/dev/null 2>&1; then
  # The package lists may be missing on a fresh machine.
  apt-get update >/dev/null
  apt-get download bird >/dev/null
fi
mkdir -p "$dir"
dpkg -x bird_*.deb "$dir"
"$dir/usr/sbin/bird" --version 2>&1 | grep -q '1\.6' || { echo "get-bird16: unexpected bird version in $dir" >&2; exit 1; }
