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
. "$root/tests/node-env.sh"

need_daemon_bin "$root"
export ARTIFACTS_DIR="${ARTIFACTS_DIR:-$root/build/test-artifacts}"

if [ ! -x /usr/bin/chromium ]; then
  echo "run.sh: /usr/bin/chromium not found; installing Debian's chromium" >&2
  apt_install chromium
fi
need_node

cd "$here"
npm ci --no-audit --no-fund --loglevel=error
exec node --test --test-reporter=tap --test-concurrency=1 ./*.test.js
