#!/usr/bin/env bash
# Real RocketMQ clients against rmqcoord: builds what is missing (idempotent),
# runs the scenario matrix (tests/clients/harness/run_matrix.py), writes
# docs/clients.md and ends with "# pass N" / "# fail N" (N = scenario steps).
# Exit 0 only when no step failed.
#
#   tests/clients/run.sh [run_matrix.py args, e.g. --only lifecycle --flavors java-5.3.3]
#
# env: RMQCOORD_BIN      daemon binary (default <repo>/build/rmqcoord)
#      CLIENTS_JVMS      client processes at once, by JVM weight (default 3)
#      CLIENTS_KEEP=1    keep every scenario's temp dir (failed ones are always kept)
#      CLIENTS_DOC       report path (default <repo>/docs/clients.md; "" = none)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export RMQCOORD_BIN="${RMQCOORD_BIN:-$root/build/rmqcoord}"
case "$RMQCOORD_BIN" in /*) ;; *) RMQCOORD_BIN="$root/$RMQCOORD_BIN" ;; esac
if [ ! -x "$RMQCOORD_BIN" ]; then
  echo "run.sh: daemon binary not found or not executable: $RMQCOORD_BIN (build it, or set RMQCOORD_BIN)" >&2
  exit 2
fi
command -v python3 >/dev/null 2>&1 || { echo "run.sh: python3 is required" >&2; exit 2; }

notes=""
note() { echo "run.sh: $*" >&2; notes="${notes}$*"$'\n'; }

# Java probe (Maven; both pinned client versions)
if ! "$here/java/build.sh"; then
  note "java: tests/clients/java/build.sh failed: Java flavors skipped"
fi

# Go probe: built by its own script when present (another folder's owner)
if [ -f "$here/go/build.sh" ]; then
  if ! bash "$here/go/build.sh" >&2; then
    note "go: tests/clients/go/build.sh failed: go flavor skipped"
    export CLIENTS_GO_BROKEN=1
  fi
fi

# Node probe: ali-ons from tests/e2e's lockfile (read-only for us: installed only when missing)
if [ -f "$here/node/probe.js" ] && command -v node >/dev/null 2>&1; then
  if [ ! -d "$root/tests/e2e/node_modules/ali-ons" ]; then
    (cd "$root/tests/e2e" && npm ci --no-audit --no-fund --ignore-scripts >&2) \
      || note "node: npm ci in tests/e2e failed: node flavor skipped"
  fi
fi

doc="${CLIENTS_DOC-$root/docs/clients.md}"
args=()
[ -n "$doc" ] && args+=(--doc "$doc")
export CLIENTS_NOTES="$notes"
exec python3 "$here/harness/run_matrix.py" "${args[@]}" "$@"
