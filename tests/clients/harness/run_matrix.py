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
from lib import ALL_ENVS, CLIENTS, Env, Fail, Skip, pct  # noqa: E402
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

    def step(self, name):
        self.cur = name

    def ok(self, figure="", detail=""):
        self.rows.append({"flavor": self.flavor, "scenario": self.cur, "status": "pass", "figure": figure,
                          "detail": detail})
        log("PASS  %-12s %-34s %s %s" % (self.flavor, self.cur, figure, detail))

    def skip(self, reason, name=None):
        self.rows.append({"flavor": self.flavor, "scenario": name or self.cur, "status": "skip", "figure": "",
                          "detail": reason})
        log("SKIP  %-12s %-34s %s" % (self.flavor, name or self.cur, reason))

    def fail(self, msg, name=None):
        self.rows.append({"flavor": self.flavor, "scenario": name or self.cur, "status": "fail", "figure": "",
                          "detail": msg})
        log("FAIL  %-12s %-34s %s" % (self.flavor, name or self.cur, msg))


LOG_LOCK = threading.Lock()


def log(s):
    with LOG_LOCK:
        print(s, flush=True)


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


class Pool:
    """Runs jobs on threads while the JVM weight in use stays <= capacity."""

    def __init__(self, capacity):
        self.capacity, self.used = capacity, 0
        self.cv = threading.Condition()

    def acquire(self, w):
        w = min(w, self.capacity)
        with self.cv:
            while self.used + w > self.capacity:
                self.cv.wait(1)
            self.used += w
        return w

    def release(self, w):
        with self.cv:
            self.used -= w
            self.cv.notify_all()


def run_job(pool, label, weight, fn, flavor_name, arg, results):
    w = pool.acquire(weight)
    log("START %-12s %s" % (flavor_name, label))
    rec = Rec(flavor_name, label)
    env = Env("%s-%s" % (flavor_name, label))
    t0 = time.monotonic()
    failed = False
    try:
        fn(env, arg, rec)
    except Skip as e:
        rec.skip(str(e))
    except Fail as e:
        failed = True
        rec.fail(str(e).replace("\n", " ")[:800] + " [files: %s]" % env.dir)
    except Exception as e:  # a harness error is a failure too
        failed = True
        rec.fail("%s: %s [files: %s]" % (type(e).__name__, e, env.dir))
        traceback.print_exc()
    finally:
        env.cleanup(keep=failed or any(r["status"] == "fail" and not r["detail"].startswith("FINDING")
                                       for r in rec.rows))
        pool.release(w)
    finish_steps(rec)
    rec.seconds = time.monotonic() - t0
    results.append(rec)

def on_signal(signum, frame):
    for env in list(ALL_ENVS):
        env.cleanup(keep=True)
    os._exit(128 + signum)


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
            jobs.append(("%s" % name, w * f.weight, fn, f.name, f))
    if not a.no_mixed and (not a.only or re.search(a.only, "mixed")):
        mix = [f for f in fls if f.name in ("java-4.9.8", "java-5.3.3", "go")]
        if len(mix) >= 2:
            jobs.append(("mixed", sum(f.weight for f in mix), sc_mixed, "mixed", mix))
    rank = {k: i for i, k in enumerate(LONG_FIRST)}
    jobs.sort(key=lambda j: rank.get((j[0], j[3]), len(rank)))  # stable: the rest keep SCENARIOS order
    threads = []
    for j in jobs:
        th = threading.Thread(target=run_job, args=(pool,) + j + (results,), daemon=True)
        threads.append(th)
    # start in order; the pool admits them as weight allows
    for th in threads:
        th.start()
        time.sleep(0.05)
    deadline = time.monotonic() + float(os.environ.get("CLIENTS_TIMEOUT_S", "900"))
    for th in threads:
        th.join(max(0.1, deadline - time.monotonic()))
    hung = [j for j, th in zip(jobs, threads) if th.is_alive()]
    for j in hung:
        rec = Rec(j[3], j[0])
        rec.fail("scenario still running at the harness deadline")
        results.append(rec)
    for env in list(ALL_ENVS):  # processes of scenarios still running at the deadline
        env.cleanup(keep=True)
    elapsed = time.monotonic() - t0
    rows = [r for rec in results for r in rec.rows]
    if a.doc:
        write_doc(a.doc, results, fls, notes, started, elapsed)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "conv": {rec.flavor + "/" + rec.scenario: rec.conv for rec in results},
                       "seconds": {rec.flavor + "/" + rec.scenario: round(getattr(rec, "seconds", 0), 1)
                                   for rec in results}}, f, indent=1)
    for f in sorted({rec.flavor for rec in results}):
        v = [x for rec in results if rec.flavor == f for x in rec.conv]
        if v:
            log("# %s join/leave->converged: n=%d p50=%d ms p99=%d ms" % (f, len(v), pct(v, 50), pct(v, 99)))
    slow = sorted(results, key=lambda r: -getattr(r, "seconds", 0))[:5]
    log("# slowest: " + ", ".join("%s/%s %.0fs" % (r.flavor, r.scenario, getattr(r, "seconds", 0)) for r in slow))
    log("# elapsed %.0f s" % elapsed)
    npass = sum(1 for r in rows if r["status"] == "pass")
    nfail = sum(1 for r in rows if r["status"] == "fail")
    log("# skip %d" % sum(1 for r in rows if r["status"] == "skip"))
    log("# pass %d" % npass)
    log("# fail %d" % nfail)
    sys.stdout.flush()
    os._exit(0 if nfail == 0 else 1)


if __name__ == "__main__":
    main()
