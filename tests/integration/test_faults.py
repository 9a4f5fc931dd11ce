"""Fault tests: the daemon killed at random moments under load, a full disk,
slow and hostile peers. Each loop is bounded in count and time."""
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, heartbeat_body, run_tests  # noqa: E402

HB, LIST, QUERY_OFF, UPDATE_OFF, ROUTE = 34, 38, 14, 15, 105
KILL_ROUNDS = int(os.environ.get("RMQ_KILL_ROUNDS", "50"))
QUEUES = 4


class KillNine(unittest.TestCase):
    def test_acknowledged_offsets_survive_kill_9(self):
        d = Daemon("--topic", "T:%d" % QUEUES)
        rng = random.Random(1234)
        acked = {q: -1 for q in range(QUEUES)}
        survived = 0
        try:
            for rnd in range(KILL_ROUNDS):
                c = d.connect()
                self.assertEqual(c.request(HB, body=heartbeat_body("c1", {"G": ["T"]})).code, 0)
                # PROTOCOL (README, "Acknowledged means stored"): a restart must find every acknowledged offset.
                for q in range(QUEUES):
                    r = c.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": q})
                    self.assertIsNotNone(r, "round %d: no answer after restart" % rnd)
                    self.assertGreaterEqual(int(r.ext["offset"]), acked[q],
                                            "round %d queue %d: acknowledged offset lost" % (rnd, q))
                killer = threading.Timer(rng.uniform(0.005, 0.08), d.proc.kill)
                killer.start()
                sent = {}
                next_off = {q: acked[q] + 1 for q in range(QUEUES)}
                deadline = time.monotonic() + 2
                try:
                    while time.monotonic() < deadline and d.proc.poll() is None:
                        for q in range(QUEUES):
                            o = c.send(UPDATE_OFF, {"topic": "T", "consumerGroup": "G", "queueId": q,
                                                    "commitOffset": next_off[q]})
                            sent[o] = (q, next_off[q])
                            next_off[q] += 1
                        for o in list(sent):
                            r = c.wait_response(o, timeout=0.0 if len(sent) > 64 else 0.05)
                            if r is not None:
                                q, off = sent.pop(o)
                                if r.code == 0:
                                    acked[q] = max(acked[q], off)
                except OSError:
                    pass  # the daemon died under us: that is the point
                killer.join()
                d.proc.wait(5)
                c.close()
                d.stop()
                db = sqlite3.connect(d.store)
                self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
                db.close()
                d.start()
                survived += 1
            c = d.connect()
            self.assertEqual(c.request(HB, body=heartbeat_body("c1", {"G": ["T"]})).code, 0)
            self.assertEqual(c.request(LIST, {"consumerGroup": "G"}).json()["consumerIdList"], ["c1"],
                             "clients re-register cleanly")
            for q in range(QUEUES):
                r = c.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": q})
                self.assertGreaterEqual(int(r.ext["offset"]), acked[q])
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)
        print("kill -9 rounds survived: %d of %d, offsets acknowledged: %s" % (survived, KILL_ROUNDS, acked))
        self.assertEqual(survived, KILL_ROUNDS)
        self.assertTrue(all(v > 0 for v in acked.values()), "the load must have committed something")


def try_mount_tmpfs(path, size):
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                          capture_output=True).returncode == 0


class DiskFull(unittest.TestCase):
    def test_full_disk_answers_system_error_and_recovers(self):
        mnt = tempfile.mkdtemp(prefix="rmqcoord-full-")
        if not try_mount_tmpfs(mnt, "4m"):
            self.skipTest("cannot mount a small tmpfs here (needs root)")
        d = None
        try:
            d = Daemon("--topic", "T:4", "--http", "off", store=os.path.join(mnt, "store.db"))
            c = d.connect()
            self.assertEqual(c.request(UPDATE_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0,
                                                    "commitOffset": 1}).code, 0)
            filler = os.path.join(mnt, "filler")
            with open(filler, "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
                except OSError:
                    pass
            codes, remark = [], None
            for i in range(200):  # enough pages to need new WAL space
                r = c.request(UPDATE_OFF, {"topic": "T", "consumerGroup": "G%d" % i, "queueId": 0,
                                           "commitOffset": 1000 + i})
                self.assertIsNotNone(r, "a reply, not a dropped connection")
                codes.append(r.code)
                if r.code != 0:
                    remark = r.remark
            self.assertIn(1, codes, "a full disk must turn commits into SYSTEM_ERROR")
            self.assertIn("not stored", remark)
            self.assertTrue(d.alive())
            os.unlink(filler)
            r = c.request(UPDATE_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0, "commitOffset": 77})
            self.assertEqual(r.code, 0, "recovers once space returns")
            c.close()
            self.assertEqual(d.stop(), 0)
            d.start()
            c = d.connect()
            r = c.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0})
            self.assertEqual(r.ext.get("offset"), "77")
            c.close()
        finally:
            if d:
                d.stop()
            subprocess.run(["umount", mnt], capture_output=True)


class DiskFullWhileJoining(unittest.TestCase):
    """Offsets committed one at a time while members join and the disk fills:
    a SUCCESS must be in the store, and the live view must not run ahead of
    it. A write SQLite rolls back with the whole batch (SQLITE_FULL) used to
    leave its held replies to go out as SUCCESS."""

    def test_no_acknowledged_commit_lost_and_view_not_ahead(self):
        mnt = tempfile.mkdtemp(prefix="rmqcoord-full2-")
        if not try_mount_tmpfs(mnt, "6m"):
            self.skipTest("cannot mount a small tmpfs here (needs root)")
        d = None
        stop = threading.Event()
        try:
            d = Daemon("--topic", "T:1", "--http", "off", store=os.path.join(mnt, "store.db"))
            committer, joiner = d.connect(), d.connect()

            def join_loop():
                # New members, each a join written to the store: writes that
                # are not acknowledged and may be the ones SQLite fails.
                i = 0
                while not stop.is_set() and i < 20000:
                    joiner.request(HB, body=heartbeat_body("j-%d" % i, {"J%d" % (i % 50): ["T"]}), timeout=5)
                    i += 1

            t = threading.Thread(target=join_loop, daemon=True)
            t.start()
            filler = os.path.join(mnt, "filler")
            acked, failures, offset = 0, 0, 0
            deadline = time.monotonic() + 25
            with open(filler, "wb", buffering=0) as f:
                while time.monotonic() < deadline and offset < 12000 and failures < 300:
                    offset += 1
                    r = committer.request(UPDATE_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0,
                                                       "commitOffset": offset}, timeout=5)
                    self.assertIsNotNone(r, "a reply, not a dropped connection")
                    if r.code == 0:
                        acked = offset
                    else:
                        failures += 1
                    if offset > 200:
                        try:  # fill a little more each time, until nothing fits
                            f.write(b"\0" * 16384)
                        except OSError:
                            pass
            stop.set()
            t.join(10)
            self.assertGreater(failures, 0, "the disk never filled: the test proved nothing")
            os.unlink(filler)
            live = committer.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0})
            committer.close()
            joiner.close()
            self.assertEqual(d.stop(), 0)
            db = sqlite3.connect(os.path.join(mnt, "store.db"))
            row = db.execute("SELECT queue_offset FROM offsets WHERE group_name='G' AND topic='T' AND queue_id=0"
                             ).fetchone()
            db.close()
            stored = int(row[0]) if row else -1
            print("acknowledged up to %d, %d refused, stored %d, live view %s"
                  % (acked, failures, stored, live.ext.get("offset")))
            self.assertGreaterEqual(stored, acked, "an acknowledged commit is missing from the store")
            self.assertEqual(int(live.ext["offset"]), stored, "the live view ran ahead of the store")
        finally:
            stop.set()
            if d:
                d.stop()
            subprocess.run(["umount", mnt], capture_output=True)


class HostilePeers(unittest.TestCase):
    def test_slow_reader_half_open_and_flood_do_not_hurt_others(self):
        d = Daemon("--max-pending-output", "65536", "--max-requests-per-sec", "2000", "--topic", "T:8")
        try:
            good = d.connect()
            self.assertEqual(good.request(HB, body=heartbeat_body("good", {"G": ["T"]})).code, 0)
            # a reader that never reads: floods route requests with big replies
            slow = socket.create_connection(("127.0.0.1", d.port))
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            from rmqclient import encode_header_json, frame
            req = frame(encode_header_json({"code": ROUTE, "flag": 0, "opaque": 1, "version": 409,
                                            "extFields": {"topic": "T"}}))
            half_open = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(20)]
            for s in half_open:
                s.sendall(req[:5])  # a frame that never completes
            flood = d.connect()
            t_end = time.monotonic() + 1.5
            lat = []
            throttled = 0
            slow.setblocking(False)
            while time.monotonic() < t_end:
                try:
                    slow.send(req * 50)
                except (BlockingIOError, OSError):
                    pass
                for _ in range(20):
                    flood.send(HB, body=heartbeat_body("flood", {"F": ["T"]}))
                f = flood.recv_frame(0.0)
                while f is not None:  # it reads its replies: SUCCESS, or SYSTEM_BUSY past the rate limit
                    throttled += f.code == 2
                    f = flood.recv_frame(0.0)
                t0 = time.monotonic()
                r = good.request(LIST, {"consumerGroup": "G"})
                lat.append(time.monotonic() - t0)
                self.assertIsNotNone(r)
                self.assertEqual(r.code, 0)
            lat.sort()
            p99 = lat[int(len(lat) * 0.99) - 1]
            print("good client: %d requests, p50 %.2f ms, p99 %.2f ms under a slow reader, 20 half-open "
                  "connections and a heartbeat flood (%d flood requests throttled)"
                  % (len(lat), lat[len(lat) // 2] * 1e3, p99 * 1e3, throttled))
            self.assertLess(p99, 0.1, "others keep their latency")
            self.assertTrue(d.alive())
            for s in half_open:
                s.close()
            slow.close()
            flood.close()
            good.close()
        finally:
            self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    run_tests("faults")
