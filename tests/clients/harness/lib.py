"""Building blocks of the client scenario harness (tests/clients).

A Daemon is one rmqcoord process on loopback port 0 with its own store; a
Probe is one client probe process (Java, Go or Node; same command line and
JSON Lines output, see tests/clients/README.md) whose stdout is read on a
thread into per-instance state. Env owns everything a scenario starts and
kills what is left at the end. Every wait is bounded.
"""
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

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(CLIENTS))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "pylib"))
import daemon  # noqa: E402  (start the daemon, wait for READY)
import rmqclient  # noqa: E402  (the project's minimal remoting client)


BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(ROOT, "build", "rmqcoord")

UPDATE_CONSUMER_OFFSET, QUERY_CONSUMER_OFFSET = 15, 14


def now_ms():
    return int(time.time() * 1000)


class Fail(AssertionError):
    """A scenario assertion failed."""


class Skip(Exception):
    """The scenario cannot be done for this client (reason in the message)."""


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


class Daemon:
    def __init__(self, env, name, extra=(), listen="127.0.0.1:0"):
        self.env, self.name, self.extra = env, name, list(extra)
        self.store = os.path.join(env.dir, name + ".db")
        self.listen = listen
        self.proc = None
        self.port = self.http_port = None
        self.gen = 0

    def start(self, same_port=False):
        self.gen += 1
        listen = "127.0.0.1:%d" % self.port if same_port and self.port else self.listen
        http = "127.0.0.1:%d" % self.http_port if same_port and self.http_port else "127.0.0.1:0"
        args = [BIN, "serve", "--listen", listen, "--http", http, "--store", self.store] + self.extra
        self.logfile = os.path.join(self.env.dir, "%s.%d.log" % (self.name, self.gen))
        log = open(self.logfile, "ab")
        try:
            self.proc, ready = daemon.start(args, stderr=log, timeout=10, popen=self.env.popen,
                                            stdin=subprocess.DEVNULL)
        except daemon.StartError as e:
            self.proc = e.proc
            raise Fail("daemon %s did not start: %r; log: %s" % (self.name, e.line, self.logtail()))
        finally:
            log.close()
        # whatever the daemon prints after READY goes to its log, so a full pipe never stalls it
        threading.Thread(target=_drain, args=(self.proc.stdout, self.logfile), daemon=True).start()
        self.port, self.http_port = ready.port, ready.http_port
        return self


    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def logtail(self, n=3000):
        try:
            with open(self.logfile, "rb") as f:
                return f.read().decode(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                kill_group(self.proc)
                reap(self.proc, 5)
                return "forced"
        return self.proc.returncode if self.proc else None

    def http(self, method, path, body=None, timeout=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.http_port, path), data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw or b"null")
            except ValueError:
                return e.code, raw.decode(errors="replace")

    def get(self, path, **kw):
        st, j = self.http("GET", path, **kw)
        check(st == 200, "GET %s -> %s %s" % (path, st, j))
        return j

    def members(self, group):
        st, j = self.http("GET", "/api/groups/%s" % q(group))
        if st != 200:
            return []
        return [c["clientId"] for c in j.get("consumers", [])]

    def events(self, group):
        out, cursor = [], None
        for _ in range(50):
            path = "/api/events?group=%s&limit=1000" % q(group) + ("&cursor=%s" % q(cursor) if cursor else "")
            j = self.get(path)
            out += j["events"]
            cursor = j.get("next")
            if not cursor or not j["events"]:
                break
        return out

    def topic_queues(self, topic):
        """[(broker, qid)] as a client derives them from the route (readable brokers)."""
        j = self.get("/api/topics/%s" % q(topic))
        out = []
        for b in j["brokers"]:
            if b.get("perm", 6) & 4:
                out += [(b["brokerName"], i) for i in range(b["readQueueNums"])]
        return sorted(out)

    def put_topic(self, topic, brokers):
        st, j = self.http("PUT", "/api/topics/%s" % q(topic), {"brokers": [
            {"brokerName": b, "readQueueNums": n, "writeQueueNums": n} for b, n in brokers]})
        check(st == 200, "PUT topic %s -> %s %s" % (topic, st, j))

    def allocation(self, group, topic, strategy, params=""):
        j = self.get("/api/groups/%s/allocation?topic=%s&strategy=%s%s" % (q(group), q(topic), strategy, params))
        return {cid: frozenset((x["brokerName"], x["queueId"]) for x in qs) for cid, qs in j["allocation"].items()}

    def remoting(self):
        return rmqclient.Conn(self.port)


def q(s):
    return urllib.parse.quote(str(s), safe="")


class Probe:
    """One probe process; state[instance] = {clientId, queues (set of (topic, broker, qid)), ts, history, ...}."""

    def __init__(self, env, flavor, name, args, count=1, extra_env=None):
        self.env, self.flavor, self.name, self.count = env, flavor, name, count
        self.instances = [name] if count == 1 else ["%s-%d" % (name, i) for i in range(count)]
        self.lock = threading.Lock()
        self.state = {i: {"clientId": None, "queues": None, "locked": frozenset(), "ts": None, "history": [],
                          "notifies": [], "offsets": None, "started": None, "shutdown": None,
                          "stopping": None}
                      for i in self.instances}
        self.events = []
        self.unsupported = None
        self.prints_locked = False  # the probe marks queues with "locked" (Java orderly)
        self.errlog = os.path.join(env.dir, "probe-%s.err" % name)
        cmd = flavor.cmd + list(getattr(flavor, "extra_args", [])) + list(args) + ["--instance", name] + (["--count", str(count)] if count > 1 else [])
        self.cmd = cmd
        penv = dict(os.environ)
        penv.update(flavor.env)
        penv.update(extra_env or {})
        err = open(self.errlog, "ab")
        try:
            self.proc = env.popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=penv,
                                  cwd=env.dir)
        finally:
            err.close()
        env.probes.append(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        outf = open(os.path.join(self.env.dir, "probe-%s.out" % self.name), "ab", buffering=0)
        for raw in self.proc.stdout:
            try:
                outf.write(raw)
            except (OSError, ValueError):
                pass
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            with self.lock:
                self.events.append(ev)
                kind, inst = ev.get("event"), ev.get("instance")
                if kind == "unsupported":
                    self.unsupported = ev
                st = self.state.get(inst)
                if st is None:
                    continue
                if ev.get("clientId"):
                    st["clientId"] = ev["clientId"]
                ts = ev.get("ts") or now_ms()
                if kind == "holdings":
                    qs = frozenset((x["topic"], x["broker"], x["queueId"]) for x in ev.get("queues", []))
                    locked = frozenset((x["topic"], x["broker"], x["queueId"]) for x in ev.get("queues", [])
                                       if x.get("locked"))
                    if any("locked" in x for x in ev.get("queues", [])):
                        self.prints_locked = True
                    st["queues"], st["locked"], st["ts"] = qs, locked, ts
                    st["history"].append((ts, qs, locked))
                elif kind == "notify":
                    st["notifies"].append(ts)
                elif kind == "offsets":
                    st["offsets"] = {(x["topic"], x["broker"], x["queueId"]): x["offset"] for x in ev["offsets"]}
                elif kind == "started":
                    st["started"] = ts
                elif kind == "shutdown":
                    st["shutdown"] = ts
                elif kind == "stopping":
                    st["stopping"] = ts

    def client_id(self, inst):
        with self.lock:
            return self.state[inst]["clientId"]

    def held(self, inst, topic):
        with self.lock:
            qs = self.state[inst]["queues"]
        if qs is None:
            return None
        return frozenset((b, i) for t, b, i in qs if t == topic)

    def last_change(self, inst, topic):
        """ts of the holdings event that set the current holdings of topic."""
        with self.lock:
            hist = list(self.state[inst]["history"])
        cur = None
        when = None
        for ts, qs, _ in hist:
            s = frozenset((b, i) for t, b, i in qs if t == topic)
            if s != cur:
                cur, when = s, ts
        return when

    def wait_started(self, timeout=40):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                ok = all(s["started"] and s["clientId"] for s in self.state.values())
                uns = self.unsupported
            if uns:
                raise Skip("probe says unsupported: %s" % json.dumps(uns))
            if ok:
                return
            if self.proc.poll() is not None:
                if self.proc.returncode == 3:
                    raise Skip("probe exited 3 (unsupported option): %s" % self.errtail(400))
                err = self.errtail(4000)
                if self.proc.returncode == 2 and ("not defined" in err or "unknown option" in err):
                    line = [x for x in err.splitlines() if "not defined" in x or "unknown option" in x][:1]
                    raise Skip("the probe rejects an option of the spec (exit 2: %s)" % (line[0].strip() if line else "?"))
                raise Fail("probe %s exited %s before starting: %s" % (self.name, self.proc.returncode, self.errtail()))
            time.sleep(0.05)
        raise Fail("probe %s not started within %ss: %s" % (self.name, timeout, self.errtail()))

    def errtail(self, n=1500):
        try:
            with open(self.errlog, "rb") as f:
                return f.read().decode(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, timeout=30):
        """Clean stop: a 'stop' line on stdin. Returns the exit code."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"stop\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            reap(self.proc, 5)
            raise Fail("probe %s did not stop within %ss after 'stop'" % (self.name, timeout))
        self.reader.join(5)
        return rc

    def signal(self, sig):
        """sig to the probe process itself (not its group): SIGSTOP must freeze just the client."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill9(self):
        self.signal(signal.SIGKILL)
        reap(self.proc, 10)


def kill_group(proc):
    """SIGCONT then SIGKILL to the process group of proc (each child leads its own group): a
    SIGSTOPped child dies too, and so does anything it started. Never blocks. A child already
    reaped is left alone: its pid may belong to someone else by now."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except OSError:  # gone already
            pass


def reap(proc, timeout):
    """Bounded wait for proc (Popen.wait with a timeout polls; it never sleeps in waitpid)."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass


def _drain(stream, path):
    try:
        with open(path, "ab", buffering=0) as f:
            for line in stream:
                f.write(line)
    except (OSError, ValueError):
        pass


class Abandoned(Exception):
    """The scenario was ended from outside (its timeout or the run's deadline): it must stop."""


ALL_ENVS = []
# one line per child process group, so tests/clients/run.sh can kill what is left if this
# process itself is killed (its own deadline handling never ran)
PGID_FILE = os.environ.get("CLIENTS_PGID_FILE", "")
_PGID_LOCK = threading.Lock()


class Env:
    def __init__(self, label):
        ALL_ENVS.append(self)
        self.label = label
        self.dir = tempfile.mkdtemp(prefix="rmqclients-%s-" % label.replace("/", "_"))
        self.procs = []
        self.probes = []
        self.lock = threading.Lock()
        self.closed = False

    def popen(self, args, **kw):
        """Start a child in its own process group, owned by this Env. Once the Env is closed
        (the scenario was abandoned) nothing new may run: the child is killed at once."""
        p = subprocess.Popen(args, start_new_session=True, **kw)
        with self.lock:
            self.procs.append(p)
            closed = self.closed
        if PGID_FILE:
            with _PGID_LOCK:
                try:
                    with open(PGID_FILE, "a") as f:
                        f.write("%d\n" % p.pid)
                except OSError:
                    pass
        if closed:
            kill_group(p)
            raise Abandoned("scenario %s was ended from outside" % self.label)
        return p

    def kill_all(self, reap_until=None):
        """From any thread, without blocking for long: every child group SIGCONT + SIGKILL, then a
        reap bounded by reap_until (monotonic; default 3 s from now, 0 = no reap). Marks the Env
        closed so the scenario cannot start anything after."""
        with self.lock:
            self.closed = True
            procs = list(self.procs)
        for p in procs:
            kill_group(p)
        until = time.monotonic() + 3 if reap_until is None else reap_until
        for p in procs:
            reap(p, max(0.0, until - time.monotonic()))

    def daemon(self, name="d", extra=(), channel_expiry_ms=None, start=True):
        ex = list(extra)
        if channel_expiry_ms is not None:
            ex += ["--channel-expiry-ms", str(channel_expiry_ms)]
        d = Daemon(self, name, ex)
        return d.start() if start else d

    def cleanup(self, keep=False):
        with self.lock:
            procs = list(self.procs)
        for p in procs:
            if p.poll() is None:
                kill_group(p)
                reap(p, 5)
        if not keep and not os.environ.get("CLIENTS_KEEP"):
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------------------
# convergence

def wait_converged(daemon, group, topic, members, strategy="AVG", params="", mode="cluster", timeout=15.0,
                   hold=1.0, since_ms=None, expect_members=None):
    """Wait until the probes' holdings of topic are stable for `hold` s and
    right: the daemon's live members are exactly the members' client ids,
    each member holds what the daemon's allocation route predicts for it, and
    (mode cluster) the union is disjoint and complete, (mode broadcast) each
    holds every queue. members: [(probe, instance)].
    Returns {"ms": converged - since_ms, "at": converged ts}; raises Fail."""
    queues = frozenset(daemon.topic_queues(topic))
    deadline = time.monotonic() + timeout
    stable_since, last_sig, why = None, None, "not checked"
    for _ in range(int(timeout / 0.05) + 100):
        if time.monotonic() > deadline:
            break
        held = {}
        for p, inst in members:
            held[(p, inst)] = p.held(inst, topic)
        ids = {(p, inst): p.client_id(inst) for p, inst in members}
        sig = tuple(sorted((str(ids[k]), tuple(sorted(v)) if v is not None else None) for k, v in held.items()))
        if sig != last_sig:
            last_sig, stable_since = sig, time.monotonic()
        why = _problem(daemon, group, topic, queues, held, ids, strategy, params, mode, expect_members)
        if why is None and time.monotonic() - stable_since >= hold:
            at = max(p.last_change(inst, topic) or 0 for p, inst in members)
            return {"ms": max(0, at - since_ms) if since_ms else None, "at": at}
        if why is not None:
            stable_since = time.monotonic()
        time.sleep(0.05)
    raise Fail("not converged within %.0fs: %s" % (timeout, why))


def _problem(daemon, group, topic, queues, held, ids, strategy, params, mode, expect_members):
    for k, v in held.items():
        if v is None:
            return "%s/%s has not reported holdings" % (k[0].name, k[1])
        if ids[k] is None:
            return "%s/%s has no client id yet" % (k[0].name, k[1])
    want_ids = sorted(ids.values()) if expect_members is None else sorted(expect_members)
    live = sorted(daemon.members(group))
    if live != want_ids:
        return "daemon members %s != expected %s" % (live, want_ids)
    if mode == "broadcast":
        for k, v in held.items():
            if v != queues:
                return "%s holds %d of %d queues (broadcast)" % (ids[k], len(v), len(queues))
        return None
    if mode == "cluster":
        seen = {}
        for k, v in held.items():
            for x in v:
                if x in seen:
                    return "queue %s held by %s and %s" % (x, seen[x], ids[k])
                seen[x] = ids[k]
        missing = queues - set(seen)
        if missing:
            return "queues without owner: %s" % sorted(missing)
    if strategy is None:
        return None
    alloc = daemon.allocation(group, topic, strategy, params)
    for k, v in held.items():
        exp = alloc.get(ids[k], frozenset())
        if v != exp:
            return "%s holds %s, daemon's %s allocation says %s" % (ids[k], sorted(v), strategy, sorted(exp))
    return None


def consistency(daemon, group, topic, members, strategy="AVG", params="", empty_running_info_ok=False):
    """Ask the daemon (GET_CONSUMER_RUNNING_INFO through /consistency) and
    compare with what the probes print. Returns (findings, notes): findings
    are disagreements (a scenario fails on them), notes are known client
    limitations."""
    st, j = daemon.http("GET", "/api/groups/%s/consistency?topic=%s&strategy=%s&timeout_ms=3000%s"
                        % (q(group), q(topic), strategy, params), timeout=15)
    if st != 200:
        return ["consistency route -> %s %s" % (st, json.dumps(j)[:300])], []
    probes, silent_ok = {}, set()
    for p, inst in members:
        probes[p.client_id(inst)] = p.held(inst, topic)
        if getattr(p.flavor, "no_running_info", False):
            silent_ok.add(p.client_id(inst))
    out, notes = [], []
    seen = set()
    for c in j.get("clients", []):
        cid = c["clientId"]
        seen.add(cid)
        if cid not in probes:
            out.append("daemon reports client %s that no probe runs" % cid)
            continue
        if not c.get("answered", False):
            if cid in silent_ok:
                notes.append("%s does not answer GET_CONSUMER_RUNNING_INFO (client limitation)" % cid)
            else:
                out.append("%s did not answer GET_CONSUMER_RUNNING_INFO" % cid)
            continue
        rep = frozenset((x["brokerName"], x["queueId"]) for x in c.get("queues", []))
        if rep != probes[cid]:
            if not rep and empty_running_info_ok:
                notes.append("%s's running info carries no queue table (client limitation)" % cid)
                continue
            out.append("%s: running info says %s, the probe prints %s" % (cid, fmt(rep), fmt(probes[cid])))
            continue
        exp = frozenset((x["brokerName"], x["queueId"]) for x in c.get("expected", []))
        if not c.get("matches", False):
            out.append("%s holds %s (running info = probe) but the daemon expects %s (matches=false)"
                       % (cid, fmt(rep), fmt(exp)))
    for cid in probes:
        if cid not in seen:
            out.append("daemon's consistency reply lacks %s" % cid)
    if not out and not notes and not j.get("consistent", False):
        out.append("every client matches its expected queues, yet consistent=false (overlaps %s, gaps %s)"
                   % (fmt(frozenset((o["queue"]["brokerName"], o["queue"]["queueId"]) for o in j.get("overlaps", []))),
                      fmt(frozenset((g["brokerName"], g["queueId"]) for g in j.get("gaps", [])))))
    return out, notes


def fmt(qs):
    return "[" + ",".join("%s:%d" % x for x in sorted(qs or [])) + "]"


def event_ts(daemon, group, kind, client_id, after_id=0, timeout=10.0):
    """ts of the first membership event of kind for client_id after after_id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in daemon.events(group):
            if e["id"] > after_id and e["kind"] == kind and (client_id is None or e.get("clientId") == client_id):
                return e["ts"], e["id"]
        time.sleep(0.1)
    raise Fail("no %s event for %s in %s within %ss" % (kind, client_id, group, timeout))


def last_event_id(daemon, group):
    ev = daemon.events(group)
    return ev[-1]["id"] if ev else 0


def commit_offsets(daemon, group, topic, offsets):
    """UPDATE_CONSUMER_OFFSET over remoting (sync, as a tool would): {(broker, qid): offset}."""
    c = daemon.remoting()
    try:
        for (b, qid), off in offsets.items():
            r = c.request(UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": qid,
                                                   "commitOffset": off, "bname": b})
            check(r is not None and r.code == 0, "UPDATE_CONSUMER_OFFSET %s:%s -> %r" % (b, qid, r))
    finally:
        c.close()


def query_offsets(daemon, group, topic, keys):
    c = daemon.remoting()
    out = {}
    try:
        for b, qid in keys:
            r = c.request(QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": qid, "bname": b})
            out[(b, qid)] = int(r.ext["offset"]) if r is not None and r.code == 0 else None
    finally:
        c.close()
    return out


def allocate_cli(strategy, topic, queues, consumers, options=None):
    """`rmqcoord allocate` for one case: {clientId: frozenset((broker, qid))}."""
    case = {"strategy": strategy, "consumers": list(consumers), "options": options or {},
            "queues": [{"topic": topic, "brokerName": b, "queueId": i} for b, i in queues]}
    r = subprocess.run([BIN, "allocate"], input=(json.dumps(case) + "\n").encode(), capture_output=True, timeout=10)
    j = json.loads(r.stdout.decode().splitlines()[0])
    check("allocation" in j, "rmqcoord allocate: %s" % j)
    return {cid: frozenset((x["brokerName"], x["queueId"]) for x in qs) for cid, qs in j["allocation"].items()}


class ClusterView:
    """What wait_converged needs, for a topic spread over several --role broker
    processes: members as every broker sees them (they must agree), the union
    of the brokers' queues, the expected allocation from `rmqcoord allocate`."""

    def __init__(self, brokers):
        self.brokers = brokers

    def members(self, group):
        views = [sorted(b.members(group)) for b in self.brokers]
        return views[0] if all(v == views[0] for v in views) else ["<brokers disagree: %s>" % views]

    def topic_queues(self, topic):
        out = []
        for b in self.brokers:
            out += b.topic_queues(topic)
        return sorted(set(out))

    def allocation(self, group, topic, strategy, params=""):
        return allocate_cli(strategy, topic, self.topic_queues(topic), self.members(group))
