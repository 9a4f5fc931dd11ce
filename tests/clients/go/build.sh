#!/usr/bin/env bash
# Builds tests/clients/go/bin/probe (rocketmq-client-go v2, pinned in go.mod/go.sum).
# Idempotent: does nothing when bin/probe is newer than its sources.
# Needs only the go command; an empty module cache fills from the Go module proxy.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
bin="$here/bin/probe"
if [[ -x "$bin" && "${FORCE:-0}" != 1 ]]; then
  stale=0
  for f in main.go go.mod go.sum build.sh; do
    [[ "$f" -nt "$bin" ]] && stale=1
  done
  if [[ $stale == 0 ]]; then
    echo "go probe: up to date ($bin)"
    exit 0
  fi
fi
command -v go >/dev/null || { echo "go probe: the go command is missing" >&2; exit 1; }
mkdir -p bin
export GOFLAGS="-mod=readonly ${GOFLAGS:-}"
export CGO_ENABLED=0
go build -trimpath -o "$bin.tmp" .
mv -f "$bin.tmp" "$bin"
echo "go probe: built $bin ($(go version | awk '{print $3}'))"
