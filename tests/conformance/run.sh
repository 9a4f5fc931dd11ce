#!/usr/bin/env bash
# Differential conformance run: the real RocketMQ name server + broker (4.9.7 and 5.3.3, fetched
# through Maven) against rmqcoord in two modes per version — its defaults, and --compat for that
# version (broker-4.9 against 4.9.x, broker against 5.x) — both against the same real pair, which is
# started once per version. Prints the diffs of failing scenarios, writes docs/conformance.md, prints
# "# VERSION MODE pass N fail N skip N" per version and mode, ends with "# pass N" / "# fail N" and
# exits non-zero on a difference not documented in the README (compat: not in its "none" rows).
#
#   tests/conformance/run.sh [--only 'member/*'] [--versions 5.3.3] [--modes default|compat] [--keep]
#                            [--json out.json]
#
# Environment: RMQCOORD_BIN (default build/rmqcoord), RMQ_VERSIONS (default 4.9.7,5.3.3),
#              RMQ_CONF_CACHE (jar cache, default ~/.cache/rmqcoord-conformance).
# Needs: java (17 works), mvn, python3 >= 3.8. Nothing but 127.0.0.1 is contacted except Maven Central
# on the first run.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export RMQCOORD_BIN="${RMQCOORD_BIN:-$REPO/build/rmqcoord}"
export RMQ_VERSIONS="${RMQ_VERSIONS:-4.9.7,5.3.3}"

for tool in java mvn python3; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install default-jdk-headless maven python3)" >&2; exit 2; }
done
[ -x "$RMQCOORD_BIN" ] || { echo "run.sh: no rmqcoord binary at $RMQCOORD_BIN (build it or set RMQCOORD_BIN)" >&2; exit 2; }

t0=$(date +%s)
for v in ${RMQ_VERSIONS//,/ }; do
    "$HERE/real-rocketmq.sh" fetch "$v" || echo "run.sh: could not fetch RocketMQ $v; its scenarios will be reported as not run" >&2
done
echo "# jars ready after $(( $(date +%s) - t0 )) s" >&2
exec python3 "$HERE/harness.py" --versions "$RMQ_VERSIONS" "$@"
