"""Hostile peers against the admin HTTP API (hostile peers and bad
days, the HTTP side): each test reproduces one attack on the real daemon
and asserts its bound. Loopback only; every loop bounded in count and time.
Run against another binary with RMQCOORD_BIN=/path/to/rmqcoord."""
import http.client
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, DaemonCase, heartbeat_body, probing  # noqa: E402

QUERY_OFF, UPDATE_OFF, HEART_BEAT, GET_CONSUMER_LIST = 14, 15, 34, 38


def raw_http(port, method, path, headers=None, body=b"", timeout=5.0, source=None):
    """One request on a fresh connection (optionally from a given loopback
    source address): (status, headers, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                   source_address=(source, 0) if source else None)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def commit_offset(d, group="G", topic="T", queue=0, offset=42):
    c = d.connect()
    try:
        r = c.request(UPDATE_OFF, raw_ext={"topic": topic, "consumerGroup": group, "queueId": queue,
                                           "commitOffset": offset})
        assert r is not None and r.code == 0, r
    finally:
        c.close()


def query_offset(d, group="G", topic="T", queue=0):
    c = d.connect()
    try:
        r = c.request(QUERY_OFF, raw_ext={"topic": topic, "consumerGroup": group, "queueId": queue})
        return r.ext.get("offset") if r is not None and r.code == 0 else None
    finally:
        c.close()


class CrossSiteMutations(DaemonCase):
    """Without --admin-token a web page of another origin could POST
    /api/reset with a form or a simple fetch (no preflight: empty body,
    text/plain or form content type) and wipe every committed offset. Every
    mutating route now needs Content-Type: application/json (sent cross-site
    only after a CORS preflight, never granted) and answers 415 otherwise;
    a Host that names another server (DNS rebinding) is answered 421."""

    def test_simple_requests_cannot_reset(self):
        commit_offset(self.d)
        self.assertEqual(query_offset(self.d), "42")
        port = self.d.http_port
        attempts = [
            ({}, b""),                                                     # fetch(url, {method:'POST'})
            ({"Content-Type": "text/plain;charset=UTF-8"}, b"{}"),         # fetch with a string body
            ({"Content-Type": "application/x-www-form-urlencoded"}, b"a=1"),  # <form method=post>
            ({"Content-Type": "multipart/form-data; boundary=x"}, b"--x--\r\n"),
        ]
        for headers, body in attempts:
            st, hd, b = raw_http(port, "POST", "/api/reset", headers, body)
            self.assertEqual(st, 415, "%r -> %d %r" % (headers, st, b))
            self.assertTrue(hd.get("content-type", "").startswith("application/json"), hd)
        st, _, _ = raw_http(port, "DELETE", "/api/topics/T")
        self.assertEqual(st, 415)
        self.assertEqual(query_offset(self.d), "42", "a simple cross-site request wiped the offsets")
        # The daemon's own clients send the JSON type and still work.
        st, _, b = raw_http(port, "POST", "/api/reset", {"Content-Type": "application/json"}, b"")
        self.assertEqual(st, 200, b)
        self.assertNotEqual(query_offset(self.d), "42", "the JSON-typed reset did not reset")

    def test_rebinding_host_is_refused(self):
        commit_offset(self.d)
        port = self.d.http_port
        evil = {"Host": "rebind.attacker.example:%d" % port}
        st, hd, b = raw_http(port, "GET", "/api/groups", evil)
        self.assertIn(st, (403, 421), b)
        self.assertTrue(hd.get("content-type", "").startswith("application/json"), hd)
        st, _, _ = raw_http(port, "POST", "/api/reset", dict(evil, **{"Content-Type": "application/json"}))
        self.assertIn(st, (403, 421))
        self.assertEqual(query_offset(self.d), "42", "a rebound page wiped the offsets")
        for host in ("127.0.0.1:%d" % port, "localhost:%d" % port, "LOCALHOST", "[::1]:%d" % port,
                     "127.0.0.2:1", "app.localhost:%d" % port):
            st, _, b = raw_http(port, "GET", "/healthz", {"Host": host})
            self.assertEqual(st, 200, "%s -> %d %r" % (host, st, b))


class TokenSkipsContentType(DaemonCase):
    """With --admin-token a mutation carries the token (which no page can
    send on its own), so the content type is not required."""

    extra = ("--admin-token", "s3cret")

    def test_token_without_json_type(self):
        commit_offset(self.d)
        st, _, _ = raw_http(self.d.http_port, "POST", "/api/reset")
        self.assertEqual(st, 401)
        self.assertEqual(query_offset(self.d), "42")
        st, _, b = raw_http(self.d.http_port, "POST", "/api/reset", {"Authorization": "Bearer s3cret"})
        self.assertEqual(st, 200, b)


class NonLoopbackNeedsToken(unittest.TestCase):
    """--http on a non-loopback address without a token is refused at start
    unless --http-insecure says so (and then a warning is logged)."""

    def run_daemon(self, *extra, wait=5.0):
        binary = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..",
                                                                 "build", "rmqcoord")
        store = os.path.join("/tmp", "rmqcoord-hh-%d-%d.db" % (os.getpid(), time.monotonic_ns()))
        p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--store", store] + list(extra),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = p.stdout.readline().decode()
        finally:
            if p.poll() is None:
                p.terminate()
            try:
                _, err = p.communicate(timeout=wait)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            for suffix in ("", "-wal", "-shm", ".lock"):
                try:
                    os.unlink(store + suffix)
                except OSError:
                    pass
        return line, p.returncode, err.decode(errors="replace")

    def test_wildcard_without_token_is_refused(self):
        line, rc, err = self.run_daemon("--http", "0.0.0.0:0")
        self.assertFalse(line.startswith("READY"), "started an open admin API on 0.0.0.0")
        self.assertNotEqual(rc, 0)
        self.assertIn("--http-insecure", err)

    def test_insecure_flag_starts_with_a_warning(self):
        line, rc, err = self.run_daemon("--http", "0.0.0.0:0", "--http-insecure")
        self.assertTrue(line.startswith("READY"), err)
        self.assertIn("INSECURE", err)

    def test_wildcard_with_token_starts(self):
        line, rc, err = self.run_daemon("--http", "0.0.0.0:0", "--admin-token", "t0ken")
        self.assertTrue(line.startswith("READY"), err)


class IdleConnections(DaemonCase):
    """About 1,020 idle connections used to fill libmicrohttpd's connection
    table (and a half-sent request held its slot 30 s): the admin API and
    /healthz were locked out. Now one address holds at most 128 connections,
    all of them at most 512, and an idle or partial request is dropped
    after 10 s: another peer's /healthz answers within 1 s."""

    N = 1100  # more than the old ~1,020 slots

    def setUp(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < self.N + 200:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, self.N + 500), hard))
        super().setUp()

    def test_healthz_answers_while_idle_connections_pile_up(self):
        socks = []
        deadline = time.monotonic() + 20
        try:
            for i in range(self.N):
                if time.monotonic() > deadline:
                    break
                try:
                    s = socket.create_connection(("127.0.0.1", self.d.http_port), timeout=2)
                    if i % 2:
                        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
                    socks.append(s)
                except OSError:
                    pass  # refused over the per-address limit: fine
            time.sleep(0.3)
            t0 = time.monotonic()
            st, _, b = raw_http(self.d.http_port, "GET", "/healthz", timeout=1.0, source="127.0.0.2")
            took = time.monotonic() - t0
            self.assertEqual(st, 200, b)
            self.assertLess(took, 1.0)
        finally:
            for s in socks:
                s.close()

    def test_partial_request_is_dropped_within_the_timeout(self):
        s = socket.create_connection(("127.0.0.1", self.d.http_port), timeout=15)
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            t0 = time.monotonic()
            s.settimeout(13.0)  # the timeout is 10 s; MHD checks it about once a second
            try:
                data = s.recv(100)
            except socket.timeout:
                data = None
            except ConnectionResetError:
                data = b""
            took = time.monotonic() - t0
            self.assertIsNotNone(data, "a half-sent request still held its connection after 13 s")
            self.assertLess(took, 13.0)
        finally:
            s.close()


class ManyQueryParameters(DaemonCase):
    """A query of 1,000+ parameters filled libmicrohttpd's connection pool:
    no response, and the connection held for 30 s. Now: 400 at once."""

    def test_thousand_parameters_get_400(self):
        q = "&".join("a%d=1" % i for i in range(1200))
        t0 = time.monotonic()
        st, hd, b = raw_http(self.d.http_port, "GET", "/api/groups?" + q, timeout=3.0)
        self.assertLess(time.monotonic() - t0, 3.0)
        self.assertEqual(st, 400, b)
        self.assertTrue(hd.get("content-type", "").startswith("application/json"), hd)
        self.assertIn(b"query parameters", b)
        st, _, b = raw_http(self.d.http_port, "GET", "/api/groups?limit=1&a=%3F", timeout=3.0)
        self.assertEqual(st, 200, b)


class GroupPagesDoNotStall(DaemonCase):
    """GET /api/groups?limit=1 used to build the whole sorted list on the
    loop thread: 215 ms at 100,000 groups, every remoting client waiting.
    With 20,000 groups a page now costs O(log n + limit) and the remoting
    probe's worst round trip stays under 100 ms (measured: about 10 ms; the old build 560 ms, its pages 208 ms each)."""

    extra = ("--max-groups-per-client", "1000", "--sync-interval-ms", "1000")
    GROUPS, PER_CONN = 20000, 1000
    BOUND = 0.1

    def test_page_over_20000_groups(self):
        for k in range(self.GROUPS // self.PER_CONN):
            c = self.d.connect()
            self.conns.append(c)
            groups = {"GID_%05d" % (k * self.PER_CONN + i): ["T"] for i in range(self.PER_CONN)}
            r = c.request(HEART_BEAT, body=heartbeat_body("c%d" % k, groups), timeout=30.0)
            self.assertIsNotNone(r)
            self.assertEqual(r.code, 0, r)
        st, body = self.d.http("GET", "/api/groups?limit=1")
        self.assertEqual(st, 200, body)
        self.assertEqual([g["group"] for g in body["groups"]], ["GID_00000"])
        self.assertIsNotNone(body["next"])
        st, page2 = self.d.http("GET", "/api/groups?limit=2&cursor=" + body["next"])
        self.assertEqual([g["group"] for g in page2["groups"]], ["GID_00001", "GID_00002"])
        names, cursor = [], None
        for _ in range(self.GROUPS // 1000 + 2):  # every page of 1,000: all names, in order, once
            st, page = self.d.http("GET", "/api/groups?limit=1000" + ("&cursor=" + cursor if cursor else ""))
            self.assertEqual(st, 200, page)
            names += [g["group"] for g in page["groups"]]
            cursor = page["next"]
            if cursor is None:
                break
        self.assertEqual(names, ["GID_%05d" % i for i in range(self.GROUPS)])
        time.sleep(1.5)  # let the joins' store writes settle
        pages = []
        with probing(self.d, period=0.002, limit=3000) as lat:
            time.sleep(0.2)
            for _ in range(40):
                t0 = time.monotonic()
                st, _ = self.d.http("GET", "/api/groups?limit=1")
                pages.append(time.monotonic() - t0)
                self.assertEqual(st, 200)
        self.assertTrue(lat and all(x is not None for x in lat), "a probe went unanswered")
        print("# page p50 %.1f ms max %.1f ms; probe max %.1f ms over %d"
              % (sorted(pages)[len(pages) // 2] * 1e3, max(pages) * 1e3, max(lat) * 1e3, len(lat)),
              file=sys.stderr)
        self.assertLess(max(lat), self.BOUND, "remoting stalled %.1f ms behind admin pages" % (max(lat) * 1e3))


class NonUtf8StoredNames(unittest.TestCase):
    """A store (written by an older version) holding a group and a topic
    whose names are not UTF-8: GET /api/groups answered 500 after every
    restart, the topic was missing from /api/topics, and GET on it was 500
    and leaked about 2.8 KB a request. Now they are listed with each bad
    byte written \\xHH, and the topic answers 200 (under ASan the daemon's
    exit also checks for leaks)."""

    def test_listed_and_readable(self):
        d = Daemon()
        try:
            commit_offset(d, group="GoodGroup")
            d.stop()
            db = sqlite3.connect(d.store)
            bad_group, bad_topic = b"Bad\xffGroup", b"Bad\xfeTopic"
            db.execute("INSERT INTO offsets (group_name, topic, queue_id, queue_offset, updated_ms) "
                       "VALUES (CAST(? AS TEXT), 'T', 0, 7, 0)", (bad_group,))
            db.execute("INSERT INTO topics (name, updated_ms) VALUES (CAST(? AS TEXT), 0)", (bad_topic,))
            db.execute("INSERT INTO topic_brokers (topic, broker_name, read_queue_nums, write_queue_nums, perm) "
                       "VALUES (CAST(? AS TEXT), 'broker-a', 4, 4, 6)", (bad_topic,))
            db.commit()
            db.close()
            d.start()
            for _ in range(2):  # and again after a restart
                st, body = d.http("GET", "/api/groups")
                self.assertEqual(st, 200, body)
                self.assertIn("Bad\\xFFGroup", [g["group"] for g in body["groups"]])
                st, body = d.http("GET", "/api/groups?limit=1")
                self.assertEqual(st, 200, body)
                st, page = d.http("GET", "/api/groups?limit=1&cursor=" + body["next"])
                self.assertEqual(st, 200, page)
                st, body = d.http("GET", "/api/topics")
                self.assertEqual(st, 200, body)
                # Listed with the bad byte escaped, or dropped at load (the
                # request layer now refuses such names): never a 500.
                listed = "Bad\\xFETopic" in [t["topic"] for t in body["topics"]]
                st, body = d.http("GET", "/api/groups/Bad%FFGroup")
                self.assertEqual((st, body.get("group")), (200, "Bad\\xFFGroup"), body)
                st, body = d.http("GET", "/api/topics/Bad%FETopic")
                self.assertEqual(st, 200 if listed else 404, body)
                if listed:
                    self.assertEqual(body["topic"], "Bad\\xFETopic")
                d.stop()
                d.start()
            rss0 = rss_kb(d.proc.pid)
            for _ in range(3000):
                st, _ = d.http("GET", "/api/topics/Bad%FETopic")
                self.assertIn(st, (200, 404))
            grown = rss_kb(d.proc.pid) - rss0
            if not sanitized(d.proc.pid):  # ASan's quarantine grows RSS; LSan checks at exit instead
                self.assertLess(grown, 4096, "RSS grew %d KiB over 3,000 reads of one topic" % grown)
        finally:
            alive = d.alive()
            rc = d.stop()
            self.assertTrue(alive)
            self.assertEqual(rc, 0, d.logtext())


def sanitized(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    unittest.main(verbosity=2)
