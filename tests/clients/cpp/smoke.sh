#!/usr/bin/env bash
# The C++ probes against rmqcoord ($RMQCOORD_BIN, default /opt/rmqbase/rmqcoord),
# through the Go probe's smoke driver: AVG (the client's only strategy), plain
# and orderly; one consumer, a join, a join of a 2-consumer process, a leave.
# Both library lines: bin/probe (2.1.0) and bin/probe-cpp1 (1.x).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/build.sh" >&2
rc=0
for p in probe probe-cpp1; do
  echo "== $p"
  python3 "$here/../go/smoke.py" --probe "$here/bin/$p" --strategies AVG,AVG+orderly "$@" || rc=1
done
exit $rc
