#!/usr/bin/env bash
# End-to-end tests of rmqcoord with the real ali-ons client (see README.md).
#
#   tests/e2e/run.sh [extra node --test args, e.g. --test-name-pattern='^3\.']
#
# env: RMQCOORD_BIN   daemon binary (default: <repo>/build/rmqcoord)
#      E2E_KEEP=1     keep every test's temp dir (logs, store); failed tests always keep theirs
#      E2E_VERBOSE=1  client info logs into the per-consumer log files
# Output: TAP; the closing "# pass N" / "# fail N" lines are what CI reads.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/tests/node-env.sh"

need_daemon_bin "$root"
need_node

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "run.sh: Node.js >= 20 is required (found $(node --version))" >&2
  exit 2
fi

# Dependencies: npm ci from the committed lockfile, skipped when node_modules
# was installed from this exact lockfile (stamp = hash of package-lock.json).
cd "$here"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.e2e-lock-stamp"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -d node_modules/ali-ons ]; then
  npm ci --no-audit --no-fund --ignore-scripts
  echo "$want" > "$stamp"
fi

cd "$root"
# One test at a time (each starts its own daemon and consumer processes).
exec node --test --test-concurrency=1 --test-reporter=tap --test-timeout=120000 "$@" \
  tests/e2e/*.test.js
