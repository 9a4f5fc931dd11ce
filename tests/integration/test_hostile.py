"""Hostile peers against the real daemon: each test reproduces one attack
from docs/reliability.md ("Attacks and what bounds them") and asserts the
bound: other clients keep being answered, memory and disk stay bounded, the
daemon stays up. Loopback only; every loop bounded in count and time."""
import os
import resource
import socket
import sqlite3
import subprocess
import struct
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, DaemonCase, encode_header_json, frame, heartbeat_body  # noqa: E402

GET_CONSUMER_LIST = 38


def probe_latencies(d, stop, out, period=0.02, limit=2000):
    """Asks for a consumer list every period seconds on its own connection
    until stop is set (at most limit times); appends each round trip (s), or
    None for a request not answered within 5 s."""
    c = d.connect()
    try:
        for _ in range(limit):
            if stop.is_set():
                break
            t0 = time.monotonic()
            try:
                c.request(GET_CONSUMER_LIST, {"consumerGroup": "probe"}, timeout=5.0)
                out.append(time.monotonic() - t0)
            except Exception:  # noqa: BLE001 - a missing answer is what we count
                out.append(None)
                break
            time.sleep(period)
    finally:
        c.close()


def ext_header(nkeys, serialize):
    """A GET_CONSUMER_LIST_BY_GROUP header with nkeys extra extFields keys,
    built in linear time (rmqclient's encoder concatenates)."""
    if serialize == 0:
        h = {"code": GET_CONSUMER_LIST, "flag": 0, "language": "JAVA", "opaque": 7, "version": 409,
             "extFields": {"consumerGroup": "g"}}
        head = encode_header_json(h)[:-2]  # up to the extFields object's closing "}}"
        keys = b"".join(b',"k%07d":""' % i for i in range(nkeys))
        return head + keys + b"}}"
    entries = [struct.pack(">h", 13) + b"consumerGroup" + struct.pack(">i", 1) + b"g"]
    entries += [struct.pack(">h", 8) + b"k%07d" % i + struct.pack(">i", 0) for i in range(nkeys)]
    ext = b"".join(entries)
    return (struct.pack(">hBhii", GET_CONSUMER_LIST, 0, 409, 7, 0) + struct.pack(">i", 0)
            + struct.pack(">i", len(ext)) + ext)


class ManyExtFieldKeys(DaemonCase):
    """A header is bounded (--max-header-bytes, 64 KiB by default) and decoded
    in time linear in its size: one with hundreds of thousands of extFields
    keys closes only its own connection, one just under the limit is
    answered, and other clients are served throughout."""

    def check(self, serialize, nkeys, answered):
        hb = ext_header(nkeys, serialize)
        self.assertLess(len(hb) + 8, 16 << 20, "the frame must fit the default frame limit")
        stop, lat = threading.Event(), []
        t = threading.Thread(target=probe_latencies, args=(self.d, stop, lat))
        t.start()
        try:
            time.sleep(0.2)
            big = self.d.connect()
            self.conns.append(big)
            try:
                big.send_raw(frame(hb, b"", serialize))
            except ConnectionResetError:
                self.assertFalse(answered, "a header under the limit was refused")
            if answered:
                reply = big.recv_frame(timeout=5.0)
                self.assertIsNotNone(reply, "a header under the limit got no reply")
                self.assertEqual(reply.remark, "no consumer for this group, g")
            else:
                self.assertTrue(big.is_closed_by_peer(timeout=5.0), "an oversized header must close its connection")
            time.sleep(0.3)
        finally:
            stop.set()
            t.join(15)
        self.assertTrue(lat and all(x is not None for x in lat), "a probe request went unanswered")
        self.assertLess(max(lat), 0.25, "the loop stalled %.3f s on one frame" % max(lat))

    def test_binary_header_over_the_limit(self):
        self.check(1, 900_000, answered=False)
        self.assertIn("header limit", self.d.logtext())

    def test_json_header_over_the_limit(self):
        self.check(0, 700_000, answered=False)

    def test_headers_just_under_the_limit(self):
        self.check(1, 4_500, answered=True)
        self.check(0, 4_300, answered=True)


def cpu_seconds(pid):
    """User + system CPU time of pid so far, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FdLimitedDaemon(Daemon):
    """A daemon whose open-file limit (soft and hard) is nofile."""

    nofile = 128

    def start(self):
        real = subprocess.Popen

        def popen(*a, **kw):
            kw["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))
            return real(*a, **kw)

        subprocess.Popen = popen
        try:
            super().start()
        finally:
            subprocess.Popen = real


class OutOfDescriptors(unittest.TestCase):
    """More connections than the open-file limit: accept pauses instead of
    spinning, the failure is logged about once a second, and the daemon
    accepts again (remoting and HTTP) once connections go away."""

    def test_accept_pauses_at_the_fd_limit(self):
        d = FdLimitedDaemon()
        socks = []
        try:
            for _ in range(d.nofile + 40):  # bounded: 40 past the limit
                try:
                    socks.append(socket.create_connection(("127.0.0.1", d.port), timeout=2))
                except OSError:
                    break
            time.sleep(0.5)  # the backlog is full; the daemon has seen EMFILE
            cpu0, t0 = cpu_seconds(d.proc.pid), time.monotonic()
            time.sleep(3.0)
            cpu = (cpu_seconds(d.proc.pid) - cpu0) / (time.monotonic() - t0)
            self.assertLess(cpu, 0.05, "the daemon used %.0f%% of a core while out of descriptors" % (cpu * 100))
            lines = [ln for ln in d.logtext().splitlines() if "accept failed" in ln]
            self.assertGreater(len(lines), 0, "running out of descriptors was not logged")
            self.assertLessEqual(len(lines), 6, "accept failures flooded the log: %d lines" % len(lines))
            for sk in socks:
                sk.close()
            socks = []
            time.sleep(0.5)
            c = d.connect()
            try:
                f = c.request(GET_CONSUMER_LIST, {"consumerGroup": "probe"}, timeout=3.0)
                self.assertIsNotNone(f)
            finally:
                c.close()
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % d.http_port, timeout=5) as r:
                self.assertRegex(r.read().decode(), r"rmqcoord_accept_failures_total [1-9]")
        finally:
            for sk in socks:
                sk.close()
            self.assertTrue(d.alive())
            self.assertEqual(d.stop(), 0)


HEART_BEAT = 34


class ConnectionChurn(DaemonCase):
    """Bare connect/close churn writes nothing: a channel row is written at
    the first accepted request, not at accept."""

    def count_channels(self):
        db = sqlite3.connect("file:%s?mode=ro" % self.d.store, uri=True, timeout=5)
        try:
            return db.execute("SELECT count(*) FROM channels").fetchone()[0]
        finally:
            db.close()

    def test_bare_connections_leave_no_rows(self):
        for _ in range(300):  # bounded churn
            socket.create_connection(("127.0.0.1", self.d.port), timeout=2).close()
        c = self.d.connect()
        self.conns.append(c)
        c.request(HEART_BEAT, body=heartbeat_body("10.0.0.1@churn", {"g1": ["t1"]}))
        time.sleep(1.5)  # the lazy commit is visible within --sync-interval-ms
        self.assertEqual(self.count_channels(), 1, "only the connection that sent a request has a row")


class LogInjection(DaemonCase):
    """A client id with a newline cannot forge a log line."""

    def test_client_id_newline(self):
        forged = "2026-01-01T00:00:00.000Z info  group g9: join FORGED -> members [\"FORGED\"]"
        c = self.d.connect()
        self.conns.append(c)
        c.request(HEART_BEAT, body=heartbeat_body("10.0.0.9@x\n" + forged, {"g9": ["t9"]}))
        time.sleep(0.3)
        for line in self.d.logtext().splitlines():
            self.assertFalse(line.startswith("2026-01-01T00:00:00.000Z"), "forged log line: %r" % line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
