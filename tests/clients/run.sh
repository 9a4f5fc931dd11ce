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
#      CLIENTS_TIMEOUT_S deadline of the matrix run (default 900): the harness then kills every
#                        client and daemon, reports the unfinished scenarios as failed, exits 1
#      CLIENTS_SCENARIO_TIMEOUT_S  one scenario's time (default 200; a few longer ones in run_matrix.py)
#      CLIENTS_BUILD_TIMEOUT_S     one probe build's time (default 1800: a fresh machine downloads)
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
build_limit="${CLIENTS_BUILD_TIMEOUT_S:-1800}"
if ! timeout -k 10 "$build_limit" "$here/java/build.sh"; then
  note "java: tests/clients/java/build.sh failed: Java flavors skipped"
fi

# Go probe: built by its own script when present (another folder's owner)
if [ -f "$here/go/build.sh" ]; then
  if ! timeout -k 10 "$build_limit" bash "$here/go/build.sh" >&2; then
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

# The harness enforces its own deadline (CLIENTS_TIMEOUT_S). The net under it, so nothing can stall
# CI: SIGTERM a minute after that deadline (the harness reports and exits), SIGKILL 10 s later; then
# the process groups the harness started (listed in CLIENTS_PGID_FILE) are killed here.
budget="${CLIENTS_TIMEOUT_S:-900}"
case "$budget" in ''|*[!0-9.]*) echo "run.sh: CLIENTS_TIMEOUT_S must be a number of seconds" >&2; exit 2 ;; esac
export CLIENTS_TIMEOUT_S="$budget"
net=$(( ${budget%.*} + 60 ))
pgids="$(mktemp)"
export CLIENTS_PGID_FILE="$pgids"
timeout --preserve-status -k 10 "$net" python3 "$here/harness/run_matrix.py" "${args[@]}" "$@"
rc=$?
if [ "$rc" -ge 124 ]; then
  # each child was started as a session leader (sid = pgid = its pid): only such sessions are killed
  sids=" $(ps -eo sid= | sort -u | tr -s ' \n' ' ') "
  while read -r g; do
    case "$sids" in *" $g "*) kill -CONT -- "-$g" 2>/dev/null; kill -KILL -- "-$g" 2>/dev/null ;; esac
  done < "$pgids"
  echo "# the harness did not end by itself within ${net} s (exit $rc): killed, with every client and daemon it started"
  echo "# fail 1"
fi
rm -f "$pgids"
exit "$rc"
