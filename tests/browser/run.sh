#!/usr/bin/env bash
# The dashboard in a real headless browser: every *.test.js here (dashboard,
# cluster view on a name server, cross-site requests).
#
#   tests/browser/run.sh
#
# env: RMQCOORD_BIN   daemon binary (default: <repo>/build/rmqcoord)
#      ARTIFACTS_DIR  where the screenshots go (default: <repo>/build/test-artifacts)
# Installs Debian's chromium if /usr/bin/chromium is missing, then `npm ci`
# (playwright-core, pinned by package-lock.json; it downloads no browser).
# Output: TAP; the closing "# pass N" / "# fail N" lines are what CI reads.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

export RMQCOORD_BIN="${RMQCOORD_BIN:-$root/build/rmqcoord}"
case "$RMQCOORD_BIN" in
  /*) ;;
  *) RMQCOORD_BIN="$root/$RMQCOORD_BIN" ;;
esac
export ARTIFACTS_DIR="${ARTIFACTS_DIR:-$root/build/test-artifacts}"
if [ ! -x "$RMQCOORD_BIN" ]; then
  echo "run.sh: daemon binary not found or not executable: $RMQCOORD_BIN (build it, or set RMQCOORD_BIN)" >&2
  exit 2
fi

sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
if [ ! -x /usr/bin/chromium ]; then
  echo "run.sh: /usr/bin/chromium not found; installing Debian's chromium" >&2
  $sudo_cmd apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y --no-install-recommends chromium
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "run.sh: node/npm not found; installing Debian nodejs + npm" >&2
  $sudo_cmd apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y --no-install-recommends nodejs npm
fi

cd "$here"
npm ci --no-audit --no-fund --loglevel=error
exec node --test --test-reporter=tap --test-concurrency=1 ./*.test.js
