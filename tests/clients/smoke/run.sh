#!/usr/bin/env bash
# A real Java producer and push consumer (rocketmq-client 4.9.8 and 5.3.3,
# the Java probe's classpaths: tests/clients/java/build.sh) through a fresh
# rmqcoord: Smoke.java sends messages and consumes them back.
#   tests/clients/smoke/run.sh [VERSION...]     (default: 4.9.8 5.3.3)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="${RMQCOORD_BIN:-$root/build/rmqcoord}"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(4.9.8 5.3.3)
JAVA_PROBE_VERSIONS="${versions[*]}" "$root/tests/clients/java/build.sh"
tmp="$(mktemp -d /tmp/rmqsmoke-XXXXXX)"
fail=0
for v in "${versions[@]}"; do
  cp="$(cat "$root/tests/clients/java/target/$v/classpath.txt")"
  mkdir -p "$tmp/$v"
  javac -d "$tmp/$v" -cp "$cp" "$here/Smoke.java"
  "$bin" serve --listen 127.0.0.1:0 --http off --store "$tmp/$v/store.db" >"$tmp/$v/ready" 2>"$tmp/$v/daemon.log" &
  pid=$!
  for _ in $(seq 100); do grep -q READY "$tmp/$v/ready" && break; sleep 0.1; done
  addr="$(sed -n 's/.*remoting=\([^ ]*\).*/\1/p' "$tmp/$v/ready")"
  if HOME="$tmp/$v" java -cp "$tmp/$v:$cp" -Drocketmq.client.logRoot="$tmp/$v/logs" Smoke "$addr" SMOKE 20 \
       >"$tmp/$v/out" 2>"$tmp/$v/err"; then
    echo "PASS smoke $v $(cat "$tmp/$v/out")"
  else
    echo "FAIL smoke $v $(cat "$tmp/$v/out") (files in $tmp/$v)"
    fail=1
  fi
  kill "$pid"
  wait "$pid" || true
done
[ "$fail" -ne 0 ] || rm -rf "$tmp"
exit "$fail"
