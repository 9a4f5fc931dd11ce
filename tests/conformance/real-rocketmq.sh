#!/usr/bin/env bash
# The real Apache RocketMQ name server + broker as a test peer.
#
#   real-rocketmq.sh fetch VERSION            jars into $RMQ_CONF_CACHE/VERSION (Maven, pom.xml beside this file)
#   real-rocketmq.sh start VERSION DIR [broker.conf lines...]
#                                             name server + broker on free loopback ports, state in DIR;
#                                             prints "READY namesrv=127.0.0.1:P broker=127.0.0.1:Q ms=N"
#   real-rocketmq.sh stop  VERSION DIR        SIGTERM both (pids from DIR), SIGKILL after 15 s
#
# Extra broker.conf lines (key=value) override the defaults below, e.g.
#   real-rocketmq.sh start 5.3.3 /tmp/r autoCreateTopicEnable=false channelExpiredTimeout=4000
# Environment: RMQ_CONF_CACHE (default ~/.cache/rmqcoord-conformance), JAVA (default java),
#              RMQ_HEAP (default "-Xms64m -Xmx256m"), RMQ_START_TIMEOUT_S (default 180),
#              RMQ_NO_ADD_OPENS=1 (leave out the --add-opens flags, to see what needs them),
#              RMQ_JAVA_OPTS (extra JVM flags for both, e.g. -Drocketmq.broker.rebalance.lockMaxLiveTime=4000).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${RMQ_CONF_CACHE:-$HOME/.cache/rmqcoord-conformance}"
JAVA="${JAVA:-java}"
HEAP="${RMQ_HEAP:--Xms64m -Xmx256m}"
START_TIMEOUT_S="${RMQ_START_TIMEOUT_S:-180}"

die() { echo "real-rocketmq: $*" >&2; exit 1; }

fetch() {
    local v="$1" dir="$CACHE/$1"
    if [ -f "$dir/.complete" ]; then return 0; fi
    command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
    mkdir -p "$dir"
    echo "real-rocketmq: fetching org.apache.rocketmq:rocketmq-namesrv/broker:$v into $dir" >&2
    mvn -B -q -f "$HERE/pom.xml" -Drocketmq.version="$v" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$dir" >"$dir.mvn.log" 2>&1 \
        || { tail -20 "$dir.mvn.log" >&2; die "maven could not fetch $v (log: $dir.mvn.log)"; }
    ls "$dir"/rocketmq-broker-"$v".jar >/dev/null 2>&1 || die "rocketmq-broker-$v.jar missing after fetch"
    touch "$dir/.complete"
}

# Three consecutive free ports P-2, P, P+1 are needed by the broker
# (fast/VIP port = listenPort-2, HA port = listenPort+1); the name server needs one.
free_ports() {
    python3 - <<'EOF'
import random, socket
def free(p):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", p)); return True
    except OSError: return False
    finally: s.close()
rnd = random.Random()
for _ in range(500):
    ns = rnd.randrange(20000, 40000); b = rnd.randrange(20000, 40000)
    ps = [ns, b - 2, b, b + 1]
    if len(set(ps)) == 4 and all(free(p) for p in ps):
        print(ns, b); break
else:
    raise SystemExit("no free ports")
EOF
}

java_flags() {
    # 4.9.x is Java 8 code: its store cleans mapped buffers through sun.nio.ch/java.nio
    # internals by reflection, which Java 17 refuses unless these packages are opened.
    local major
    major="$("$JAVA" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/{print $2}')"
    local f="$HEAP -XX:MaxDirectMemorySize=128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Djava.net.preferIPv4Stack=true"
    if [ -z "${RMQ_NO_ADD_OPENS:-}" ] && [ "${major%%.*}" != "1" ] && [ "${major%%.*}" -ge 9 ] 2>/dev/null; then
        f="$f --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
        f="$f --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED"
        f="$f --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED"
        f="$f --add-exports=java.base/sun.nio.ch=ALL-UNNAMED"
    fi
    echo "$f ${RMQ_JAVA_OPTS:-}"
}

wait_listen() { # host:port deadline_epoch_ms pid: gives up when the process is gone
    python3 - "$1" "$2" "$3" <<'EOF'
import os, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1); deadline = int(sys.argv[2]) / 1000; pid = int(sys.argv[3])
def alive():
    try:
        os.kill(pid, 0); return True
    except OSError:
        return False
while time.time() < deadline and alive():
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close(); sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
}

now_ms() { date +%s%3N; }

# launch PROC MAIN_CLASS PORT WHAT: one JVM of start() (its v, dir, home, flags, common and cp)
# with $dir/PROC.conf, output in $dir/PROC.out, pid in $dir/PROC.pid; returns once it listens on PORT.
launch() {
    local proc="$1" main="$2" port="$3" what="$4" t
    t="$(now_ms)"
    # shellcheck disable=SC2086
    ROCKETMQ_HOME="$home" nohup "$JAVA" $flags $common -cp "$cp" -Drmq.proc="$proc" "$main" \
        -c "$dir/$proc.conf" >"$dir/$proc.out" 2>&1 &
    echo $! >"$dir/$proc.pid"
    wait_listen "127.0.0.1:$port" $((t + START_TIMEOUT_S * 1000)) "$(cat "$dir/$proc.pid")" \
        || { tail -30 "$dir/$proc.out" >&2; stop "$v" "$dir"; die "$v $what did not listen within ${START_TIMEOUT_S}s"; }
}

start() {
    local v="$1" dir="$2"; shift 2
    fetch "$v"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    [ ! -f "$dir/namesrv.pid" ] || die "$dir already has a running pair (stop it first)"
    local home="$dir/home" store="$dir/store"
    mkdir -p "$home/conf" "$store" "$dir/logs"
    # 4.9.x configures logback from ROCKETMQ_HOME/conf/logback_{namesrv,broker}.xml
    cp "$HERE/logback-quiet.xml" "$home/conf/logback_namesrv.xml"
    cp "$HERE/logback-quiet.xml" "$home/conf/logback_broker.xml"
    read -r NSPORT BPORT < <(free_ports)
    local cp="$CACHE/$v/*"
    local flags; flags="$(java_flags)"
    # name server
    cat >"$dir/namesrv.conf" <<EOF
listenPort=$NSPORT
bindAddress=127.0.0.1
kvConfigPath=$store/namesrv/kvConfig.json
configStorePath=$store/namesrv/namesrv.properties
EOF
    # broker: tiny mapped files so nothing large is allocated or mapped
    cat >"$dir/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$BPORT
bindAddress=127.0.0.1
namesrvAddr=127.0.0.1:$NSPORT
storePathRootDir=$store/broker
storePathCommitLog=$store/broker/commitlog
mappedFileSizeCommitLog=1048576
mappedFileSizeConsumeQueue=60000
mappedFileSizeConsumeQueueExt=1048576
maxHashSlotNum=1000
maxIndexNum=4000
mappedFileSizeTimerLog=1048576
timerWheelEnable=false
transientStorePoolEnable=false
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
flushDiskType=ASYNC_FLUSH
deleteWhen=04
fileReservedTime=1
diskMaxUsedSpaceRatio=99
enableCalcFilterBitMap=false
EOF
    local kv
    for kv in "$@"; do
        [[ "$kv" == *=* ]] || die "bad broker.conf line: $kv"
        sed -i "/^${kv%%=*}=/d" "$dir/broker.conf"
        echo "$kv" >>"$dir/broker.conf"
    done
    echo "$flags" >"$dir/jvm-flags.txt"
    echo "real-rocketmq: $v JVM flags: $flags" >&2
    local common="-Drocketmq.home.dir=$home -Duser.home=$dir -Dlogback.configurationFile=$HERE/logback-quiet.xml -Drocketmq.client.logRoot=$dir/logs -Dlog.home=$dir/logs"
    local t0; t0="$(now_ms)"
    # the broker registers with the name server at start: start it once the name server listens
    launch namesrv org.apache.rocketmq.namesrv.NamesrvStartup "$NSPORT" "name server"
    local t1; t1="$(now_ms)"
    launch broker org.apache.rocketmq.broker.BrokerStartup "$BPORT" broker
    local t2; t2="$(now_ms)"
    {
        echo "NAMESRV=127.0.0.1:$NSPORT"
        echo "BROKER=127.0.0.1:$BPORT"
        echo "NAMESRV_MS=$((t1 - t0))"
        echo "BROKER_MS=$((t2 - t1))"
        echo "TOTAL_MS=$((t2 - t0))"
    } >"$dir/ports.env"
    echo "READY namesrv=127.0.0.1:$NSPORT broker=127.0.0.1:$BPORT namesrv_ms=$((t1 - t0)) broker_ms=$((t2 - t1)) ms=$((t2 - t0))"
}

stop_one() { # pidfile
    local pf="$1" pid i
    [ -f "$pf" ] || return 0
    pid="$(cat "$pf")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "real-rocketmq: pid $pid did not stop in 15 s, SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pf"
}

stop() {
    local dir="$2"
    stop_one "$dir/broker.pid"
    stop_one "$dir/namesrv.pid"
}

case "${1:-}" in
    fetch) [ $# -eq 2 ] || die "usage: $0 fetch VERSION"; fetch "$2" ;;
    start) [ $# -ge 3 ] || die "usage: $0 start VERSION DIR [key=value...]"; start "$2" "$3" "${@:4}" ;;
    stop) [ $# -eq 3 ] || die "usage: $0 stop VERSION DIR"; stop "$2" "$3" ;;
    flags) java_flags ;;
    *) die "usage: $0 fetch|start|stop VERSION [DIR]" ;;
esac
