#!/usr/bin/env python3
"""The Go probe (real rocketmq-client-go v2 push consumers) against rmqcoord.

For each allocation strategy: one consumer, then a second joins, then a
process with two more (--count 2), then the second leaves. After each change
it waits until every consumer has rebalanced with the daemon's full member
list and holds what its strategy returned, then reports:
  - change -> converged time (daemon's event time to the last holdings change),
  - how soon each earlier member reacted (NOTIFY or timer),
  - whether the holdings are disjoint and complete,
  - whether they equal the daemon's prediction (GET .../allocation),
  - whether the daemon's consistency route (GET_CONSUMER_RUNNING_INFO) sees the
    same holdings.

Usage: smoke.py [--strategies AVG,CONSISTENT_HASH,...] [--json OUT]
Env: RMQCOORD_BIN (default /opt/rmqbase/rmqcoord), RMQCOORD_ARGS (more
`serve` flags, e.g. "--compat broker-5").
Exit 0 when every phase settled and the AVG/AVG_BY_CIRCLE results equal the
prediction; other differences are reported, not failed.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "bin", "probe")
# --probe PATH runs another client's probe (same command line); without
# --report-allocate support, a phase settles when the holdings equal the
# daemon's prediction instead of on the client's own allocate calls.
REPORTS_ALLOCATE = True
BIN = os.environ.get("RMQCOORD_BIN", "/opt/rmqbase/rmqcoord")
SETTLE_TIMEOUT_S = 30.0  # covers one full 20 s timer rebalance of the Go client
QUIET_S = 0.5


def now_ms():
    return int(time.time() * 1000)


class Daemon:
    def __init__(self, tmp, name="daemon", args=()):
        self.tmp = tmp
        self.errpath = os.path.join(tmp, name + ".err")
        self.err = open(self.errpath, "w")
        self.p = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--store", os.path.join(tmp, name + ".db")]
            + os.environ.get("RMQCOORD_ARGS", "").split() + list(args),
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError("daemon did not start: %r" % line)
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        self.remoting, self.http = f["remoting"], f["http"]

    def req(self, method, path, body=None, timeout=10):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request("http://%s%s" % (self.http, path), data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def get(self, path, **q):
        qs = urllib.parse.urlencode({k: v for k, v in q.items() if v is not None})
        return self.req("GET", path + ("?" + qs if qs else ""))

    def events(self, group):
        st, body = self.get("/api/events", group=group, limit=1000)
        return body.get("events", []) if st == 200 else []

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()


class Probe:
    def __init__(self, tmp, daemon, group, topic, instance, alloc, extra=(), count=1):
        self.name = instance
        args = [PROBE, "--namesrv", daemon.remoting, "--group", group, "--topic", topic,
                "--instance", instance, "--alloc", alloc] + (["--report-allocate"] if REPORTS_ALLOCATE else [])
        if count > 1:
            args += ["--count", str(count)]
        args += list(extra)
        self.err = open(os.path.join(tmp, "probe-%s.err" % instance), "w")
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True)
        self.lock = threading.Lock()
        self.events = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"event": "garbage", "line": line, "ts": now_ms()}
            with self.lock:
                self.events.append(ev)

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def client_ids(self):
        return [e["clientId"] for e in self.snapshot() if e["event"] == "started"]

    def stop(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("stop\n")
                self.p.stdin.flush()
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.t.join(5)
        self.err.close()
        return self.p.returncode


def qkey(q):
    return (q.get("broker", q.get("brokerName")), q["queueId"])


def view(probes, topic):
    """Per client id: started, last holdings of `topic` (+ts), allocate calls for `topic`."""
    out = {}
    for pr in probes:
        for e in pr.snapshot():
            cid = e.get("clientId")
            if cid is None:
                continue
            v = out.setdefault(cid, {"held": set(), "held_ts": None, "allocs": [], "probe": pr})
            if e["event"] == "holdings":
                held = {qkey(q) for q in e["queues"] if q["topic"] == topic}
                if held != v["held"] or v["held_ts"] is None:
                    v["held"], v["held_ts"] = held, e["ts"]
            elif e["event"] == "allocate" and e["topic"] == topic:
                v["allocs"].append(e)
            elif e["event"] == "shutdown":
                v["gone"] = True
    return {c: v for c, v in out.items() if not v.get("gone")}


def members(d, group):
    st, g = d.get("/api/groups/" + urllib.parse.quote(group, safe=""))
    if st != 200:
        return []
    return sorted(c["clientId"] for c in g.get("consumers", []))


def predict(d, sc, v):
    """The daemon's allocation for the live consumers `v` (client id -> state)."""
    group, topic = sc["group"], sc["topic"]
    path = "/api/groups/%s/allocation" % urllib.parse.quote(group, safe="")
    params = dict(topic=topic, strategy=sc["strategy"], **sc.get("query", {}))
    pred = {}
    if sc["strategy"] == "CONFIG":
        # one list per consumer: ask the daemon with each consumer's own list
        for cid, s in v.items():
            st, a = d.get(path, **dict(params, config=s["probe"].config))
            pred[cid] = {qkey(q) for q in a.get("allocation", {}).get(cid, [])} if st == 200 else None
    else:
        st, a = d.get(path, **params)
        for cid in v:
            pred[cid] = {qkey(q) for q in a.get("allocation", {}).get(cid, [])} if st == 200 else None
    return pred


def settle(d, sc, probes, since_ms, expect_members, timeout_s):
    group, topic = sc["group"], sc["topic"]
    """Wait until the daemon lists `expect_members` clients and every live
    consumer has, after since_ms, run its strategy with exactly the daemon's
    member list and holds what it returned. Returns (ok, view, members, detail)."""
    deadline = time.time() + timeout_s
    ok_since = None
    last = None
    while time.time() < deadline:
        mem = members(d, group)
        v = view(probes, topic)
        ok = len(mem) == expect_members and sorted(v) == mem
        if ok and not REPORTS_ALLOCATE:
            pred = predict(d, sc, v)
            ok = all(pred.get(c) == s["held"] for c, s in v.items())
        elif ok:
            for cid, s in v.items():
                fresh = [a for a in s["allocs"] if a["ts"] >= since_ms and sorted(a["cidAll"]) == mem]
                if not fresh or {qkey(q) for q in fresh[-1]["queues"]} != s["held"] \
                        or s["allocs"][-1] is not fresh[-1]:
                    ok = False
                    break
        state = (tuple(mem), tuple((c, tuple(sorted(s["held"]))) for c, s in sorted(v.items())))
        if ok:
            if ok_since is None or state != last:
                ok_since = time.time()
            elif time.time() - ok_since >= QUIET_S:
                return True, v, mem, ""
        else:
            ok_since = None
        last = state
        time.sleep(0.05)
    v = view(probes, topic)
    return False, v, members(d, group), "not settled in %.0f s" % timeout_s


def route_queues(d, topic):
    st, t = d.get("/api/topics/" + urllib.parse.quote(topic, safe=""))
    qs = set()
    for b in t.get("brokers", []):
        if b.get("perm", 6) & 4:
            for i in range(b["readQueueNums"]):
                qs.add((b["brokerName"], i))
    return qs


def go_model(sc, topic, cids, queues):
    """What rocketmq-client-go's own code computes, modelled from its source
    (consumer/strategy.go and stathat.com/c/consistent v1.0.0), for the
    strategies where it departs from Java. None where no model applies."""
    mq_all = sorted(queues, key=lambda q: (q[0].encode(), q[1]))  # Go: byte order
    cids = sorted(cids, key=lambda c: c.encode())
    out = {c: set() for c in cids}
    if sc["strategy"] == "CONSISTENT_HASH":
        ring = {}
        for c in cids:  # stathat: key "<replica><element>", CRC32-IEEE, later wins
            for r in range(int(sc.get("query", {}).get("virtualNodes", 10))):
                ring[zlib.crc32(("%d%s" % (r, c)).encode())] = c
        hashes = sorted(ring)
        for q in mq_all:
            h = zlib.crc32(("MessageQueue [topic=%s, brokerName=%s, queueId=%d]" % (topic, q[0], q[1])).encode())
            nxt = [x for x in hashes if x > h]  # strictly greater, wrap to the first
            out[ring[nxt[0] if nxt else hashes[0]]].add(q)
        return out
    if sc["strategy"] == "MACHINE_ROOM":
        idcs = set(sc["query"]["consumerIdcs"].split(","))
        pre = [q for q in mq_all if len(q[0].split("@")) == 2 and q[0].split("@")[0] in idcs]
        n = len(cids)
        mod, rem = len(pre) // n, len(pre) % n
        for i, c in enumerate(cids):
            res = mq_all[mod * i: mod * i + mod]  # Go indexes mqAll here, Java premqAll
            if rem > i:
                res.append(pre[i + mod * n])
            out[c] = set(res)
        return out
    return None


def phase_report(d, sc, probes, change_kind, change_cid, since_ms, expect_members):
    group, topic = sc["group"], sc["topic"]
    ok, v, mem, detail = settle(d, sc, probes, since_ms, expect_members,
                                sc.get("settle_s", SETTLE_TIMEOUT_S))
    evs = [e for e in d.events(group) if e["ts"] >= since_ms - 5000]
    ev = None
    for e in evs:
        if e["kind"] == change_kind and (change_cid is None or e["clientId"] in change_cid):
            ev = e
    change_ts = ev["ts"] if ev else since_ms
    last_change = max((s["held_ts"] or 0) for s in v.values()) if v else None
    if last_change is not None:
        last_change = max(last_change, change_ts)  # nothing changed after it: converged at once
    reactions = {}
    for cid, s in v.items():
        first = [a["ts"] for a in s["allocs"] if a["ts"] >= change_ts and sorted(a["cidAll"]) == mem]
        if first:
            reactions[cid] = first[0] - change_ts
    allq = route_queues(d, topic)
    owners = {}
    for cid, s in v.items():
        for q in s["held"]:
            owners.setdefault(q, []).append(cid)
    overlaps = sorted("%s:%d" % q for q, o in owners.items() if len(o) > 1)
    gaps = sorted("%s:%d" % q for q in allq if q not in owners)
    pred = predict(d, sc, v)
    pred_match = {}
    for cid, s in v.items():
        pred_match[cid] = pred[cid] == s["held"]
    st, cons = d.get("/api/groups/%s/consistency" % urllib.parse.quote(group, safe=""),
                     topic=topic, strategy=sc["strategy"], timeout_ms=3000,
                     **({} if sc["strategy"] == "CONFIG" else sc.get("query", {})))
    model = go_model(sc, topic, list(v), allq)
    if sc["strategy"] == "MACHINE_ROOM_NEARBY":
        # the Go client's nearby strategy is Averagely: ask the daemon for AVG
        st2, a2 = d.get("/api/groups/%s/allocation" % urllib.parse.quote(group, safe=""),
                        topic=topic, strategy="AVG")
        model = {cid: {qkey(q) for q in a2.get("allocation", {}).get(cid, [])} for cid in v} \
            if st2 == 200 else None
    running = {}
    if st == 200:
        for c in cons.get("clients", []):
            running[c["clientId"]] = {qkey(q) for q in (c.get("queues") or [])}
    running_agrees = {cid: running.get(cid) == s["held"] for cid, s in v.items()}
    fmt = lambda qs: sorted("%s:%d" % q for q in qs) if qs is not None else None
    return {
        "change": change_kind, "members": len(mem), "settled": ok, "detail": detail,
        "changeTs": change_ts, "convergedMs": (last_change - change_ts) if ok and last_change else None,
        "lastHoldingsChangeMs": (last_change - change_ts) if last_change else None,
        "firstRebalanceMs": reactions,
        "disjoint": not overlaps, "complete": not gaps, "overlaps": overlaps, "gaps": gaps,
        "matchesPrediction": all(pred_match.values()) if pred_match else False,
        "held": {cid: fmt(s["held"]) for cid, s in v.items()},
        "predicted": {cid: fmt(p) for cid, p in pred.items()},
        "runningInfoAgrees": running_agrees,
        "matchesGoModel": None if model is None else all(model.get(c) == s["held"] for c, s in v.items()),
        "consistencyStatus": st,
    }


def scenario(d, tmp, sc):
    group, topic = sc["group"], sc["topic"]
    # created up front, so that a daemon without auto-create (--compat broker-5) serves it too
    spec = {"brokers": sc["brokers"]} if sc.get("brokers") else {"readQueueNums": 8, "writeQueueNums": 8}
    st, body = d.req("PUT", "/api/topics/" + topic, spec)
    if st != 200:
        return {"strategy": sc["name"], "error": "PUT topic %s: %s %s" % (topic, st, body)}
    probes, phases = [], []
    res = {"strategy": sc["name"], "group": group, "topic": topic, "phases": phases}

    def start(inst, count=1):
        extra = list(sc.get("extra", []))
        cfg = sc.get("configs", {}).get(inst)
        if cfg is not None:
            extra += ["--config", cfg]
        pr = Probe(tmp, d, group, topic, inst, sc["strategy"], extra, count)
        pr.config = cfg or ""
        probes.append(pr)
        t0 = time.time()
        while time.time() - t0 < 15 and len(pr.client_ids()) < count and pr.p.poll() is None:
            time.sleep(0.02)
        return pr

    try:
        insts = sc["instances"]
        t = now_ms()
        start(insts[0])
        phases.append(phase_report(d, sc, probes, "join", None, t, 1))
        t = now_ms()
        b = start(insts[1])
        phases.append(phase_report(d, sc, probes, "join", b.client_ids(), t, 2))
        if len(insts) > 2:
            t = now_ms()
            c = start(insts[2], count=2)
            phases.append(phase_report(d, sc, probes, "join", c.client_ids(), t, 4))
            t = now_ms()
            gone = b.client_ids()
            b.stop()
            probes.remove(b)
            phases.append(phase_report(d, sc, probes, "close", gone, t, 3))
    finally:
        for pr in probes:
            rc = pr.stop()
            if rc != 0:
                res.setdefault("probeExit", {})[pr.name] = rc
    return res


def scenarios(run_id):
    two_brokers = [{"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4},
                   {"brokerName": "broker-b", "readQueueNums": 4, "writeQueueNums": 4}]
    rooms = [{"brokerName": "hz@broker-a", "readQueueNums": 4, "writeQueueNums": 4},
             {"brokerName": "sh@broker-b", "readQueueNums": 4, "writeQueueNums": 4}]
    base = ["ga", "gb", "gc"]
    out = []
    for s in ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]:
        out.append({"name": s, "strategy": s, "instances": base})
    # orderly: a queue is taken only once LOCK_BATCH_MQ grants it, and the Go
    # client never unlocks a queue it gives up (only at shutdown): the next
    # owner waits for the lease to expire, then for a rebalance (20 s timer).
    # Its own daemon with a 5 s lease keeps this short.
    out.append({"name": "AVG+orderly", "strategy": "AVG", "instances": base, "extra": ["--orderly"],
                "daemon": ["--lock-expiry-ms", "5000"], "settle_s": 45.0})
    # rooms by the '-' rule: clients m1-b (room b), m2-a (room a), m3-0/m3-1
    out.append({"name": "MACHINE_ROOM_NEARBY", "strategy": "MACHINE_ROOM_NEARBY",
                "instances": ["m1-b", "m2-a", "m3"], "brokers": two_brokers,
                "query": {"inner": "AVG"}})
    for room in ["hz", "sh"]:
        out.append({"name": "MACHINE_ROOM(%s)" % room, "strategy": "MACHINE_ROOM",
                    "instances": base, "brokers": rooms,
                    "extra": ["--consumer-idcs", room], "query": {"consumerIdcs": room}})
    out.append({"name": "CONFIG", "strategy": "CONFIG", "instances": ["ga", "gb"],
                "configs": {"ga": "broker-a:0,broker-a:1,broker-a:2", "gb": "broker-a:2,broker-a:5"}})
    for i, sc in enumerate(out):
        sc["group"] = "GID_GO_%s_%d" % (run_id, i)
        sc["topic"] = "TopicGo%s_%d" % (run_id, i)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategies", default="", help="comma list of scenario names (default all)")
    ap.add_argument("--json", help="write the full results here")
    ap.add_argument("--probe", help="another client's probe (default: the Go probe, built first)")
    a = ap.parse_args()
    global PROBE, REPORTS_ALLOCATE
    if a.probe:
        PROBE, REPORTS_ALLOCATE = os.path.abspath(a.probe), False
    else:
        subprocess.run([os.path.join(HERE, "build.sh")], check=True, stdout=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="go-smoke-") as tmp:
        d = Daemon(tmp)
        results = []
        derr = ""
        try:
            want = set(filter(None, a.strategies.split(",")))
            for sc in scenarios(str(os.getpid())):
                if want and sc["name"] not in want and sc["name"].split("(")[0] not in want:
                    continue
                if sc.get("daemon"):
                    own = Daemon(tmp, "daemon-" + sc["group"], sc["daemon"])
                    try:
                        r = scenario(own, tmp, sc)
                    finally:
                        own.stop()
                        derr += open(own.errpath).read()
                else:
                    r = scenario(d, tmp, sc)
                results.append(r)
                print_result(r)
        finally:
            d.stop()
            derr += open(d.errpath).read()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, default=sorted)
    bad = []
    for r in results:
        if "error" in r:
            bad.append("%s: %s" % (r["strategy"], r["error"]))
            continue
        for i, p in enumerate(r["phases"]):
            if not p["settled"]:
                bad.append("%s phase %d: %s" % (r["strategy"], i, p["detail"]))
            if r["strategy"] in ("AVG", "AVG_BY_CIRCLE", "AVG+orderly") and not p["matchesPrediction"]:
                bad.append("%s phase %d: holdings differ from the daemon's prediction" % (r["strategy"], i))
        if r.get("probeExit"):
            bad.append("%s: probe exit codes %s" % (r["strategy"], r["probeExit"]))
    if "ERROR" in derr or "AddressSanitizer" in derr:
        bad.append("daemon stderr: " + derr[-500:])
    print("\n%d passed, %d failed" % (len(results) - len({b.split(":")[0].split(" ")[0] for b in bad}),
                                      len({b.split(":")[0].split(" ")[0] for b in bad})))
    for b in bad:
        print("FAIL", b)
    return 1 if bad else 0


def print_result(r):
    if "error" in r:
        print("%-22s ERROR %s" % (r["strategy"], r["error"]))
        return
    for p in r["phases"]:
        print("%-22s %-5s n=%d settled=%s converged=%s/%sms firstRebalance=%s disjoint=%s complete=%s "
              "matchesPrediction=%s goModel=%s runningInfo=%s" % (
                  r["strategy"], p["change"], p["members"], p["settled"], p["convergedMs"],
                  p["lastHoldingsChangeMs"],
                  sorted(p["firstRebalanceMs"].values()), p["disjoint"], p["complete"],
                  p["matchesPrediction"], p["matchesGoModel"], all(p["runningInfoAgrees"].values())))
        if not p["matchesPrediction"]:
            for cid in sorted(p["held"]):
                print("    %-24s held %s" % (cid, p["held"][cid]))
                print("    %-24s pred %s" % ("", p["predicted"].get(cid)))
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
