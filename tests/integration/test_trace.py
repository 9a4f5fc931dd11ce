"""Process-level test of heartbeat traces: record a scenario against the live
daemon (--record), stop it, replay the trace offline and check that the
replay's membership timeline is the daemon's own (its events table: kinds
and member lists, in order). Then replay the trace live against a fresh
daemon, and check trace-gen + replay determinism."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, heartbeat_body  # noqa: E402

HB, UNREG = 34, 35
BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "rmqcoord")
EXPIRY = ("--channel-expiry-ms", "1500", "--expiry-scan-ms", "100")


def run(*args, check=True):
    p = subprocess.run([BIN] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("rmqcoord %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr.decode()))
    return p


def store_events(store, group):
    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT kind, after_json FROM events WHERE group_name = ? ORDER BY id", (group,)).fetchall()
    finally:
        db.close()
    return [(k, json.loads(a)) for k, a in rows if k != "restart"]


def replay_changes(path, group, *flags):
    out = run("replay", path, "--format", "json", *flags).stdout.decode()
    recs = [json.loads(line) for line in out.splitlines()]
    return [(r["kind"], r["members"]) for r in recs if r["type"] == "change" and r["group"] == group], recs


class TraceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rmqcoord-trace-")
        self.trace = os.path.join(self.tmp, "trace.jsonl")
        self.daemons = []
        self.conns = []

    def tearDown(self):
        for c in self.conns:
            c.close()
        for d in self.daemons:
            if d.alive():
                d.stop()

    def daemon(self, *extra):
        d = Daemon(*(EXPIRY + extra), store=os.path.join(self.tmp, "s%d.db" % len(self.daemons)))
        self.daemons.append(d)
        return d

    def conn(self, d):
        c = d.connect()
        self.conns.append(c)
        return c

    def hb(self, c, cid, topics):
        r = c.request(HB, body=heartbeat_body(cid, {"G": topics}))
        self.assertIsNotNone(r)
        self.assertEqual(r.code, 0, r)

    def record_scenario(self):
        """Joins, a subscription change, a crash (close), an unregister, an expiry."""
        d = self.daemon("--record", self.trace, "--topic", "T:8", "--topic", "T2:4")
        a, b, c = self.conn(d), self.conn(d), self.conn(d)
        self.hb(a, "cA", ["T"])
        self.hb(b, "cB", ["T"])
        self.hb(c, "cC", ["T"])
        time.sleep(0.05)
        self.hb(a, "cA", ["T", "T2"])  # the group table gains T2: a subscription change
        b.close()  # B crashes
        time.sleep(0.2)
        r = c.request(UNREG, {"clientID": "cC", "consumerGroup": "G", "producerGroup": "CLIENT_INNER_PRODUCER"})
        self.assertEqual(r.code, 0)
        dd = self.conn(d)
        self.hb(dd, "cD", ["T", "T2"])  # D then goes silent and expires
        for _ in range(10):  # A keeps heartbeating while D expires
            time.sleep(0.3)
            self.hb(a, "cA", ["T", "T2"])
        self.assertTrue(dd.is_closed_by_peer(3.0), "the silent member's connection was not closed")
        self.assertEqual(d.stop(), 0)
        return d

    def test_offline_replay_matches_daemon_events(self):
        d = self.record_scenario()
        want = store_events(d.store, "G")
        kinds = [k for k, _ in want]
        for k in ("join", "subscription", "close", "unregister", "expire"):
            self.assertIn(k, kinds, want)
        got, recs = replay_changes(self.trace, "G", *EXPIRY)
        self.assertEqual(got, want)
        totals = [r for r in recs if r["type"] == "totals"][0]
        self.assertEqual(totals["heartbeatsRejected"], 0)
        self.assertEqual(totals["expiries"], 1)
        # Deterministic: the same input gives the same bytes.
        one = run("replay", self.trace, *EXPIRY).stdout
        two = run("replay", self.trace, *EXPIRY).stdout
        self.assertEqual(one, two)
        self.assertIn(b"== queues", one)
        # --explain gives a history for a queue of T.
        ex = run("replay", self.trace, "--explain", "T:broker-a:0", *EXPIRY).stdout.decode()
        self.assertIn("== explain T:broker-a:0", ex)
        self.assertIn("took broker-a:0", ex)
        # Appending a second run: the new header marks a restart.
        d2 = self.daemon("--record", self.trace)
        self.assertEqual(d2.stop(), 0)
        got2, _ = replay_changes(self.trace, "G", *EXPIRY)
        self.assertEqual(got2, want)

    def test_live_replay(self):
        self.record_scenario()
        target = self.daemon()
        out = run("replay", self.trace, "--target", "127.0.0.1:%d" % target.port, "--speed", "1").stdout.decode()
        self.assertIn("replay live:", out)
        counts = {k: int(v) for v, k in re.findall(r"(\d+) (line\(s\)|connection\(s\) opened|failed|skipped|"
                                                   r"request\(s\) sent|dropped|response\(s\)|NOTIFY received)", out)}
        # Four recorded channels (A, B, C, D) and 16 requests, answered on their own connections; A's
        # last heartbeat may go unanswered: its close (the recording daemon's stop) is in the same ms.
        self.assertEqual(counts["connection(s) opened"], 4, out)
        self.assertEqual((counts["failed"], counts["skipped"], counts["dropped"]), (0, 0, 0), out)
        self.assertEqual(counts["request(s) sent"], 16, out)
        self.assertIn(counts["response(s)"], (15, 16), out)
        self.assertGreater(counts["NOTIFY received"], 0, out)
        time.sleep(0.3)
        self.assertEqual(target.stop(), 0)
        kinds = [k for k, _ in store_events(target.store, "G")]
        self.assertEqual(kinds[:3], ["join", "join", "join"])
        for k in ("subscription", "close", "unregister"):
            self.assertIn(k, kinds)

    def test_trace_gen_and_replay(self):
        path = os.path.join(self.tmp, "gen.jsonl")
        args = ["trace-gen", "--groups", "3", "--clients", "4", "--duration-ms", "600000", "--churn-per-min", "6",
                "--crash-rate", "0.3", "--freeze-rate", "0.2", "--jitter-ms", "2000", "--seed", "9"]
        a = run(*args).stdout
        self.assertEqual(a, run(*args).stdout, "trace-gen must be deterministic per seed")
        self.assertNotEqual(a, run(*(args[:-1] + ["10"])).stdout)
        with open(path, "wb") as f:
            f.write(a)
        p = run("replay", path, "--format", "json")
        recs = [json.loads(line) for line in p.stdout.decode().splitlines()]
        totals = [r for r in recs if r["type"] == "totals"][0]
        self.assertGreater(totals["joins"], 12)
        self.assertGreater(totals["expiries"], 0)
        self.assertIn(b"events/s", p.stderr)
        # A malformed line stops the replay with its line number.
        with open(path, "ab") as f:
            f.write(b'{"ts":1,"event":"nope"}\n')
        bad = run("replay", path, check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn(b"unknown event", bad.stderr)

    def recorded_notify_rounds(self, group):
        """The recorded NOTIFYs of group, as one delivery count per round (rounds are 50 ms apart)."""
        rounds = {}
        with open(self.trace) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("event") == "notify" and ev["group"] == group:
                    rounds[ev["ts"]] = rounds.get(ev["ts"], 0) + 1
        return [rounds[t] for t in sorted(rounds)]

    def test_replay_predicts_broker49_notifies(self):
        """--compat broker-4.9 notifies broadcasting groups and answers a no-op UNREGISTER_CLIENT with a
        NOTIFY; replay --compat broker-4.9 predicts the NOTIFYs the daemon sent, round by round."""
        d = self.daemon("--record", self.trace, "--topic", "T:4", "--compat", "broker-4.9")
        a, b, c = self.conn(d), self.conn(d), self.conn(d)
        for conn, cid in ((a, "cA"), (b, "cB")):
            r = conn.request(HB, body=heartbeat_body(cid, {"BG": ["T"]}, model="BROADCASTING"))
            self.assertEqual(r.code, 0, r)
            time.sleep(0.05)
        for conn, cid in ((b, "cB"), (c, "cC")):  # a leave, then an unregister that removes nothing
            r = conn.request(UNREG, {"clientID": cid, "consumerGroup": "BG", "producerGroup": "P"})
            self.assertEqual(r.code, 0, r)
            time.sleep(0.05)
        self.assertEqual(d.stop(), 0)
        sent = self.recorded_notify_rounds("BG")
        self.assertEqual(sent, [1, 2, 1, 1], "the daemon's NOTIFYs: two joins, a leave, a no-op unregister")

        def predicted(*flags):
            out = run("replay", self.trace, "--format", "json", "--notify-source", "model", *flags).stdout
            recs = [json.loads(line) for line in out.decode().splitlines()]
            return [r["clients"] for r in recs if r["type"] == "notify" and r["group"] == "BG"]

        self.assertEqual(predicted("--compat", "broker-4.9"), sent)
        self.assertEqual(predicted(), [], "rmqcoord's own dialect notifies no broadcasting group")
        self.assertEqual(predicted("--compat", "broker-5"), [])
        # As for serve: --compat sets the broker's expiry rules, a flag given with it (before or after) wins.
        for flags, want in ((("--compat", "broker-4.9"), (10000, False)),
                            (("--notify-on-expiry", "on", "--compat=broker-4.9", "--expiry-scan-ms", "500"),
                             (500, True))):
            out = run("replay", self.trace, "--format", "json", *flags).stdout.decode()
            meta = [json.loads(line) for line in out.splitlines() if '"type":"meta"' in line][0]
            self.assertEqual((meta["expiryScanMs"], meta["notifyOnExpiry"]), want, flags)
        bad = run("replay", self.trace, "--compat", "broker-3", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn(b"--compat takes", bad.stderr)


class TraceBounds(unittest.TestCase):
    """A refused (oversized) heartbeat is not recorded, and the trace never
    passes --record-max-bytes: recording stops on a whole line, logged."""

    def test_refused_heartbeats_not_recorded_and_size_bound(self):
        tmp = tempfile.mkdtemp(prefix="rmqcoord-trace-")
        trace = os.path.join(tmp, "t.jsonl")
        d = Daemon("--record", trace, "--record-max-bytes", "65536", "--max-heartbeat-bytes", "4096",
                   store=os.path.join(tmp, "s.db"))
        try:
            c = d.connect()
            big = heartbeat_body("big", {"G": ["T%d" % i for i in range(400)]})
            for _ in range(20):  # each ~20 KB, refused before parsing
                r = c.request(HB, body=big)
                self.assertEqual(r.code, 1)
                self.assertIn("--max-heartbeat-bytes", r.remark)
            for i in range(400):  # small ones, recorded until the bound
                self.assertEqual(c.request(HB, body=heartbeat_body("c%d" % i, {"G": ["T"]})).code, 0)
            c.close()
            self.assertEqual(d.stop(), 0)
            size = os.path.getsize(trace)
            with open(trace, "rb") as f:
                data = f.read()
            self.assertLessEqual(size, 65536)
            self.assertGreater(size, 32768, "small heartbeats were recorded")
            self.assertTrue(data.endswith(b"\n"), "the trace ends on a whole line")
            self.assertNotIn(b'"big"', data, "a refused heartbeat was recorded")
            self.assertIn("--record-max-bytes 65536 reached", d.logtext())
            for line in data.splitlines():
                json.loads(line)
        finally:
            if d.alive():
                d.stop()


    def test_replay_errors_name_the_limit_and_the_line(self):
        tmp = tempfile.mkdtemp(prefix="rmqcoord-trace-")
        p = run("replay", tmp, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("Is a directory", p.stderr.decode())
        path = os.path.join(tmp, "long.jsonl")
        with open(path, "w") as f:
            f.write('{"rmqcoordTrace":1,"ts":1000,"format":"docs/trace-format.md"}\n')
            f.write('{"ts":1000,"event":"connect","conn":1,"peer":"' + "x" * (49 << 20) + '"}\n')
        p = run("replay", path, check=False)
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 1)
        self.assertIn("line 2: longer than 50331648 bytes (48 MiB", err)
        self.assertEqual(err.count("\n"), 1, "one message, not a second generic one: %r" % err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
