"""The scenarios of the client matrix (run_matrix.py runs them): each is
fn(env, flavor, rec) and records one row per step of STEPS[name] with
rec.step / rec.ok / rec.fail (a Fail or Skip raised ends the scenario).
Also the tables that drive the run: STEPS, ORDER, SCENARIOS, UNSUPPORTED."""
import json
import signal
import threading
import time

from lib import (allocate_cli, ClusterView, Fail, Probe, Skip, check, commit_offsets, consistency, event_ts,
                 last_event_id, now_ms, query_offsets, wait_converged)

STRATEGIES = ["AVG", "AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH"]


class Flavor:
    def __init__(self, name, cmd, notify=True, bound_ms=5000, weight=1, env=None, note="", extra_args=()):
        self.name, self.cmd, self.notify, self.bound_ms, self.weight = name, cmd, notify, bound_ms, weight
        self.extra_args = list(extra_args)
        self.env = env or {}
        self.note = note



def base_args(d, group, topic, alloc="AVG"):
    return ["--namesrv", d.addr, "--group", group, "--topic", topic, "--alloc", alloc, "--client-ip", "127.0.0.1"]


def cons_check(d, g, t, ms, strategy="AVG", params="", empty_ok=False):
    """The daemon's /consistency must agree with the probes (a disagreement is a finding: the step fails)."""
    diffs, notes = consistency(d, g, t, ms, strategy, params, empty_running_info_ok=empty_ok)
    check(not diffs, "FINDING: /consistency disagrees with the probes: " + "; ".join(diffs[:6]))
    return "; ".join(notes)


def converge_step(rec, fl, view, group, topic, members, since_ms, strategy="AVG", params="", mode="cluster",
                  bound=True, timeout=None, expect_members=None, check_consistency=True, cons_daemon=None,
                  empty_ok=False):
    """Wait for convergence, check the bound and the daemon's consistency route; record a pass row."""
    timeout = timeout or max(15.0, fl.bound_ms / 1000.0 + 10)
    r = wait_converged(view, group, topic, members, strategy=strategy, params=params, mode=mode, timeout=timeout,
                       since_ms=since_ms, expect_members=expect_members)
    ms = r["ms"]
    if bound and ms is not None:
        check(ms < fl.bound_ms, "converged in %d ms, over the %d ms bound (%s)" % (
            ms, fl.bound_ms, "NOTIFY-driven clients" if fl.notify else "the client's rebalance timer"))
        rec.conv.append(ms)
    note = ""
    if check_consistency:
        try:
            note = cons_check(cons_daemon or view, group, topic, members, strategy, params, empty_ok)
        except Fail as e:
            # a finding about the daemon's view: this step fails, the scenario goes on
            rec.fail(str(e))
            return r
    rec.ok("%d ms" % ms if ms is not None else "", note)
    return r


# ---------------------------------------------------------------------------
# scenarios: fn(env, fl, rec); each may record several steps

def sc_lifecycle(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:8"])
    g, t = "G_life", "T"
    probes = []

    def members():
        return [(p, i) for p in probes if p.proc.poll() is None for i in p.instances]

    for n, label in ((0, "1 consumer holds all"), (1, "2nd joins"), (2, "3rd joins")):
        rec.step(label)
        p = Probe(env, fl, "c%d" % n, base_args(d, g, t))
        p.wait_started()
        probes.append(p)
        ts, _ = event_ts(d, g, "join", p.client_id(p.instances[0]), timeout=15)
        converge_step(rec, fl, d, g, t, members(), ts)
    rec.step("clean shutdown -> takeover")
    leaving = probes.pop()
    cid = leaving.client_id(leaving.instances[0])
    after = last_event_id(d, g)
    rc = leaving.stop()
    check(rc == 0, "probe exit code %s after stop" % rc)
    ts, _ = event_ts(d, g, "unregister", cid, after_id=after) if fl.name != "go" else _any_leave(d, g, cid, after)
    converge_step(rec, fl, d, g, t, members(), ts)
    rec.step("SIGKILL -> takeover")
    victim = probes.pop()
    cid = victim.client_id(victim.instances[0])
    after = last_event_id(d, g)
    victim.kill9()
    ts, _ = event_ts(d, g, "close", cid, after_id=after)
    converge_step(rec, fl, d, g, t, members(), ts)
    for p in probes:
        p.stop()


def _any_leave(d, g, cid, after):
    for kind in ("unregister", "close"):
        try:
            return event_ts(d, g, kind, cid, after_id=after, timeout=5)
        except Fail:
            pass
    raise Fail("no unregister/close event for %s" % cid)


def sc_sigstop(env, fl, rec):
    # Go's heartbeat period is fixed at 30 s: its channel expiry must be longer, so its run is slower
    fixed = getattr(fl, "fixed_timers", False)
    hb = 30000 if fixed else 1000
    expiry = 40000 if fixed else 3000
    d = env.daemon(extra=["--topic", "T:8"], channel_expiry_ms=expiry)
    g, t = "G_stop", "T"
    args = base_args(d, g, t) + ([] if fixed else ["--heartbeat-ms", str(hb)])
    a = Probe(env, fl, "a", args)
    b = Probe(env, fl, "b", args)
    a.wait_started()
    b.wait_started()
    ts, _ = event_ts(d, g, "join", b.client_id("b"), timeout=15)
    wait_converged(d, g, t, [(a, "a"), (b, "b")], timeout=20)
    rec.step("SIGSTOP -> expired, takeover")
    bid = b.client_id("b")
    after = last_event_id(d, g)
    stopped_at = now_ms()
    b.signal(signal.SIGSTOP)
    ts, _ = event_ts(d, g, "expire", bid, after_id=after, timeout=expiry / 1000 + 8)
    lag = ts - stopped_at
    check(lag >= expiry - hb - 100, "expired %d ms after SIGSTOP, before --channel-expiry-ms %d less one heartbeat "
          "period (%d ms)" % (lag, expiry, hb))
    r = wait_converged(d, g, t, [(a, "a")], timeout=15, since_ms=ts)
    check(r["ms"] < fl.bound_ms, "takeover %d ms after expiry, over %d" % (r["ms"], fl.bound_ms))
    rec.conv.append(r["ms"])
    cons_check(d, g, t, [(a, "a")])
    rec.ok("expired after %d ms, takeover %d ms" % (lag, r["ms"]))
    rec.step("SIGCONT -> rejoins")
    after = last_event_id(d, g)
    b.signal(signal.SIGCONT)
    ts, _ = event_ts(d, g, "join", bid, after_id=after, timeout=hb / 1000 + 15)
    converge_step(rec, fl, d, g, t, [(a, "a"), (b, "b")], ts)
    a.stop()
    b.stop()


def sc_restart(env, fl, rec):
    """A new process with the instance name (so the client id) of one that is gone: killed, or still
    connected but frozen. Once settled the group has no stale member and no overlap."""
    fixed = getattr(fl, "fixed_timers", False)
    hb = 30000 if fixed else 1000  # Go: heartbeats fixed at 30 s, so a longer channel expiry
    expiry = 40000 if fixed else 3000
    d = env.daemon(extra=["--topic", "T:8"], channel_expiry_ms=expiry)
    g, t = "G_restart", "T"
    args = base_args(d, g, t) + ([] if fixed else ["--heartbeat-ms", str(hb)])
    a = Probe(env, fl, "a", args)
    b = Probe(env, fl, "b", args)
    a.wait_started()
    b.wait_started()
    bid = b.client_id("b")
    wait_converged(d, g, t, [(a, "a"), (b, "b")], timeout=20)
    rec.step("SIGKILL, restart same instance name")
    after = last_event_id(d, g)
    b.kill9()
    b2 = Probe(env, fl, "b", args)
    b2.wait_started()
    check(b2.client_id("b") == bid, "same instance name, new client id %s (was %s)" % (b2.client_id("b"), bid))
    ts, _ = event_ts(d, g, "join", bid, after_id=after, timeout=20)
    converge_step(rec, fl, d, g, t, [(a, "a"), (b2, "b")], ts)
    rec.step("frozen old + restart same name, then old killed")
    after = last_event_id(d, g)
    b2.signal(signal.SIGSTOP)
    frozen_ms = now_ms()
    b3 = Probe(env, fl, "b", args)
    b3.wait_started()
    check(b3.client_id("b") == bid, "same instance name, new client id %s (was %s)" % (b3.client_id("b"), bid))
    twice = d.members(g).count(bid) > 1  # both channels carry the id until the frozen one expires
    # settled once the frozen channel has expired: the id once, the new process holds its share,
    # the survivor lost nothing to a ghost
    ms = [(a, "a"), (b3, "b")]
    r = wait_converged(d, g, t, ms, timeout=expiry / 1000.0 + 25)
    exp = [e for e in d.events(g) if e["id"] > after and e["kind"] == "expire"]
    check(exp, "no expire event for the frozen channel %.0f s after SIGSTOP" % ((now_ms() - frozen_ms) / 1000.0))
    # its end (expiry, then SIGKILL) must not take the live client id out of the group
    time.sleep(1.5)
    b2.kill9()
    wait_converged(d, g, t, ms, timeout=15)
    kinds = [e["kind"] for e in d.events(g) if e["id"] > after]
    cons_check(d, g, t, ms)
    rec.ok("settled %d ms after SIGSTOP" % max(0, r["at"] - frozen_ms),
           "%smembership events: %s" % ("the id counted twice until the frozen channel expired (%d ms); " % (
               exp[0]["ts"] - frozen_ms) if twice else "", ", ".join(kinds)))
    a.stop()
    b3.stop()


def sc_subscribe(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:8", "--topic", "T2:4"])
    g, t = "G_sub", "T"
    a = Probe(env, fl, "a", base_args(d, g, t))
    a.wait_started()
    b, dropped = start_with_fallback(env, fl, "b", base_args(d, g, t) + ["--subscribe2", "T2", "--subscribe2-after-ms", "8000"],
                                     ["--poll-nameserver-ms", "1000", "--rebalance-ms", "2000"])
    bi = b.instances[0]
    rec.step("subscription change -> others notified")
    wait_converged(d, g, t, [(a, "a"), (b, bi)], timeout=20)
    samples, stop = [], threading.Event()

    def sample():
        for _ in range(2000):
            if stop.is_set():
                return
            samples.append((now_ms(), notifications(d)))
            time.sleep(0.05)
    th = threading.Thread(target=sample, daemon=True)
    after_id = last_event_id(d, g)  # (ali-ons' first heartbeats already flip the table at join)
    th.start()
    try:
        # a client that sends its next heartbeat only on its own timer (Go: 30 s) tells the daemon late
        ts, _ = event_ts(d, g, "subscription", None, after_id=after_id,
                         timeout=40 if getattr(fl, "fixed_timers", False) else 15)
        time.sleep(1.5)
    finally:
        stop.set()
        th.join(2)
    before = [c for t_, c in samples if t_ < ts - 20]
    check(before, "the subscription event (ts %d) came before the group had converged" % ts)
    after = [c for t_, c in samples if t_ > ts + 1000]
    sent = (after[-1] - before[-1]) if before and after else None
    n_a_before = [x for x in a.state["a"]["notifies"] if x >= ts - 50]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not [x for x in a.state["a"]["notifies"] if x >= ts - 50]:
        if not any(p.state[i]["notifies"] for p in (a, b) for i in p.instances):
            break  # this probe prints no notify events
        time.sleep(0.05)
    got = [x for x in a.state["a"]["notifies"] if x >= ts - 50]
    if any(p.state[i]["notifies"] for p in (a, b) for i in p.instances) or got:
        check(got, "a printed no NOTIFY within 5 s of the subscription event (ts %d)" % ts)
        figure = "a notified %d ms after the subscription event" % (got[0] - ts)
    else:
        # probe without notify events: the daemon's NOTIFY counter must have moved by the group's 2 channels
        check(sent is not None and sent >= 2, "daemon's notificationsSent moved by %s around the subscription event" % sent)
        figure = "daemon sent %d NOTIFY (this probe prints no notify events)" % sent
    rec.ok(figure)
    rec.step("subscriber holds its share of T2")
    if dropped:
        a.stop()
        b.stop()
        raise Skip("needs --poll-nameserver-ms/--rebalance-ms (else up to 30 s route poll + 20 s timer): " + dropped)
    deadline = time.monotonic() + 15
    why = ""
    while time.monotonic() < deadline:
        alloc = d.allocation(g, "T2", "AVG")
        want = alloc.get(b.client_id(bi), frozenset())
        have = b.held(bi, "T2")
        if have == want and want:
            break
        why = "b holds %s of T2, allocation says %s" % (sorted(have or []), sorted(want))
        time.sleep(0.2)
    else:
        raise Fail(why)
    check(not a.held("a", "T2"), "a (not subscribed to T2) holds T2 queues %s" % sorted(a.held("a", "T2")))
    rec.ok("%d queue(s) of T2" % len(want))
    a.stop()
    b.stop()


def notifications(d):
    st, j = d.http("GET", "/healthz")
    return j.get("notificationsSent", 0) if st == 200 else 0


def sc_broadcast(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:8"])
    g, t = "G_bc", "T"
    rec.step("broadcast: every member holds all")
    p = Probe(env, fl, "bc", base_args(d, g, t) + ["--broadcast"], count=2)
    p.wait_started()
    ms = [(p, i) for i in p.instances]
    ts, _ = event_ts(d, g, "join", p.client_id(p.instances[-1]), timeout=15)
    r = wait_converged(d, g, t, ms, mode="broadcast", timeout=20, since_ms=ts)
    info = d.get("/api/groups/%s" % g)
    check(info.get("messageModel") == "BROADCASTING", "daemon says messageModel %s" % info.get("messageModel"))
    try:
        cons_check(d, g, t, ms)
        rec.ok("%d ms" % r["ms"])
    except Fail as e:
        rec.fail(str(e))
    p.stop()


def sc_offsets(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:4"])
    g, t = "G_off", "T"
    want = {("broker-a", i): 1000 + 7 * i for i in range(4)}
    commit_offsets(d, g, t, want)

    def run_once(label):
        rec.step(label)
        p = Probe(env, fl, "off", base_args(d, g, t))
        p.wait_started()
        deadline = time.monotonic() + 15
        got = None
        while time.monotonic() < deadline:
            with p.lock:
                offs = p.state["off"]["offsets"]
            if offs is not None:
                got = {(b, i): o for (tt, b, i), o in offs.items() if tt == t}
                if len(got) == 4:
                    break
            time.sleep(0.05)
        if got is None and not any(e.get("event") == "offsets" for e in p.events):
            p.stop()
            raise Skip("probe prints no offsets events; daemon-side only: %s" % query_offsets(d, g, t, want))
        check(got == want, "client starts from %s, committed %s" % (got, want))
        rc = p.stop()
        check(rc == 0, "probe exit %s" % rc)
        stored = query_offsets(d, g, t, want)
        check(stored == want, "after the client's shutdown the daemon answers %s, want %s" % (stored, want))
        rec.ok("4/4 queues resume at the committed offset")

    run_once("offsets: first client")
    run_once("offsets resume after client restart")
    rec.step("offsets resume after daemon restart")
    rc = d.stop()
    check(rc == 0, "daemon exit %s on SIGTERM" % rc)
    d.start(same_port=True)
    run_once("offsets resume after daemon restart")


def sc_strategies(env, fl, rec):
    d = env.daemon()
    d.put_topic("TS", [("broker-a", 4), ("broker-b", 4)])
    d.put_topic("TM", [("roomA@broker-a", 4), ("roomB@broker-b", 4)])
    d.put_topic("TN", [("bk-1", 4), ("bk-2", 4)])
    cases = {
        "AVG": ("TS", "", [], "cluster"),
        "AVG_BY_CIRCLE": ("TS", "", [], "cluster"),
        "CONSISTENT_HASH": ("TS", "", [], "cluster"),
        "CONFIG": ("TS", "&config=broker-a:0,broker-b:1", ["--config", "broker-a:0,broker-b:1"], "alloc"),
        "MACHINE_ROOM": ("TM", "&consumerIdcs=roomA", ["--consumer-idcs", "roomA"], "alloc"),
        "MACHINE_ROOM_NEARBY": ("TN", "&inner=AVG", [], "cluster"),
    }
    cli_opts = {
        "CONFIG": {"config": [{"topic": "TS", "brokerName": "broker-a", "queueId": 0},
                              {"topic": "TS", "brokerName": "broker-b", "queueId": 1}]},
        "MACHINE_ROOM": {"consumerIdcs": ["roomA"]},
        "MACHINE_ROOM_NEARBY": {"inner": "AVG"},
    }
    for s in STRATEGIES:
        topic, params, extra, mode = cases[s]
        rec.step("strategy %s" % s)
        g = "G_%s" % s.lower()
        try:
            p = Probe(env, fl, s.lower().replace("_", ""), base_args(d, g, topic, s) + extra, count=3)
            p.wait_started()
        except Skip as e:
            rec.skip(str(e))
            continue
        except Fail as e:
            rec.fail(str(e))
            continue
        ms = [(p, i) for i in p.instances]
        kd = KNOWN_DIFF.get((fl.name, s))
        try:
            ts, _ = event_ts(d, g, "join", p.client_id(p.instances[-1]), timeout=15)
            if kd:
                queues = frozenset(d.topic_queues(topic))
                r = wait_converged(d, g, topic, ms, strategy=None, mode=mode if s != "MACHINE_ROOM" else "none",
                                   timeout=20, since_ms=ts)
                alloc = d.allocation(g, topic, s, params)
                same = all(p.held(i, topic) == alloc.get(p.client_id(i), frozenset()) for i in p.instances)
                held = {p.client_id(i): sorted(p.held(i, topic)) for i in p.instances}
                rec.ok("%d ms" % r["ms"], "%s; same as Java's: %s; holdings %s" % (
                    kd, "yes" if same else "no",
                    " ".join("%s:%d" % (cid.split("@")[1], len(h)) for cid, h in sorted(held.items()))))
                p.stop()
                continue
            r = wait_converged(d, g, topic, ms, strategy=s, params=params, mode=mode, timeout=20, since_ms=ts)
            held = {p.client_id(i): sorted(p.held(i, topic)) for i in p.instances}
            cli = allocate_cli(s, topic, d.topic_queues(topic), list(held), cli_opts.get(s))
            check(all(sorted(cli.get(c, [])) == h for c, h in held.items()),
                  "rmqcoord allocate says %s, the clients hold %s" % ({c: sorted(v) for c, v in cli.items()}, held))
            if s == "CONFIG":
                for cid, h in held.items():
                    check(h == [("broker-a", 0), ("broker-b", 1)], "%s holds %s, configured broker-a:0,broker-b:1" % (cid, h))
            if s == "MACHINE_ROOM":
                allh = [x for h in held.values() for x in h]
                check(all(b.startswith("roomA@") for b, _ in allh), "a roomB queue is held: %s" % held)
                check(len(allh) == 4, "roomA's 4 queues not all held: %s" % held)
            cons_check(d, g, topic, ms, s, params)
            rec.ok("%d ms" % r["ms"], " ".join("%s:%d" % (cid.split("@")[1], len(h)) for cid, h in sorted(held.items())))
        except Fail as e:
            rec.fail(str(e))
        p.stop()


def sc_orderly(env, fl, rec):
    fixed = getattr(fl, "fixed_timers", False)
    # Java renews its locks every 1 s here (PROBE_JAVA_EXTRA) so a 3 s lease is safe; Go renews every 20 s
    # and sends no UNLOCK_BATCH_MQ for queues it gives up, so a new owner waits for the lease (10 s) and
    # its next 20 s rebalance
    d = env.daemon(extra=["--topic", "T:8", "--lock-expiry-ms", "10000" if fixed else "3000"])
    wait_s = 45 if fixed else 25
    g, t = "G_ord", "T"
    args = base_args(d, g, t) + ["--orderly"] + ([] if fixed else ["--rebalance-ms", "2000"])
    # the lease is 3 s here, so the Java client must renew its locks more often than its 20 s default
    xenv = {"PROBE_JAVA_EXTRA": "-Drocketmq.client.rebalance.lockInterval=1000"}
    rec.step("orderly: join, all held queues locked")
    a = Probe(env, fl, "oa", args, count=2, extra_env=xenv)
    a.wait_started()
    b = Probe(env, fl, "ob", args, extra_env=xenv)
    b.wait_started()
    ms = [(a, i) for i in a.instances] + [(b, "ob")]
    ts, _ = event_ts(d, g, "join", b.client_id("ob"), timeout=15)
    r = wait_converged(d, g, t, ms, timeout=wait_s, since_ms=ts)
    note = ""
    for p, i in ms:
        if not p.prints_locked:
            note = "this probe does not print the lock state: held = locked assumed"
            continue
        with p.lock:
            qs, locked = p.state[i]["queues"], p.state[i]["locked"]
        check({x for x in qs if x[0] == t} <= set(locked), "%s holds unlocked queues" % i)
    if fixed:
        note = (note + "; " if note else "") + "Go sends no UNLOCK_BATCH_MQ for queues it gives up: the new owner locks after the lease, at its next 20 s rebalance"
    rec.ok("%d ms" % r["ms"], note)
    rec.step("orderly: clean leave -> takeover")
    after = last_event_id(d, g)
    bid = b.client_id("ob")
    b.stop()
    ts, _ = _any_leave(d, g, bid, after)
    r = wait_converged(d, g, t, [(a, i) for i in a.instances], timeout=wait_s, since_ms=ts)
    rec.ok("%d ms" % r["ms"])
    rec.step("orderly: SIGKILL -> takeover after lock expiry")
    if fixed:
        rec.skip("needs --rebalance-ms, which this client cannot set (takeover would wait for its 20 s timer)")
        worst = double_locks([(a, i) for i in a.instances] + [(b, "ob")], t)
        rec.step("orderly: never two holders of a locked queue")
        check(worst["ms"] <= 60, "queue %s locked-held by two consumers for %d ms (%s)" % (worst["queue"], worst["ms"], worst["who"]))
        rec.ok("max apparent overlap %d ms (sampling 20 ms)" % worst["ms"])
        a.stop()
        return
    c = Probe(env, fl, "oc", args, extra_env=xenv)
    c.wait_started()
    ms = [(a, i) for i in a.instances] + [(c, "oc")]
    wait_converged(d, g, t, ms, timeout=25)
    after = last_event_id(d, g)
    cid = c.client_id("oc")
    c.kill9()
    ts, _ = event_ts(d, g, "close", cid, after_id=after)
    r = wait_converged(d, g, t, [(a, i) for i in a.instances], timeout=30, since_ms=ts)
    rec.ok("%d ms (lock lease 3 s, client rebalance 2 s)" % r["ms"])
    rec.step("orderly: never two holders of a locked queue")
    worst = double_locks([(a, i) for i in a.instances] + [(b, "ob"), (c, "oc")], t)
    check(worst["ms"] <= 60, "queue %s locked-held by two consumers for %d ms (%s)" % (worst["queue"], worst["ms"], worst["who"]))
    rec.ok("max apparent overlap %d ms (sampling 20 ms)" % worst["ms"])
    a.stop()


def double_locks(members, topic):
    """Longest interval during which two consumers both printed the same queue as held and locked."""
    evs = []
    for p, i in members:
        with p.lock:
            hist = list(p.state[i]["history"])
        end = p.state[i]["stopping"] or p.state[i]["shutdown"]
        for ts, qs, locked in hist:
            if end and ts > end:
                break
            evs.append((ts, i, frozenset(x for x in (locked if p.prints_locked else qs) if x[0] == topic)))
        if p.proc.poll() is not None and p.proc.returncode not in (0,):
            pass  # SIGKILLed: its last holdings stand until the close (lease), not counted after kill
        if end:
            evs.append((end, i, frozenset()))
    evs.sort(key=lambda e: e[0])
    cur, since, worst = {}, {}, {"ms": 0, "queue": None, "who": ""}
    for ts, i, locked in evs:
        cur[i] = locked
        owners = {}
        for who, s in cur.items():
            for x in s:
                owners.setdefault(x, []).append(who)
        for x, ws in owners.items():
            if len(ws) > 1:
                since.setdefault(x, (ts, ws))
            elif x in since:
                t0, ws0 = since.pop(x)
                if ts - t0 > worst["ms"]:
                    worst = {"ms": ts - t0, "queue": x, "who": ",".join(ws0)}
        for x in list(since):
            if x not in owners:
                t0, ws0 = since.pop(x)
                if ts - t0 > worst["ms"]:
                    worst = {"ms": ts - t0, "queue": x, "who": ",".join(ws0)}
    return worst


def sc_hundred(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:64"])
    g, t = "G_100", "T"
    rec.step("100 consumers in one process converge")
    t0 = now_ms()
    p = Probe(env, fl, "h", base_args(d, g, t), count=100)
    p.wait_started(timeout=150)
    started = now_ms() - t0
    ts, _ = event_ts(d, g, "join", p.client_id(p.instances[-1]), timeout=15)
    ms = [(p, i) for i in p.instances]
    r = wait_converged(d, g, t, ms, timeout=60, since_ms=ts, hold=2.0)
    cons_check(d, g, t, ms)
    first = min(e["ts"] for e in d.events(g) if e["kind"] == "join")
    rec.ok("first join -> converged %d ms" % (r["at"] - first),
           "all 100 started in %d ms; last join -> converged %d ms" % (started, r["ms"]))
    rec.step("100 consumers: clean shutdown")
    rc = p.stop(timeout=120)
    check(rc == 0, "exit %s" % rc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and d.members(g):
        time.sleep(0.2)
    check(not d.members(g), "members left after shutdown: %d" % len(d.members(g)))
    rec.ok("group empty")


def sc_cluster(env, fl, rec):
    ns = env.daemon("ns", extra=["--role", "namesrv"])
    ba = env.daemon("ba", extra=["--role", "broker", "--namesrv", ns.addr, "--broker-name", "broker-a", "--topic", "TC:4",
                                 "--register-interval-ms", "1000"])
    bb = env.daemon("bb", extra=["--role", "broker", "--namesrv", ns.addr, "--broker-name", "broker-b", "--topic", "TC:4",
                                 "--register-interval-ms", "1000"])
    g, t = "G_cl", "TC"
    view = ClusterView([ba, bb])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(ns.get("/api/cluster").get("brokers", [])) < 2:
        time.sleep(0.1)
    rec.step("cluster (namesrv + 2 brokers): join")
    args = ["--namesrv", ns.addr, "--group", g, "--topic", t, "--alloc", "AVG", "--client-ip", "127.0.0.1"]
    a = Probe(env, fl, "ca", args, count=2)
    a.wait_started()
    b = Probe(env, fl, "cb", args)
    b.wait_started()
    ms = [(a, i) for i in a.instances] + [(b, "cb")]
    ts, _ = event_ts(ba, g, "join", b.client_id("cb"), timeout=15)
    r = wait_converged(view, g, t, ms, timeout=25, since_ms=ts)
    agree = ns.get("/api/cluster?group=%s" % g)
    check(agree.get("agree") is True, "name server's /api/cluster?group says brokers disagree: %s" % json.dumps(agree)[:400])
    diffs = []
    for br in (ba, bb):
        diffs += ["%s: %s" % (br.name, x) for x in consistency(br, g, t, ms)[0]]
    rec.conv.append(r["ms"])
    if diffs:
        rec.fail("FINDING: /consistency disagrees with the probes: " + "; ".join(diffs[:6]))
    else:
        rec.ok("%d ms" % r["ms"])
    rec.step("cluster: SIGKILL -> takeover on both brokers")
    after = last_event_id(ba, g)
    bid = b.client_id("cb")
    b.kill9()
    ts, _ = event_ts(ba, g, "close", bid, after_id=after)
    r = wait_converged(view, g, t, [(a, i) for i in a.instances], timeout=25, since_ms=ts)
    check(r["ms"] < fl.bound_ms, "takeover %d ms over %d" % (r["ms"], fl.bound_ms))
    rec.conv.append(r["ms"])
    agree = ns.get("/api/cluster?group=%s" % g)
    check(agree.get("agree") is True, "name server's /api/cluster?group says brokers disagree: %s" % json.dumps(agree)[:400])
    rec.ok("%d ms" % r["ms"])
    a.stop()


def sc_serialize(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:8"])
    g, t = "G_ser", "T"
    rec.step("ROCKETMQ binary headers: join")
    a = Probe(env, fl, "sa", base_args(d, g, t) + ["--serialize", "ROCKETMQ"])
    a.wait_started()
    b = Probe(env, fl, "sb", base_args(d, g, t) + ["--serialize", "ROCKETMQ"])
    b.wait_started()
    ts, _ = event_ts(d, g, "join", b.client_id("sb"), timeout=15)
    converge_step(rec, fl, d, g, t, [(a, "sa"), (b, "sb")], ts)
    rec.step("ROCKETMQ binary headers: leave")
    after = last_event_id(d, g)
    bid = b.client_id("sb")
    b.stop()
    ts, _ = _any_leave(d, g, bid, after)
    converge_step(rec, fl, d, g, t, [(a, "sa")], ts)
    a.stop()


def sc_litepull(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:8"])
    g, t = "G_lite", "T"
    rec.step("lite pull (subscribe): join")
    a = Probe(env, fl, "la", base_args(d, g, t) + ["--lite-pull"])
    a.wait_started()
    b = Probe(env, fl, "lb", base_args(d, g, t) + ["--lite-pull"])
    b.wait_started()
    ts, _ = event_ts(d, g, "join", b.client_id("lb"), timeout=15)
    converge_step(rec, fl, d, g, t, [(a, "la"), (b, "lb")], ts, empty_ok=(fl.name == "java-4.9.8"))
    rec.step("lite pull: leave")
    after = last_event_id(d, g)
    bid = b.client_id("lb")
    b.stop()
    ts, _ = _any_leave(d, g, bid, after)
    converge_step(rec, fl, d, g, t, [(a, "la")], ts, empty_ok=(fl.name == "java-4.9.8"))
    a.stop()


def sc_hbv2(env, fl, rec):
    d = env.daemon(extra=["--topic", "T:8"])
    g, t = "G_v2", "T"
    rec.step("heartbeat v2: join")
    args = base_args(d, g, t) + ["--heartbeat-v2", "--heartbeat-ms", "1000"]
    a = Probe(env, fl, "va", args)
    a.wait_started()
    b = Probe(env, fl, "vb", args)
    b.wait_started()
    ts, _ = event_ts(d, g, "join", b.client_id("vb"), timeout=15)
    converge_step(rec, fl, d, g, t, [(a, "va"), (b, "vb")], ts)
    rec.step("heartbeat v2: withoutSub beats keep the group")
    n0 = len(d.events(g))
    hb0 = d.get("/healthz").get("heartbeats", 0)
    time.sleep(3.5)
    hbs = d.get("/healthz").get("heartbeats", 0) - hb0
    check(hbs >= 4, "only %d heartbeats in 3.5 s from 2 clients beating every 1 s" % hbs)
    evs = d.events(g)[n0:]
    check(not evs, "membership events during steady v2 heartbeats: %s" % [(e["kind"], e["clientId"]) for e in evs])
    subs = d.get("/api/groups/%s" % g).get("subscriptions", [])
    check(any(s["topic"] == t for s in subs), "subscription table lost %s after withoutSub heartbeats: %s" % (t, subs))
    rec.ok("%d v2 beats in 3.5 s: 0 events" % hbs)
    rec.step("heartbeat v2: leave")
    after = last_event_id(d, g)
    bid = b.client_id("vb")
    b.stop()
    ts, _ = _any_leave(d, g, bid, after)
    converge_step(rec, fl, d, g, t, [(a, "va")], ts)
    a.stop()


def sc_mixed(env, fls, rec):
    d = env.daemon(extra=["--topic", "T:8"])
    g, t = "G_mix", "T"
    rec.step("mixed group, AVG: join")
    probes = []
    last = None
    for f in fls:
        p = Probe(env, f, "m-" + f.name.replace(".", ""), base_args(d, g, t))
        probes.append(p)
    for p in probes:
        p.wait_started()
    joins = [event_ts(d, g, "join", p.client_id(p.instances[0]), timeout=15)[0] for p in probes]
    last = max(joins)
    bound = max(f.bound_ms for f in fls)
    fake = Flavor("mixed", [], bound_ms=bound)
    converge_step(rec, fake, d, g, t, [(p, p.instances[0]) for p in probes], last)
    rec.rows[-1]["detail"] = "+".join(f.name for f in fls)
    rec.step("mixed group: first leaves")
    after = last_event_id(d, g)
    lv = probes.pop(0)
    cid = lv.client_id(lv.instances[0])
    lv.stop()
    ts, _ = _any_leave(d, g, cid, after)
    converge_step(rec, fake, d, g, t, [(p, p.instances[0]) for p in probes], ts)
    for p in probes:
        p.stop()


# strategies whose client implementation is documented (README) to differ from
# Java's, which the daemon's /allocation computes: checked for disjoint and
# complete holdings only, the comparison with Java's result is reported
KNOWN_DIFF = {
    ("go", "CONSISTENT_HASH"): "rocketmq-client-go's CONSISTENT_HASH differs from Java's (README)",
    ("go", "MACHINE_ROOM"): "rocketmq-client-go's MACHINE_ROOM differs from Java's (README)",
    ("go", "MACHINE_ROOM_NEARBY"): "rocketmq-client-go's AllocateByMachineNearby takes no room resolver (it allocates averagely)",
}


def start_with_fallback(env, fl, name, args, optional, **kw):
    """Start a probe with optional args; when the probe refuses them, start it
    without. Returns (probe, reason or None)."""
    p = Probe(env, fl, name, args + optional, **kw)
    try:
        p.wait_started()
        return p, None
    except Skip as e:
        p.proc.wait(5) if p.proc.poll() is not None else p.kill9()
        p2 = Probe(env, fl, name + "x", args, **kw)
        p2.wait_started()
        return p2, str(e)


# the steps (report rows) of each scenario, in report order
STEPS = {
    "lifecycle": ["1 consumer holds all", "2nd joins", "3rd joins", "clean shutdown -> takeover", "SIGKILL -> takeover"],
    "sigstop": ["SIGSTOP -> expired, takeover", "SIGCONT -> rejoins"],
    "restart": ["SIGKILL, restart same instance name", "frozen old + restart same name, then old killed"],
    "subscribe": ["subscription change -> others notified", "subscriber holds its share of T2"],
    "broadcast": ["broadcast: every member holds all"],
    "offsets": ["offsets: first client", "offsets resume after client restart", "offsets resume after daemon restart"],
    "strategies": ["strategy %s" % x for x in STRATEGIES],
    "orderly": ["orderly: join, all held queues locked", "orderly: clean leave -> takeover",
                "orderly: SIGKILL -> takeover after lock expiry", "orderly: never two holders of a locked queue"],
    "hundred": ["100 consumers in one process converge", "100 consumers: clean shutdown"],
    "cluster": ["cluster (namesrv + 2 brokers): join", "cluster: SIGKILL -> takeover on both brokers"],
    "serialize": ["ROCKETMQ binary headers: join", "ROCKETMQ binary headers: leave"],
    "litepull": ["lite pull (subscribe): join", "lite pull: leave"],
    "hbv2": ["heartbeat v2: join", "heartbeat v2: withoutSub beats keep the group", "heartbeat v2: leave"],
    "mixed": ["mixed group, AVG: join", "mixed group: first leaves"],
}
ORDER = [x for k in ("lifecycle", "sigstop", "restart", "subscribe", "broadcast", "offsets", "strategies", "orderly", "cluster",
                     "hundred", "serialize", "litepull", "hbv2", "mixed") for x in STEPS[k]]


# (name, fn, JVMs at once)
SCENARIOS = [
    ("hundred", sc_hundred, 3),
    ("lifecycle", sc_lifecycle, 3),
    ("sigstop", sc_sigstop, 2),
    ("restart", sc_restart, 2),
    ("subscribe", sc_subscribe, 2),
    ("strategies", sc_strategies, 1),
    ("orderly", sc_orderly, 3),
    ("cluster", sc_cluster, 2),
    ("offsets", sc_offsets, 1),
    ("broadcast", sc_broadcast, 1),
    ("serialize", sc_serialize, 2),
    ("litepull", sc_litepull, 2),
    ("hbv2", sc_hbv2, 2),
]

# the longest jobs (seconds on a quiet machine; Go waits for its fixed 20 s rebalance and 30 s heartbeat
# timers, and for a 40 s channel expiry): started first so the run does not end on a long tail of one small job
LONG_FIRST = [("orderly", "go"), ("subscribe", "go"), ("sigstop", "go"), ("restart", "go"), ("strategies", "java-5.3.3"),
              ("strategies", "java-4.9.8")]

# options a flavor's probe does not have (the step is reported skipped with the reason)
UNSUPPORTED = {
    ("java-4.9.8", "hbv2"): "heartbeat v2 exists from client 5.x (4.9.8 has no useHeartbeatV2)",
}

