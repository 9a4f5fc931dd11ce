# bench_java.sh — sourced by scripts/bench (section "java"): the same load
# generator, in the same run, against the real Apache RocketMQ name server
# and broker (started by tests/conformance/real-rocketmq.sh from the Maven
# Central jars) and against rmqcoord, each figure printed as
#   name  ours  theirs  ratio(ours/theirs)  [target]
# Versions: JAVA_BENCH_VERSIONS (default "4.9.7 5.3.3"; 4.9.8's broker is
# not on Maven Central, so 4.9.7 stands for the 4.9 line).
# The peer's shape differs in one point: one real broker registers with the
# name server, so a route names 1 broker (100 topics x 8 queues); rmqcoord's
# routes are set up the same way here. Heartbeats and the consumer-list
# probe run against a broker started with notifyConsumerIdsChangedEnable=
# false, because the join phase of 1,000 connections x 10 groups would
# otherwise make the broker send ~5 million NOTIFYs (one to every member at
# every join) while the steady re-heartbeats are measured; rmqcoord sends no
# NOTIFY for re-heartbeats either. Uses scripts/bench's helpers and variables.

JAVA_BENCH_VERSIONS=${JAVA_BENCH_VERSIONS:-4.9.7 5.3.3}
JAVA_STORM_LIMIT_S=${JAVA_STORM_LIMIT_S:-60}
RQ=$ROOT/tests/conformance/real-rocketmq.sh

# jfig NAME OURS THEIRS [TARGET]: one comparison line.
jfig() {
    printf '%-36s %12s %12s %9s%s\n' "$1" "$2" "$3" "$(rawratio "$2" "$3")x" "${4:+  [$4]}"
}
# rawratio A B: A / B unrounded (ratio rounds to 2 decimals, too coarse for the 1/50 target).
rawratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.4f\n", a / b }'; }
pid_rss_kb() { [ -n "$1" ] && awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# java_topics PORT N: creates topics T0..T{N-1} (8 queues) on the broker at
# PORT with UPDATE_AND_CREATE_TOPIC; the broker registers them with its name server.
java_topics() {
    python3 - "$1" "$2" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from rmqclient import Conn
c = Conn(int(sys.argv[1]))
for t in range(int(sys.argv[2])):
    r = c.request(17, {"topic": "T%d" % t, "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8",
                       "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"},
                  timeout=10.0)
    if r is None or r.code != 0:
        sys.exit("topic T%d not created: %r" % (t, r and r.code))
EOF
}

# route_ok PORT: whether GET_ROUTEINFO_BY_TOPIC T99 succeeds (the last topic registered).
route_ok() {
    python3 - "$1" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from rmqclient import Conn
r = Conn(int(sys.argv[1])).request(105, {"topic": "T99"}, timeout=5.0)
sys.exit(0 if r is not None and r.code == 0 else 1)
EOF
}

# j_hb PORT NAME: 1,000 connections x 10 groups of heartbeats, the G0 list probe beside them.
j_hb() {
    "$LOAD" hb -c $HB_CONNS -w $HB_WINDOW -g $HB_GROUPS -d "$DUR" -W "$WARM" -i "$2" -T 120 \
        127.0.0.1:$1 >"$TMP/$2.hb" &
    local hb=$! i
    PIDS+=("$hb")
    for i in $(seq 1 2400); do
        grep -q '^# joined' "$TMP/$2.hb" 2>/dev/null && break
        kill -0 "$hb" 2>/dev/null || break
        sleep 0.05
    done
    "$LOAD" list -c 1 -w 1 -q G0 -P "$PROBE_PAUSE_US" -d "$((DUR - 1 > 1 ? DUR - 1 : 1))" -W "$WARM" \
        127.0.0.1:$1 >"$TMP/$2.list" || true
    wait "$hb" || true
}

# j_side PORT_NS PORT_BROKER PID_NS PID_BROKER PORT_BROKER_QUIET PID_BROKER_QUIET TAG:
# every figure of one side into $TMP/TAG.*; the quiet broker (no NOTIFYs) takes the heartbeats.
j_side() {
    local ns=$1 br=$2 pns=$3 pbr=$4 brq=$5 pbrq=$6 tag=$7
    "$LOAD" route -c $ROUTE_CONNS -w $ROUTE_WINDOW -t $ROUTE_TOPICS -d "$DUR" -W "$WARM" 127.0.0.1:$ns \
        >"$TMP/$tag.route" || true
    pid_rss_kb "$pns" >"$TMP/$tag.route.rss"
    j_hb "$brq" "$tag"
    pid_rss_kb "$pbrq" >"$TMP/$tag.hb.rss"
    timeout 300 "$LOAD" notify -m 1000 -r "$NREP" -q N -d 60 -T 120 127.0.0.1:$br >"$TMP/$tag.notify" 2>&1 || true
    pid_rss_kb "$pbr" >"$TMP/$tag.notify.rss"
    timeout $((JAVA_STORM_LIMIT_S * 2 + 60)) "$LOAD" storm -k join -c "$STORM_CONNS" -q S \
        -T "$JAVA_STORM_LIMIT_S" 127.0.0.1:$br >"$TMP/$tag.storm" 2>&1 || true
    pid_rss_kb "$pbr" >"$TMP/$tag.storm.rss"
}

java_print() { # tag_ours tag_theirs start_ours_ms start_theirs_ms
    local o=$1 t=$2 a b
    a=$(field rate "$(grep RESULT "$TMP/$o.route" || true)")
    b=$(field rate "$(grep RESULT "$TMP/$t.route" || true)")
    jfig route_qps "$a" "$b" "target >= 10x: $(meets "$(rawratio "$a" "$b")" '>=' 10)"
    jfig route_p99_us "$(field p99_us "$(grep RESULT "$TMP/$o.route" || true)")" \
        "$(field p99_us "$(grep RESULT "$TMP/$t.route" || true)")" "lower is better"
    jfig route_rss_mb "$(mb "$(cat "$TMP/$o.route.rss")")" "$(mb "$(cat "$TMP/$t.route.rss")")" \
        "target <= 0.05x: $(meets "$(rawratio "$(cat "$TMP/$o.route.rss")" "$(cat "$TMP/$t.route.rss")")" '<' 0.05)"
    a=$(field rate "$(cat "$TMP/$o.hb")")
    b=$(field rate "$(cat "$TMP/$t.hb")")
    jfig hb_rate_1000conn_10groups "$a" "$b" "target >= 10x: $(meets "$(rawratio "$a" "$b")" '>=' 10)"
    jfig hb_p99_us "$(field p99_us "$(cat "$TMP/$o.hb")")" "$(field p99_us "$(cat "$TMP/$t.hb")")" "lower is better"
    jfig consumer_list_p99_us_under_hb "$(field p99_us "$(cat "$TMP/$o.list")")" \
        "$(field p99_us "$(cat "$TMP/$t.list")")" "lower is better"
    jfig hb_rss_mb "$(mb "$(cat "$TMP/$o.hb.rss")")" "$(mb "$(cat "$TMP/$t.hb.rss")")" \
        "target <= 0.05x: $(meets "$(rawratio "$(cat "$TMP/$o.hb.rss")" "$(cat "$TMP/$t.hb.rss")")" '<' 0.05)"
    a=$(grep RESULT "$TMP/$o.notify" || true)
    b=$(grep RESULT "$TMP/$t.notify" || true)
    jfig notify_fanout_1000_p50_us "$(field p50_us "$a")" "$(field p50_us "$b")" "lower is better"
    jfig notify_fanout_1000_p99_us "$(field p99_us "$a")" "$(field p99_us "$b")" "lower is better"
    jfig notify_rss_mb "$(mb "$(cat "$TMP/$o.notify.rss")")" "$(mb "$(cat "$TMP/$t.notify.rss")")"
    a=$(grep RESULT "$TMP/$o.storm" || true)
    b=$(grep RESULT "$TMP/$t.storm" || true)
    local note="NOTIFYs ours $(field notifies "$a"), theirs $(field notifies "$b")"
    [ "$(field settled "$b")" != 0 ] || note="$note; theirs had not settled after $JAVA_STORM_LIMIT_S s (a lower bound)"
    jfig "mass_join_${STORM_CONNS}_secs" "$(field storm_secs "$a")" "$(field storm_secs "$b")" "$note"
    jfig mass_join_rss_mb "$(mb "$(cat "$TMP/$o.storm.rss")")" "$(mb "$(cat "$TMP/$t.storm.rss")")"
    jfig start_to_listening_ms "$3" "$4" "target <= 0.02x: $(meets "$(rawratio "$3" "$4")" '<' 0.02)"
}

java_run() {
    if ! command -v "${JAVA:-java}" >/dev/null || ! command -v mvn >/dev/null; then
        echo "# java: skipped (java or mvn not installed; the Java peers need both)"
        return 0
    fi
    export ROOT
    local NREP=$((NOTIFY_REPEATS < 50 ? NOTIFY_REPEATS : 50))
    local v t ours_start
    for v in $JAVA_BENCH_VERSIONS; do
        local d="$TMP/java-$v" dq="$TMP/java-$v-quiet" line lq
        if ! line=$("$RQ" start "$v" "$d" 2>"$TMP/java-$v.err" | grep READY); then
            echo "# java $v: could not start ($(tail -1 "$TMP/java-$v.err"))"
            "$RQ" stop "$v" "$d" 2>/dev/null || true
            continue
        fi
        echo "# java $v: $line; JVM flags: $(cat "$d/jvm-flags.txt")"
        local ns br
        ns=$(echo "$line" | sed -n 's/.*namesrv=127\.0\.0\.1:\([0-9]*\).*/\1/p')
        br=$(echo "$line" | sed -n 's/.*broker=127\.0\.0\.1:\([0-9]*\).*/\1/p')
        local start_ms
        start_ms=$(echo "$line" | sed -n 's/.*namesrv_ms=\([0-9]*\).*/\1/p')
        java_topics "$br" "$ROUTE_TOPICS" || echo "# java $v: topic creation failed"
        for t in $(seq 1 100); do route_ok "$ns" && break; sleep 0.2; done
        # The quiet broker for the heartbeats: the same flags, NOTIFYs off.
        if ! lq=$("$RQ" start "$v" "$dq" notifyConsumerIdsChangedEnable=false 2>>"$TMP/java-$v.err" | grep READY); then
            echo "# java $v: the second (quiet) pair did not start"
            "$RQ" stop "$v" "$dq" 2>/dev/null || true
            "$RQ" stop "$v" "$d" || true
            continue
        fi
        local brq
        brq=$(echo "$lq" | sed -n 's/.*broker=127\.0\.0\.1:\([0-9]*\).*/\1/p')
        # rmqcoord, shaped like the peer (100 topics x 1 broker x 8 queues), measured
        # right before the peer while both are up, so both sides see the same machine.
        ours_start=$(field p50_ms "$("$STARTB" -f -r 5 "$DAEMON" "$TMP/jstart$v.db")")
        start_srv "jours$v" "$DAEMON" serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --store "$TMP/jours$v.db" \
            --log-level warn --auto-create-queues 0 --max-connections $((STORM_CONNS + 1100)) --idle-timeout-ms 0
        for t in $(seq 0 $((ROUTE_TOPICS - 1))); do
            curl -sf -X PUT -H 'Content-Type: application/json' --max-time 5 \
                -d '{"brokers":[{"brokerName":"broker-a","readQueueNums":8,"writeQueueNums":8}]}' \
                "http://127.0.0.1:$SRV_HTTP/api/topics/T$t" >/dev/null
        done
        j_side "$SRV_PORT" "$SRV_PORT" "$SRV_PID" "$SRV_PID" "$SRV_PORT" "$SRV_PID" "jo$v"
        stop_srv "$SRV_PID"
        j_side "$ns" "$br" "$(cat "$d/namesrv.pid")" "$(cat "$d/broker.pid")" "$brq" "$(cat "$dq/broker.pid")" "j$v"
        "$RQ" stop "$v" "$dq" || true
        "$RQ" stop "$v" "$d" || true
        echo "# rmqcoord vs Java $v (same run, same generator, rmqcoord measured just before the peer while both" \
            "were up; ratio = ours / theirs; start: the name server's)"
        java_print "jo$v" "j$v" "$ours_start" "$start_ms"
    done
}
