#!/usr/bin/env bash
# Runs the real RocketMQ admin tool (mqadmin, MQAdminStartup from
# org.apache.rocketmq:rocketmq-tools) against rmqcoord, for each pinned
# version, and checks every command's output against the daemon's state.
#
#   tests/mqadmin/run.sh [harness options]      e.g. --versions 4.9.8  --only topicList  -v  --keep
#
# Environment:
#   RMQCOORD_BIN            the daemon binary (default: build/rmqcoord of this repository)
#   MQADMIN_VERSIONS        comma-separated tool versions (default 4.9.8,5.3.3)
#   MQADMIN_CACHE           where the Maven repository, class paths and the
#                           compiled runner are kept (default ~/.cache/rmqcoord-mqadmin)
#
# Needs: a JDK (javac; tested with 17), mvn, python3. The first run downloads
# the tool and its dependencies from Maven Central (about 95 MB, about 2 min);
# later runs are offline.
# Output ends with "# xfail N", "# pass N", "# fail N"; exit status 1 if fail > 0.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${RMQCOORD_BIN:-$root/build/rmqcoord}
versions=${MQADMIN_VERSIONS:-4.9.8,5.3.3}
cache=${MQADMIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rmqcoord-mqadmin}

for tool in java javac mvn python3; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool not found" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "run.sh: no daemon binary at $bin (set RMQCOORD_BIN)" >&2; exit 2; }

mkdir -p "$cache"
IFS=, read -ra vs <<<"$versions"
for v in "${vs[@]}"; do
    cp="$cache/cp-$v.txt"
    if [ ! -s "$cp" ]; then
        echo "# fetching rocketmq-tools $v and its dependencies (Maven Central)" >&2
        mvn -q -B -f "$here/pom.xml" -Drmq.version="$v" -Dmaven.repo.local="$cache/m2" \
            dependency:build-classpath -Dmdep.outputFile="$cp.tmp" >"$cache/mvn-$v.log" 2>&1 \
            || { echo "run.sh: maven failed, see $cache/mvn-$v.log" >&2; rm -f "$cp.tmp"; exit 2; }
        mv "$cp.tmp" "$cp"
    fi
done

# The runner has no compile-time dependency on RocketMQ; rebuild it when its source changes.
if [ ! -f "$cache/classes/MqadminBatch.class" ] || [ "$here/MqadminBatch.java" -nt "$cache/classes/MqadminBatch.class" ]; then
    mkdir -p "$cache/classes"
    javac -d "$cache/classes" "$here/MqadminBatch.java"
fi

exec python3 -B "$here/harness.py" --bin "$bin" --cache "$cache" --versions "$versions" "$@"
