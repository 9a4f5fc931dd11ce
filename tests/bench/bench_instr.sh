# bench_instr.sh — sourced by scripts/bench (section "instr"): instructions
# per request, counted by valgrind's callgrind, which do not move with the
# machine's load and so compare across runs and commits.
#
# The daemon (or bench_echo, the baseline) runs under callgrind. For each
# request kind a load generator process sends N1 requests, then another
# sends N2, the counters zeroed before and dumped after each
# (callgrind_control -z / -d); the figure is (Ir(N2) - Ir(N1)) / (N2 - N1)
# with N the requests each generator saw answered:
# connecting, joining and closing cost the same in both and cancel, and what
# is left is the loop's whole cost of one more request (reading, parsing,
# handling, store batching, replying, before-sleep), syscalls excluded
# (callgrind counts user-space instructions only).
# Uses scripts/bench's helpers and variables (DAEMON ECHO LOAD TMP
# start_srv stop_srv fig ratio meets field).

INSTR_N1=${INSTR_N1:-500}
INSTR_N2=${INSTR_N2:-2500}

# cg_total FILE: the Ir total of a callgrind dump.
cg_total() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }

# cg_phase PID NAME CMD...: zeroes PID's counters, runs CMD (a load
# generator), dumps, and prints the dump's Ir total.
cg_phase() {
    local pid=$1 name=$2 before f
    shift 2
    callgrind_control -z "$pid" >/dev/null 2>&1
    "$@" >"$TMP/instr-$name.out" 2>&1 || {
        echo "# instr: $name load failed: $(tail -1 "$TMP/instr-$name.out")" >&2
        echo 0
        return
    }
    before=$(ls "$TMP"/cg.out.* 2>/dev/null | wc -l)
    callgrind_control -d "$pid" >/dev/null 2>&1
    local i
    for i in $(seq 1 100); do
        [ "$(ls "$TMP"/cg.out.* 2>/dev/null | wc -l)" -gt "$before" ] && break
        sleep 0.05
    done
    f=$(ls -t "$TMP"/cg.out.* | head -1)
    cg_total "$f"
}

# cg_per_request PID NAME CMD-with-@N@...: the two phases, the difference per request.
cg_per_request() {
    local pid=$1 name=$2 a b
    shift 2
    local c1=("${@//@N@/$INSTR_N1}") c2=("${@//@N@/$INSTR_N2}")
    a=$(cg_phase "$pid" "$name-1" "${c1[@]}")
    b=$(cg_phase "$pid" "$name-2" "${c2[@]}")
    # The requests answered (a window of several connections may overshoot -n by a few).
    local n1 n2
    n1=$(field requests "$(grep RESULT "$TMP/instr-$name-1.out" || true)")
    n2=$(field requests "$(grep RESULT "$TMP/instr-$name-2.out" || true)")
    awk -v a="$a" -v b="$b" -v n1="${n1:-0}" -v n2="${n2:-0}" \
        'BEGIN { if (a <= 0 || b <= a || n2 <= n1) print "n/a"; else printf "%.0f\n", (b - a) / (n2 - n1) }'
}

# The load generator against PORT: -W 0 (no warm-up), bounded by -n and -d.
instr_hb() { echo "$LOAD" hb -c 10 -w 1 -g 10 -n @N@ -W 0 -d 120 -T 120 "$@"; }

instr_run() {
    if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
        echo "# instr: skipped (valgrind/callgrind_control not installed)"
        return 0
    fi
    local CGV=(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out.%p")
    rm -f "$TMP"/cg.out.*
    # The daemon: heartbeats (10 connections x 10 groups), then route queries and a consumer list.
    start_srv cgd "${CGV[@]}" "$DAEMON" serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --store "$TMP/cgd.db" \
        --log-level warn --auto-create-queues 0 --idle-timeout-ms 0
    local pid=$SRV_PID port=$SRV_PORT
    local re ch rt li
    # shellcheck disable=SC2046
    re=$(cg_per_request "$pid" rehb $(instr_hb -i re 127.0.0.1:$port))
    # shellcheck disable=SC2046
    ch=$(cg_per_request "$pid" chhb $(instr_hb -a -i ch 127.0.0.1:$port))
    local brokers t
    brokers='{"brokerName":"broker-0","readQueueNums":8,"writeQueueNums":8}'
    for b in $(seq 1 9); do brokers="$brokers,{\"brokerName\":\"broker-$b\",\"readQueueNums\":8,\"writeQueueNums\":8}"; done
    for t in $(seq 0 99); do
        curl -sf -X PUT -H 'Content-Type: application/json' --max-time 20 \
            -d "{\"brokers\":[$brokers]}" "http://127.0.0.1:$SRV_HTTP/api/topics/T$t" >/dev/null
    done
    rt=$(cg_per_request "$pid" route "$LOAD" route -c 1 -w 1 -t 100 -n @N@ -W 0 -d 120 127.0.0.1:$port)
    # A group of 1,000 members for the consumer list (held open meanwhile).
    mkfifo "$TMP/cg-hold.ctl"
    "$LOAD" hold -c 1000 -g 1 -G L -d 600 -i cgl 127.0.0.1:$port <"$TMP/cg-hold.ctl" >"$TMP/cg-hold.out" &
    local hold=$!
    PIDS+=("$hold")
    exec 4>"$TMP/cg-hold.ctl"
    local i
    for i in $(seq 1 1200); do grep -q PHASE1 "$TMP/cg-hold.out" && break; sleep 0.1; done
    echo go >&4
    for i in $(seq 1 3000); do grep -q PHASE2 "$TMP/cg-hold.out" && break; sleep 0.1; done
    li=$(cg_per_request "$pid" list "$LOAD" list -c 1 -w 1 -q L0 -n @N@ -W 0 -d 120 127.0.0.1:$port)
    exec 4>&-
    wait "$hold" || true
    stop_srv "$pid"
    # The echo baseline: the same heartbeat frames, a reply of the daemon's size.
    local resp
    resp=$(field resp_bytes "$(grep RESULT "$TMP/instr-rehb-2.out" || true)")
    start_srv cge "${CGV[@]}" "$ECHO" --reply-bytes "${resp%.*}"
    local ec
    # shellcheck disable=SC2046
    ec=$(cg_per_request "$SRV_PID" echo $(instr_hb -i ec 127.0.0.1:$SRV_PORT))
    stop_srv "$SRV_PID"
    local r
    r=$(ratio "$re" "$ec")
    fig instr_reheartbeat "$re" instr/request "echo" "$ec instr/frame" "${r}x" \
        "target <= 3x echo: $(meets "$r" '<' 3.0001)"
    r=$(ratio "$ch" "$ec")
    fig instr_changed_heartbeat "$ch" instr/request "echo" "$ec instr/frame" "${r}x" \
        "target <= 10x echo: $(meets "$r" '<' 10.0001)"
    fig instr_route_query "$rt" instr/request "echo" "$ec instr/frame" "$(ratio "$rt" "$ec")x" \
        "100 topics x 10 brokers, reply $(field resp_bytes "$(grep RESULT "$TMP/instr-route-2.out" || true)") B"
    fig instr_consumer_list_1000 "$li" instr/request "echo" "$ec instr/frame" "$(ratio "$li" "$ec")x" \
        "1,000 ids"
    echo "# instr: callgrind, (Ir after $INSTR_N2 - Ir after $INSTR_N1 requests) / $((INSTR_N2 - INSTR_N1));" \
        "heartbeats name 10 groups; user-space instructions only (the kernel's share is not counted)"
}
