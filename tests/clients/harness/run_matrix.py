#!/usr/bin/env python3
"""The client scenario matrix: real RocketMQ clients (Java 4.9.8 / 5.3.3, Go,
Node when available) against rmqcoord, one daemon per scenario on port 0.

    run_matrix.py [--only REGEX] [--flavors java-4.9.8,java-5.3.3,go,node]
                  [--jvms N] [--doc PATH] [--json PATH]

Prints one line per scenario step, writes the Markdown report (--doc) and
ends with "# pass N" / "# fail N"; exit 0 only when nothing failed.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import ALL_ENVS, CLIENTS, Abandoned, Env, Fail, Skip, pct  # noqa: E402
from report import write_doc  # noqa: E402
from scenarios import LONG_FIRST, SCENARIOS, STEPS, UNSUPPORTED, Flavor, sc_mixed  # noqa: E402


def flavors(selected, notes):
    out = []
    jdir = os.path.join(CLIENTS, "java")
    for v in ("4.9.8", "5.3.3"):
        exe = os.path.join(jdir, "bin", "probe-" + v)
        if os.path.exists(exe):
            out.append(Flavor("java-" + v, [exe], weight=1))
        else:
            notes.append("java-%s: %s missing (java/build.sh failed?)" % (v, exe))
    gexe = os.path.join(CLIENTS, "go", "bin", "probe")
    if os.path.exists(os.path.join(CLIENTS, "go", "build.sh")):
        if os.environ.get("CLIENTS_GO_BROKEN"):
            pass  # run.sh noted the failed build
        elif os.path.exists(gexe):
            out.append(Flavor("go", [gexe], weight=0.4))
            out[-1].fixed_timers = True  # rocketmq-client-go v2: heartbeat/route/rebalance periods not settable
        else:
            notes.append("go: tests/clients/go/build.sh exists but bin/probe was not built: flavor skipped")
    nprobe = os.path.join(CLIENTS, "node", "probe.js")
    if os.path.exists(nprobe) and os.path.isdir(os.path.join(CLIENTS, "..", "e2e", "node_modules", "ali-ons")):
        # ali-ons ignores NOTIFY: it converges on its own rebalance timer, run at 2 s here
        # (default 10 s) so the matrix stays within its time budget; the bound is that timer + 4 s
        rb = int(os.environ.get("NODE_REBALANCE_MS", "2000"))
        out.append(Flavor("node", ["node", nprobe], notify=False, bound_ms=rb + 4000, weight=0.4,
                          extra_args=["--rebalance-ms", str(rb)],
                          note="node (ali-ons 3.12.0) runs with --rebalance-ms %d: it ignores NOTIFY" % rb))
        out[-1].no_running_info = True  # ali-ons does not answer GET_CONSUMER_RUNNING_INFO
    if selected:
        want = set(selected.split(","))
        out = [f for f in out if f.name in want]
    return out


# ---------------------------------------------------------------------------
# recording

class Rec:
    def __init__(self, flavor, scenario):
        self.flavor, self.scenario = flavor, scenario
        self.rows = []
        self.cur = STEPS.get(scenario, [scenario])[0]
        self.conv = []  # join/leave -> converged, ms (NOTIFY-driven)
        self.quiet = False  # set once the main thread gave up on the scenario: its late rows are not shown

    def step(self, name):
        self.cur = name

    def ok(self, figure="", detail=""):
        self.rows.append({"flavor": self.flavor, "scenario": self.cur, "status": "pass", "figure": figure,
                          "detail": detail})
        self.quiet or log("PASS  %-12s %-34s %s %s" % (self.flavor, self.cur, figure, detail))

    def skip(self, reason, name=None):
        self.rows.append({"flavor": self.flavor, "scenario": name or self.cur, "status": "skip", "figure": "",
                          "detail": reason})
        self.quiet or log("SKIP  %-12s %-34s %s" % (self.flavor, name or self.cur, reason))

    def fail(self, msg, name=None):
        self.rows.append({"flavor": self.flavor, "scenario": name or self.cur, "status": "fail", "figure": "",
                          "detail": msg})
        self.quiet or log("FAIL  %-12s %-34s %s" % (self.flavor, name or self.cur, msg))


LOG_LOCK = threading.Lock()
LOG_STUCK = []


def log(s):
    """One line on stdout. Never waits long for the lock: the main thread uses this too and must
    not hang behind a worker."""
    if not LOG_STUCK and LOG_LOCK.acquire(timeout=2):
        try:
            print(s, flush=True)
        finally:
            LOG_LOCK.release()
    else:
        LOG_STUCK.append(True)  # a thread holds it for good: raw writes from now on
        os.write(1, (s + "\n").encode())


def finish_steps(rec):
    """Steps of the scenario that recorded nothing: skipped with the reason."""
    done = {r["scenario"] for r in rec.rows}
    last = rec.rows[-1] if rec.rows else None
    for st in STEPS.get(rec.scenario, []):
        if st in done:
            continue
        if last and last["status"] == "skip":
            rec.skip(last["detail"], name=st)
        elif last and last["status"] == "fail":
            rec.skip("not run: step '%s' failed" % last["scenario"], name=st)
        else:
            rec.skip("not run", name=st)


# JVM weights are counted in tenths, as integers: with float weights (0.4 per Go/Node client) the
# running sum drifted (1.2 + 0.8 - 1.2 - 0.8 != 0), so after the small jobs a residue kept the pool
# "not quite empty" forever and every job of full weight (3) waited until the deadline
UNITS = 10


class Job:
    """One scenario x flavor. Its state moves under Pool.cv: queued -> running -> done, or to
    abandoned when the main thread gives up on it (timeout, deadline, signal)."""

    def __init__(self, label, weight, fn, flavor_name, arg, timeout_s):
        self.label, self.fn, self.flavor_name, self.arg = label, fn, flavor_name, arg
        self.units = max(1, int(round(weight * UNITS)))
        self.timeout_s = timeout_s
        self.state = "queued"
        self.held = 0
        self.started = None
        self.rec = None
        self.env = None
        self.result = None
        self.why = ""


class Pool:
    """Admits jobs while the JVM weight in use stays <= capacity; the main thread can abandon a
    job (its weight is given back at once, whatever its thread is doing)."""

    def __init__(self, capacity):
        self.capacity = capacity * UNITS
        self.used = 0
        self.closed = False
        self.cv = threading.Condition()

    def close(self):
        """No job is admitted any more (the run is ending): weight given back by abandoned jobs
        must not let queued ones start."""
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def acquire(self, job):
        w = min(job.units, self.capacity)
        with self.cv:
            while job.state == "queued" and not self.closed and self.used + w > self.capacity:
                self.cv.wait(0.5)
            if job.state != "queued" or self.closed:
                return False  # abandoned while it waited, or the run is ending
            self.used += w
            job.held, job.state, job.started = w, "running", time.monotonic()
            return True

    def finish(self, job, rec):
        """Called by the job's thread; False when the main thread has already abandoned it."""
        with self.cv:
            if job.state != "running":
                return False
            self.used -= job.held
            job.state, job.result = "done", rec
            self.cv.notify_all()
            return True

    def abandon(self, job, why):
        with self.cv:
            if job.state not in ("queued", "running"):
                return None
            if job.rec is not None:
                job.rec.quiet = True
            prev = job.state
            if prev == "running":
                self.used -= job.held
            job.state, job.why = "abandoned", why
            self.cv.notify_all()
            return prev


def run_job(pool, job):
    if not pool.acquire(job):
        return
    log("START %-12s %s" % (job.flavor_name, job.label))
    rec = Rec(job.flavor_name, job.label)
    job.rec = rec
    env = None
    failed = False
    try:
        env = job.env = Env("%s-%s" % (job.flavor_name, job.label))
        if job.state != "running":
            rec.quiet = True
            raise Abandoned("ended before it began")
        job.fn(env, job.arg, rec)
    except Skip as e:
        rec.skip(str(e))
    except Fail as e:
        failed = True
        rec.fail(str(e).replace("\n", " ")[:800] + " [files: %s]" % (env.dir if env else "-"))
    except Exception as e:  # a harness error is a failure too
        failed = True
        if job.state == "running":
            rec.fail("%s: %s [files: %s]" % (type(e).__name__, e, env.dir if env else "-"))
            traceback.print_exc()
    finally:
        if env is not None:
            env.cleanup(keep=failed or job.state != "running" or any(
                r["status"] == "fail" and not r["detail"].startswith("FINDING") for r in rec.rows))
    finish_steps(rec)
    rec.seconds = time.monotonic() - job.started
    pool.finish(job, rec)


def abandoned_rec(job):
    """The rows of a job the main thread gave up on: what it recorded so far (a snapshot: its
    thread may still run), a failure for the step it was in, the rest not run."""
    rec = Rec(job.flavor_name, job.label)
    src = job.rec
    if src is not None:
        rec.rows = [dict(r) for r in list(src.rows)]
        rec.conv = list(src.conv)
        rec.cur = src.cur
    rec.fail(job.why)
    finish_steps(rec)
    rec.seconds = time.monotonic() - job.started if job.started else 0.0
    return rec


STOP_SIGNAL = []


def on_signal(signum, frame):
    if STOP_SIGNAL:  # a second signal: no more reporting
        for env in list(ALL_ENVS):
            env.kill_all()
        os._exit(128 + signum)
    STOP_SIGNAL.append(signum)


out = log  # the main thread's name for it


# seconds one scenario may run (pool wait not counted) before it is ended as failed; the
# slowest take ~50 s on a quiet machine
SCENARIO_TIMEOUT_S = {"hundred": 300, "orderly": 240, "subscribe": 240}


def main():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=os.environ.get("CLIENTS_ONLY", ""), help="regex over scenario names")
    ap.add_argument("--flavors", default=os.environ.get("CLIENTS_FLAVORS", ""))
    ap.add_argument("--jvms", type=int, default=int(os.environ.get("CLIENTS_JVMS", "3")))
    ap.add_argument("--doc", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--no-mixed", action="store_true")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("CLIENTS_TIMEOUT_S", "900")),
                    help="deadline of the whole run, s: unfinished scenarios fail, their processes are killed")
    ap.add_argument("--scenario-timeout", type=float,
                    default=float(os.environ.get("CLIENTS_SCENARIO_TIMEOUT_S", "200")),
                    help="default time one scenario may run, s (longer ones: SCENARIO_TIMEOUT_S)")
    a = ap.parse_args()
    notes = [n for n in os.environ.get("CLIENTS_NOTES", "").split("\n") if n.strip()]
    fls = flavors(a.flavors, notes)
    notes += [f.note for f in fls if f.note]
    started = time.time()
    t0 = time.monotonic()
    pool = Pool(a.jvms)
    results = []
    jobs = []
    for name, fn, w in SCENARIOS:
        if a.only and not re.search(a.only, name):
            continue
        for f in fls:
            reason = UNSUPPORTED.get((f.name, name))
            if reason:
                rec = Rec(f.name, name)
                for st in STEPS[name]:
                    rec.skip(reason, name=st)
                results.append(rec)
                continue
            jobs.append(Job(name, w * f.weight, fn, f.name, f, SCENARIO_TIMEOUT_S.get(name, a.scenario_timeout)))
    if not a.no_mixed and (not a.only or re.search(a.only, "mixed")):
        mix = [f for f in fls if f.name in ("java-4.9.8", "java-5.3.3", "go")]
        if len(mix) >= 2:
            jobs.append(Job("mixed", sum(f.weight for f in mix), sc_mixed, "mixed", mix, a.scenario_timeout))
    rank = {k: i for i, k in enumerate(LONG_FIRST)}
    jobs.sort(key=lambda j: rank.get((j.label, j.flavor_name), len(rank)))  # stable: the rest keep SCENARIOS order
    deadline = time.monotonic() + a.timeout
    # start in order; the pool admits them as weight allows. Daemon threads: a worker that never
    # returns cannot keep the process alive, the main thread alone decides when the run ends
    for j in jobs:
        threading.Thread(target=run_job, args=(pool, j), daemon=True).start()
        time.sleep(0.05)
    # the main thread only watches: it never joins a worker or waits on anything a worker holds
    ended = ""
    while True:
        with pool.cv:
            running = [j for j in jobs if j.state == "running"]
            left = [j for j in jobs if j.state in ("queued", "running")]
        if not left:
            break
        now = time.monotonic()
        if STOP_SIGNAL or now >= deadline:
            ended = ("stopped by signal %d" % STOP_SIGNAL[0]) if STOP_SIGNAL else \
                "harness deadline (%.0f s) reached" % a.timeout
            pool.close()
            for j in left:
                prev = pool.abandon(j, "not finished: %s (%s)" % (ended, "was running" if j.state == "running"
                                                                  else "never started: no JVM slot"))
                if prev == "running" and j.env is not None:
                    j.env.kill_all(reap_until=0)
            break
        for j in running:
            if now - j.started > j.timeout_s:
                if pool.abandon(j, "scenario timed out after %d s (its processes killed)" % j.timeout_s):
                    if j.env is not None:
                        j.env.kill_all()
        time.sleep(0.2)
    reap_until = time.monotonic() + 5
    for env in list(ALL_ENVS):  # and anything a thread started after its job was given up
        env.kill_all(reap_until=reap_until)
    unfinished = [j for j in jobs if j.state == "abandoned"]
    for j in jobs:
        results.append(j.result if j.state == "done" else abandoned_rec(j))
    elapsed = time.monotonic() - t0
    rows = [r for rec in results for r in rec.rows]
    try:
        if a.doc:
            write_doc(a.doc, results, fls, notes, started, elapsed)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"rows": rows, "conv": {rec.flavor + "/" + rec.scenario: rec.conv for rec in results},
                           "seconds": {rec.flavor + "/" + rec.scenario: round(getattr(rec, "seconds", 0), 1)
                                       for rec in results}}, f, indent=1)
    except Exception as e:  # the summary below must still be printed
        out("# report not written: %s: %s" % (type(e).__name__, e))
        rows.append({"status": "fail"})
    for f in sorted({rec.flavor for rec in results}):
        v = [x for rec in results if rec.flavor == f for x in rec.conv]
        if v:
            out("# %s join/leave->converged: n=%d p50=%d ms p99=%d ms" % (f, len(v), pct(v, 50), pct(v, 99)))
    slow = sorted(results, key=lambda r: -getattr(r, "seconds", 0))[:5]
    out("# slowest: " + ", ".join("%s/%s %.0fs" % (r.flavor, r.scenario, getattr(r, "seconds", 0)) for r in slow))
    out("# elapsed %.0f s" % elapsed)
    if ended:
        out("# ended early: " + ended)
    if unfinished:
        out("# unfinished %d (failed): %s" % (len(unfinished), ", ".join(
            "%s/%s" % (j.flavor_name, j.label) for j in unfinished)))
    npass = sum(1 for r in rows if r["status"] == "pass")
    nfail = sum(1 for r in rows if r["status"] == "fail")
    out("# skip %d" % sum(1 for r in rows if r["status"] == "skip"))
    out("# pass %d" % npass)
    out("# fail %d" % nfail)
    os._exit(0 if nfail == 0 and not unfinished else 1)

if __name__ == "__main__":
    main()
