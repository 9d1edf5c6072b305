#!/usr/bin/env bash
# Installs the Debian packages the project needs (lists: */deps.list, one
# package a line, '#' comments). Idempotent and quiet when all are present.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t wanted < <(cat deps.list */deps.list 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
missing=()
for p in "${wanted[@]}"; do
    st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ "$st" == ii* ]] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null || $SUDO apt-get update
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
