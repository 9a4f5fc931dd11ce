#!/usr/bin/env python3
"""Differential conformance harness: the real RocketMQ name server + broker
against rmqcoord, every answer diffed.

Each scenario (scenarios.py) is a script of requests over named logical
connections. Against the real pair a logical connection is two sockets (one
to the name server for name-server codes, one to the broker for broker
codes), opened when first used; against rmqcoord it is two sockets to its one
port, opened at the same steps, so both sides see the same number of
connections. After every step the harness records the reply and every
server-initiated request (NOTIFY) and close seen on any connection, then
normalizes what legitimately differs and diffs the two transcripts.

Every scenario runs against three peers at once: the real pair, rmqcoord with
its defaults (mode "default") and rmqcoord with --compat for that version
(mode "compat": broker-4.9 against 4.x, broker against 5.x); each rmqcoord
transcript is diffed against the one real transcript.

Usage: harness.py [--versions 4.9.7,5.3.3] [--modes default,compat] [--only GLOB] [--report docs/conformance.md]
                  [--json out.json]
Environment: RMQCOORD_BIN (rmqcoord binary), RMQ_CONF_CACHE (Maven jar cache).
"""
import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))

sys.dont_write_bytecode = True
import daemon  # noqa: E402
import rq  # noqa: E402
from compare import (MODES, classify, compat_flags, diff_transcripts, load_known,  # noqa: E402
                     norm_frame)

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
REAL_SH = os.path.join(HERE, "real-rocketmq.sh")
LOCK_TTL_MS = 4000  # both sides: real via -Drocketmq.broker.rebalance.lockMaxLiveTime, rmqcoord via --lock-expiry-ms
EXPIRY_MS = 3000  # channel expiry for the expiry scenarios (5.x channelExpiredTimeout / --channel-expiry-ms)
TOPICS = [("TopicA", 4), ("TopicB", 4), ("TopicC", 2)]
SETTLE = 0.25  # seconds of listening after each step for NOTIFYs and closes
REPLY_TIMEOUT = 3.0


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- targets

class RealPair:
    """The real name server + broker, started by real-rocketmq.sh."""
    kind = "real"

    def __init__(self, version, workdir, conf=(), label=None):
        self.version, self.conf = version, list(conf)
        self.label = label or version
        self.dir = os.path.join(workdir, "real-" + self.label)
        self.ns = self.broker = None
        self.start_info = {}
        self.error = None

    def start(self):
        env = dict(os.environ)
        env["RMQ_JAVA_OPTS"] = (env.get("RMQ_JAVA_OPTS", "") +
                                " -Drocketmq.broker.rebalance.lockMaxLiveTime=%d" % LOCK_TTL_MS).strip()
        # own process group, so an interrupted run can stop the script and the JVMs it started at once
        self.start_proc = subprocess.Popen([REAL_SH, "start", self.version, self.dir] + self.conf, env=env,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                           start_new_session=True)
        try:
            out, err = self.start_proc.communicate(timeout=420)
        except subprocess.TimeoutExpired:
            self.kill_group()
            raise RuntimeError("real-rocketmq.sh start %s did not finish in 420 s" % self.version)
        if self.start_proc.returncode != 0 or not out.startswith("READY"):
            self.error = "real-rocketmq.sh start %s failed (rc %d): %s" % (self.version, self.start_proc.returncode,
                                                                         err[-2000:])
            raise RuntimeError(self.error)
        f = dict(kv.split("=", 1) for kv in out.split()[1:])
        self.ns, self.broker = f["namesrv"], f["broker"]
        self.start_info = {"namesrv_ms": int(f["namesrv_ms"]), "broker_ms": int(f["broker_ms"]), "total_ms": int(f["ms"])}
        with open(os.path.join(self.dir, "jvm-flags.txt")) as fh:
            self.start_info["jvm_flags"] = fh.read().strip()
        self.start_info["broker_conf_extra"] = self.conf
        t0 = time.monotonic()
        self._wait_registered()
        self._create_topics()
        self.start_info["registered_and_topics_ms"] = int((time.monotonic() - t0) * 1000)

    def kill_group(self):
        """SIGKILL the start script's process group (the script and the JVMs it started)."""
        p = getattr(self, "start_proc", None)
        if p is not None:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass

    def _wait_registered(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            c = rq.Conn(self.ns)
            o = c.send(106)
            r = c.wait_response(o, 3)
            c.close()
            if r is not None and r.code == 0 and b"broker-a" in r.body:
                return
            time.sleep(0.2)
        raise RuntimeError("%s broker never registered with its name server" % self.label)

    def _create_topics(self):
        c = rq.Conn(self.broker)
        for t, n in TOPICS:
            o = c.send(17, {"topic": t, "defaultTopic": "TBW102", "readQueueNums": n, "writeQueueNums": n, "perm": 6,
                            "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"})
            r = c.wait_response(o, 10)
            if r is None or r.code != 0:
                raise RuntimeError("%s: creating topic %s failed: %r" % (self.label, t, r and (r.code, r.remark)))
        c.close()
        deadline = time.monotonic() + 30
        ns = rq.Conn(self.ns)
        for t, _ in TOPICS:
            while True:
                o = ns.send(105, {"topic": t})
                r = ns.wait_response(o, 3)
                if r is not None and r.code == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("%s: topic %s never appeared in the name server's routes" % (self.label, t))
                time.sleep(0.2)
        ns.close()

    def stop(self):
        t0 = time.monotonic()
        subprocess.run([REAL_SH, "stop", self.version, self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)
        self.start_info["stop_ms"] = int((time.monotonic() - t0) * 1000)


class Coord:
    """rmqcoord: both roles on one port."""
    kind = "rmqcoord"

    def __init__(self, binary, workdir, flags=(), label="coord"):
        self.binary, self.flags, self.label = binary, list(flags), label
        self.dir = os.path.join(workdir, label)
        self.proc = None
        self.ns = self.broker = None

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        args = [self.binary, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                "--store", os.path.join(self.dir, "x.db"), "--lock-expiry-ms", str(LOCK_TTL_MS), "--log-level", "debug"]
        for t, n in TOPICS:
            args += ["--topic", "%s:%d" % (t, n)]
        args += self.flags
        self.args = args
        self.logf = open(os.path.join(self.dir, "rmqcoord.log"), "ab")
        t0 = time.monotonic()
        try:
            self.proc, ready = daemon.start(args, stderr=self.logf)
        except daemon.StartError as e:
            self.proc = e.proc
            raise RuntimeError("rmqcoord did not start: %r (log %s)" % (e.line, self.dir))
        self.start_ms = int((time.monotonic() - t0) * 1000)
        self.ns = self.broker = ready.addr

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.logf.close()
        return self.proc.returncode if self.proc else None


# --------------------------------------------------------------------------- recording

class Logical:
    """A logical client connection: one socket per role, opened on first use."""

    def __init__(self, name):
        self.name = name
        self.socks = {}  # role -> rq.Conn


class Recorder:
    """Runs one scenario against one target, recording a transcript."""

    def __init__(self, target, server_version, scenario):
        self.target, self.sv, self.scenario = target, server_version, scenario
        self.conns = {}
        self.steps = []
        self.n = 0
        self.tag = scenario.replace("/", "_")
        # client version sent by default: the server's own generation
        self.v = 409 if server_version.startswith("4.") else 479
        self.is_v5 = not server_version.startswith("4.")
        self.summary = None

    # names unique to the scenario so scenarios sharing a server do not interfere
    def g(self, s="G"):
        return "%s_%s" % (s, self.tag)

    def cid(self, s):
        return "127.0.0.1@%s_%s" % (s, self.tag)

    def conn(self, name):
        if name not in self.conns:
            self.conns[name] = Logical(name)
        return self.conns[name]

    def _sock(self, lc, role):
        if role not in lc.socks:
            addr = self.target.ns if role == "ns" else self.target.broker
            lc.socks[role] = rq.Conn(addr)
        return lc.socks[role]

    def _all_socks(self):
        for lc in self.conns.values():
            for role, s in lc.socks.items():
                yield "%s.%s" % (lc.name, role), s

    def _settle(self, step, duration):
        deadline = time.monotonic() + duration
        # read every socket for `duration`
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            socks = [s for _, s in self._all_socks() if not s.closed and not s.closed_by_peer]
            if not socks:
                time.sleep(left)
                break
            for s in socks:
                s.pump(min(0.02, max(0.0, left)))
        events, closed = {}, []
        for name, s in self._all_socks():
            reqs = s.take_requests()
            if reqs:
                # the order of NOTIFYs for different groups on one channel is not significant
                events[name] = sorted((norm_frame(f) for f in reqs), key=lambda x: json.dumps(x, sort_keys=True))
            if s.closed_by_peer and not getattr(s, "_close_recorded", False):
                s._close_recorded = True
                closed.append(name)
        if events:
            step["serverRequests"] = events
        if closed:
            step["closedByServer"] = sorted(closed)

    def _step(self, label):
        self.n += 1
        return {"step": "%02d %s" % (self.n, label)}

    def req(self, role, lc, code, ext=None, body=b"", flag=0, serialize=0, version=None, language="JAVA",
            label=None, timeout=REPLY_TIMEOUT, settle=SETTLE, raw=None, raw_header=None):
        version = self.v if version is None else version
        step = self._step(label or "%s %s code %d" % (lc.name, role, code))
        s = self._sock(lc, role)
        if raw is not None:
            s.send_raw(raw)
            opaque = None
        elif raw_header is not None:
            # a header written as some non-Java client writes it (key order, value types, trailing newline)
            s.opaque += 1
            opaque = s.opaque
            text = raw_header.replace("$OPAQUE", str(opaque)).encode()
            b = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
            s.send_raw(rq.frame(text, b, 0))
        else:
            opaque = s.send(code, ext, body, flag=flag, serialize=serialize, version=version, language=language)
        reply = None
        if opaque is not None:
            wait = 0.6 if flag & 2 else timeout
            reply = s.wait_response(opaque, wait)
            step["reply"] = norm_frame(reply) if reply is not None else "<no reply within %.1fs>" % wait
        self._settle(step, settle)
        self._push(step)
        return reply

    def ns(self, lc, code, ext=None, body=b"", **kw):
        return self.req("ns", lc, code, ext, body, **kw)

    def br(self, lc, code, ext=None, body=b"", **kw):
        return self.req("broker", lc, code, ext, body, **kw)

    def close(self, lc, label=None, settle=0.4):
        step = self._step(label or "close %s" % lc.name)
        for s in lc.socks.values():
            s.close()
        self._settle(step, settle)
        self._push(step)

    def wait(self, seconds, label=None):
        step = self._step(label or "wait %.1fs" % seconds)
        self._settle(step, seconds)
        self._push(step)

    def note(self, key, value):
        """A value computed by the scenario itself, compared like a reply."""
        step = self._step("note " + key)
        step["value"] = value
        self._push(step)

    def _push(self, step):
        if self.summary is None:
            self.steps.append(step)
            return
        sm = self.summary
        r = step.get("reply")
        if r is not None:
            k = r if isinstance(r, str) else "code %s" % r.get("code")
            sm["replies"][k] = sm["replies"].get(k, 0) + 1
        for conn, reqs in step.get("serverRequests", {}).items():
            for f in reqs:
                k = "%s code %s %s" % (conn, f.get("code"), (f.get("extFields") or {}).get("consumerGroup", ""))
                sm["serverRequests"][k.strip()] = sm["serverRequests"].get(k.strip(), 0) + 1
        sm["closedByServer"] += step.get("closedByServer", [])

    def begin_summary(self):
        """Steps until end_summary() are merged into one (counts of replies, NOTIFYs, closes)."""
        self.summary = {"replies": {}, "serverRequests": {}, "closedByServer": []}

    def end_summary(self, label):
        sm, self.summary = self.summary, None
        step = self._step("summary: " + label)
        step.update({k: v for k, v in sm.items() if v})
        self.steps.append(step)

    def send_async(self, role, lc, code, ext=None, body=b"", flag=0, serialize=0, version=None, label=None):
        version = self.v if version is None else version
        step = self._step(label or "%s %s code %d (async)" % (lc.name, role, code))
        s = self._sock(lc, role)
        opaque = s.send(code, ext, body, flag=flag, serialize=serialize, version=version)
        return (step, s, opaque, time.monotonic())

    def await_async(self, h, timeout=8.0, buckets=(1.0,)):
        """The reply to a send_async request, with its delay as a bucket (e.g. '<1.0s')."""
        step, s, opaque, t0 = h
        step["step"] += " -> reply"
        reply = s.wait_response(opaque, timeout)
        dt = time.monotonic() - t0
        step["reply"] = norm_frame(reply) if reply is not None else "<no reply within %.1fs>" % timeout
        b = ">=%.1fs" % buckets[-1]
        for x in buckets:
            if dt < x:
                b = "<%.1fs" % x
                break
        step["replyDelay"] = b
        self._settle(step, SETTLE)
        self._push(step)

    def real_only(self, code, ext=None, body=b""):
        """An administrative request sent only to the real broker, not recorded
        (e.g. UPDATE_BROKER_CONFIG to flip a switch rmqcoord takes as a flag)."""
        if self.target.kind != "real":
            return None
        s = rq.Conn(self.target.broker)
        try:
            o = s.send(code, ext, body, version=self.v)
            r = s.wait_response(o, 10)
        finally:
            s.close()
        if r is None or r.code != 0:
            raise RuntimeError("real-only request %d failed: %r" % (code, r and (r.code, r.remark)))
        return r

    def finish(self):
        for _, s in self._all_socks():
            s.close()

    # ----- helpers for bodies
    def hb_body(self, client_id, groups, model="CLUSTERING", v2=None, consume_type="CONSUME_PASSIVELY",
                producers=()):
        """groups: {group: [topic | (topic, subString, subVersion)]}"""
        cds = []
        for g, topics in groups.items():
            subs = []
            for t in topics:
                topic, sub, ver = t if isinstance(t, tuple) else (t, "*", 1700000000000)
                tags = [] if sub == "*" else [x.strip() for x in sub.split("||") if x.strip()]
                subs.append({"classFilterMode": False, "codeSet": [java_hash(x) for x in tags], "expressionType": "TAG",
                             "subString": sub, "subVersion": ver, "tagsSet": tags, "topic": topic})
            cds.append({"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": consume_type,
                        "groupName": g, "messageModel": model, "subscriptionDataSet": subs, "unitMode": False})
        body = {"clientID": client_id, "consumerDataSet": cds, "producerDataSet": [{"groupName": p} for p in producers]}
        if v2 is not None:
            body["heartbeatFingerprint"], body["withoutSub"] = v2
        elif self.is_v5:
            body["heartbeatFingerprint"], body["withoutSub"] = 0, False
        return body

    def hb(self, lc, client_id, groups, label=None, ext=None, **kw):
        hkw = {k: kw.pop(k) for k in list(kw) if k in ("model", "v2", "consume_type", "producers")}
        return self.br(lc, 34, {} if ext is None and self.is_v5 else ext, self.hb_body(client_id, groups, **hkw),
                       label=label or "%s heartbeat" % lc.name, **kw)


def java_hash(s):
    h = 0
    for ch in s.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# --------------------------------------------------------------------------- running

def run_one(target, version, name, fn):
    rec = Recorder(target, version, name)
    err = None
    t0 = time.monotonic()
    try:
        fn(rec)
    except Exception:
        err = traceback.format_exc(limit=4)
    finally:
        rec.finish()
    alive = target.alive() if hasattr(target, "alive") else True
    if not alive:
        rec.steps.append({"step": "zz server", "value": "rmqcoord exited"})
    return {"steps": rec.steps, "error": err, "seconds": round(time.monotonic() - t0, 2)}


def run_pair(real, coords, version, name, fn):
    """The scenario against the real pair and every rmqcoord of coords ({mode: Coord}) at once."""
    res = {}

    def go(key, tgt):
        res[key] = run_one(tgt, version, name, fn)

    th = [threading.Thread(target=go, args=("real", real))]
    th += [threading.Thread(target=go, args=(mode, c)) for mode, c in coords.items()]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", default=os.environ.get("RMQ_VERSIONS", "4.9.7,5.3.3"))
    ap.add_argument("--only", default="*")
    ap.add_argument("--modes", default="default,compat", help="rmqcoord modes: default, compat or both")
    ap.add_argument("--report", default=os.path.join(REPO, "docs", "conformance.md"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()

    import scenarios
    binary = os.environ.get("RMQCOORD_BIN") or os.path.join(REPO, "build", "rmqcoord")
    if not os.access(binary, os.X_OK):
        print("rmqcoord binary not found: %s (set RMQCOORD_BIN)" % binary, file=sys.stderr)
        return 2
    versions = [v for v in args.versions.split(",") if v]
    modes = [m for m in args.modes.split(",") if m in MODES]
    work = tempfile.mkdtemp(prefix="rmqconf-")
    known = load_known()
    selected = [s for s in scenarios.SCENARIOS if fnmatch.fnmatchcase(s.name, args.only)]
    t_start = time.monotonic()

    # ---- start every peer (real pairs in parallel threads)
    reals, coords = {}, {}
    for v in versions:
        reals[v] = RealPair(v, work)
        for prof in sorted({s.coord_profile for s in selected if s.applies(v)}):
            for mode in modes:
                flags = scenarios.COORD_PROFILES[prof] + (compat_flags(v) if mode == "compat" else [])
                coords[(v, prof, mode)] = Coord(binary, work, flags, label="coord-%s-%s-%s" % (v, prof, mode))
    needs = {(v, s.real_profile) for v in versions for s in selected if s.applies(v)}
    for (v, prof) in sorted(needs):
        if prof != "default":
            reals[(v, prof)] = RealPair(v, work, scenarios.REAL_PROFILES[prof], label="%s-%s" % (v, prof))
    start_errors = {}

    def emergency_stop(*_):
        """On an exception or a signal: stop every peer this run started (by its own pid files / process)."""
        for c in coords.values():
            if c.proc is not None and c.proc.poll() is None:
                c.proc.kill()
        for rp in reals.values():
            sp = getattr(rp, "start_proc", None)
            if sp is not None and sp.poll() is None:
                rp.kill_group()  # interrupted while starting
            if os.path.isdir(rp.dir):
                subprocess.run([REAL_SH, "stop", rp.version, rp.dir], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=60)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    import atexit
    import signal
    atexit.register(emergency_stop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(130))

    def start_real(key, rp):
        t0 = time.monotonic()
        try:
            rp.start()
            log("real %s listening: %s" % (rp.label, rp.start_info))
        except Exception as e:
            start_errors[key] = str(e)
            log("real %s FAILED to start: %s" % (rp.label, e))
        rp.start_info["wall_ms"] = int((time.monotonic() - t0) * 1000)

    ths = [threading.Thread(target=start_real, args=(k, rp), daemon=True) for k, rp in reals.items()]
    for t in ths:
        t.start()
    for c in coords.values():
        c.start()
    for t in ths:
        t.join()
    log("peers up after %.1fs" % (time.monotonic() - t_start))

    results = []  # dicts: scenario, version, classification, diffs...
    lock = threading.Lock()

    def suite(v, items):
        for s in items:
            rkey = v if s.real_profile == "default" else (v, s.real_profile)
            rp = reals[rkey]
            if rkey in start_errors:
                with lock:
                    for mode in modes:
                        results.append({"scenario": s.name, "version": v, "mode": mode, "class": "error",
                                        "why": "real pair did not start: " + start_errors[rkey][-600:],
                                        "errors": {"real": "real pair did not start: " + start_errors[rkey][-600:]}})
                continue
            r = run_pair(rp, {mode: coords[(v, s.coord_profile, mode)] for mode in modes}, v, s.name, s.fn)
            for mode in modes:
                remarks = []
                diffs = diff_transcripts(r["real"]["steps"], r[mode]["steps"], remarks)
                errs = {k: r[k]["error"] for k in ("real", mode) if r[k]["error"]}
                cls, ids, unexplained = classify(s.name, v, diffs, known, mode)
                if errs:
                    cls = "error"
                entry = {"scenario": s.name, "version": v, "mode": mode, "class": cls, "known": ids, "diffs": diffs,
                         "unexplained": unexplained, "errors": errs, "remarks": remarks, "doc": s.doc,
                         "real": r["real"]["steps"], "rmqcoord": r[mode]["steps"],
                         "seconds": max(r["real"]["seconds"], r[mode]["seconds"])}
                with lock:
                    results.append(entry)
                log("%-7s %-7s %-40s %s%s" % (v, mode, s.name, cls, (" " + ",".join(ids)) if ids else ""))

    # one thread per (version, real profile): they share nothing
    groups = {}
    for v in versions:
        for s in selected:
            if not s.applies(v):
                with lock:
                    for mode in modes:
                        results.append({"scenario": s.name, "version": v, "mode": mode, "class": "not run",
                                        "why": s.skip_reason(v)})
                continue
            groups.setdefault((v, s.real_profile), []).append(s)
    ths = [threading.Thread(target=suite, args=(k[0], items), daemon=True) for k, items in groups.items()]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    t_run = time.monotonic() - t_start

    # ---- stop
    coord_rcs = {}
    for k, c in coords.items():
        coord_rcs["%s/%s/%s" % k] = c.stop()
    ths = [threading.Thread(target=rp.stop) for k, rp in reals.items() if k not in start_errors]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    total = time.monotonic() - t_start

    meta = {"versions": versions, "modes": modes, "compat_flags": {v: " ".join(compat_flags(v)) for v in versions},
            "rmqcoord": binary, "real": {rp.label: rp.start_info for rp in reals.values()},
            "start_errors": start_errors, "coord_exit": coord_rcs, "seconds_until_stop": round(t_run, 1),
            "seconds_total": round(total, 1), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "coord_profiles": scenarios.COORD_PROFILES, "real_profiles": scenarios.REAL_PROFILES}
    order = {s.name: i for i, s in enumerate(scenarios.SCENARIOS)}
    results.sort(key=lambda e: (order.get(e["scenario"], 999), e["version"], MODES.index(e.get("mode", "default"))))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1, default=str)
    import report
    report.write(args.report, meta, results, known, scenarios)
    n_pass = sum(1 for e in results if e["class"] in ("identical", "documented"))
    n_fail = sum(1 for e in results if e["class"] in ("differs", "recorded", "error"))
    n_skip = sum(1 for e in results if e["class"] == "not run")
    for e in results:
        if e["class"] in ("differs", "recorded", "error"):
            print(report.text_diff(e))
    for e in results:
        print("%-10s %-7s %-7s %s%s" % (e["class"], e["version"], e.get("mode", "default"), e["scenario"],
                                        (" (" + ", ".join(e.get("known", [])) + ")") if e.get("known") else ""))
    by_mode = {}
    for e in results:
        k = (e["version"], e.get("mode", "default"))
        by_mode.setdefault(k, {"pass": 0, "fail": 0, "skip": 0})
        by_mode[k]["pass" if e["class"] in ("identical", "documented") else
                   "skip" if e["class"] == "not run" else "fail"] += 1
    for (v, m), c in sorted(by_mode.items()):
        print("# %s %-7s pass %d fail %d skip %d" % (v, m, c["pass"], c["fail"], c["skip"]))
    for k in known:
        if k.get("readme_missing"):
            print("# known difference %s: README.md has no row %r" % (k["id"], k.get("readme_row")))
    print("# real pairs: " + "; ".join("%s listening after %s ms" % (k, v.get("total_ms")) for k, v in meta["real"].items()
                                       if v.get("total_ms") is not None))
    for k, v in start_errors.items():
        print("# could not start the real pair %s: %s" % (k, v.strip().splitlines()[-1] if v.strip() else v))
    print("# total %.0fs; report %s" % (total, args.report))
    print("# skip %d" % n_skip)
    print("# pass %d" % n_pass)
    print("# fail %d" % n_fail)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("# work dir kept: %s" % work)
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
