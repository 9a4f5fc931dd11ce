"""Hostile peers of the HTTP GET client (docs/reliability.md, "Attacks and
what bounds them"): a broker admin address that drips one byte every 0.5 s
must not stretch GET /api/cluster?group= past its budget, pile up worker
threads, or hold a name server's SIGTERM; `rmqcoord groups / describe /
events` must end within their deadline against such a server, stop when a
server's event pages do not advance, and print a hostile server's names
escaped. Each test is bounded in time and fails against the binary from
before these fixes. Standard library only."""
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Conn, Daemon, run_tests  # noqa: E402
from test_cluster import fake_registration  # noqa: E402

BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "rmqcoord")
WORKERS = 4  # API_CLUSTER_WORKERS, server/http/api_cluster.h
EVIL = ["esc\x1b[2Jwipe", "csi\u009b31mred", "rtl\u202egnp.exe", "iso\u2066x\u2069"]
RAW_BAD = [b"\x1b", "\u009b".encode(), "\u202e".encode(), "\u2066".encode()]


class Dripper:
    """Accepts connections and writes one byte every 0.5 s to each, for ever."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._drip, args=(c,), daemon=True).start()

    def _drip(self, c):
        text = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n" + b"X" * 100000
        try:
            for i in range(len(text)):
                if self.stopped.wait(0.5):
                    break
                c.sendall(text[i:i + 1])
        except OSError:
            pass
        c.close()

    def close(self):
        self.stopped.set()
        self.sock.close()


class FakeAdmin:
    """A hostile admin API: names with ESC, C1 and bidi controls; `events`
    pages that advance once (mode "once") or repeat for ever ("stuck")."""

    def __init__(self, events="once"):
        mode = events

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                u = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(u.query))
                if u.path == "/api/groups":
                    body = {"groups": [{"group": g, "members": 1, "messageModel": "CLUSTERING", "live": True}
                                       for g in EVIL]}
                elif u.path.startswith("/api/groups/") and u.path.count("/") == 3:
                    body = {"group": urllib.parse.unquote(u.path.rsplit("/", 1)[1]), "messageModel": EVIL[1],
                            "consumeType": "PUSH", "subscriptions": [],
                            "consumers": [{"clientId": c, "remoteAddr": EVIL[2], "language": "JAVA", "version": 1,
                                           "lastHeartbeatMs": 0} for c in EVIL]}
                elif u.path == "/api/events":
                    since = int(q.get("since", "0"))
                    if mode == "stuck":
                        ev = [{"id": i, "ts": i, "kind": "join", "clientId": "c", "after": []}
                              for i in range(1, 501)]
                    else:
                        ev = [{"id": i + 1, "ts": 1, "kind": EVIL[0], "clientId": c, "after": [c]}
                              for i, c in enumerate(EVIL) if i + 1 > since]
                    body = {"events": ev}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.addr = "127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def cli(*args, timeout=20):
    """Runs rmqcoord args; (rc, stdout bytes, stderr text, seconds). A hang is
    turned into rc None after `timeout`."""
    t0 = time.monotonic()
    p = subprocess.Popen([BIN] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        rc = None
    return rc, out, err.decode(errors="replace"), time.monotonic() - t0


def view(ns, timeout=15):
    """GET /api/cluster?group=G: (status, body, seconds); status None when it
    did not answer within `timeout`."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/cluster?group=G" % ns.http_port,
                                    timeout=timeout) as r:
            st, body = r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        st, body = e.code, json.loads(e.read() or b"null")
    except OSError:
        st, body = None, None
    return st, body, time.monotonic() - t0


class DrippingBroker(unittest.TestCase):
    def setUp(self):
        self.drip = Dripper()
        self.ns = Daemon("--role", "namesrv")
        self.conn = Conn(self.ns.port)

    def tearDown(self):
        self.conn.close()
        self.drip.close()
        if self.ns.proc.poll() is None:
            self.ns.proc.kill()
        self.ns.stop()

    def register(self, name):
        ext, body = fake_registration(name, rmqcoordHttp=self.drip.addr)
        self.assertEqual(self.conn.request(103, ext, body=body).code, 0)

    def test_view_answers_within_its_deadline(self):
        self.register("drip")
        st, body, secs = view(self.ns)
        self.assertEqual(st, 200, "no answer within 15 s (%.1f s)" % secs)
        self.assertLess(secs, 5, "the view took %.1f s" % secs)
        self.assertEqual(body["brokers"][0]["fetchError"], "timed out", body)
        self.assertFalse(body["agree"])

    def test_views_beyond_the_worker_bound_get_503_at_once(self):
        self.register("drip")
        results = [None] * (WORKERS + 3)

        def one(i):
            results[i] = view(self.ns)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertTrue(all(results), results)
        busy = [r for r in results if r[0] == 503]
        ok = [r for r in results if r[0] == 200]
        self.assertEqual((len(ok), len(busy)), (WORKERS, 3), [r[:1] + r[2:] for r in results])
        for st, body, secs in busy:
            self.assertEqual(body["error"], "busy", body)
            self.assertLess(secs, 1.0, "a refused view waited %.2f s" % secs)
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.ns.http_port, timeout=5) as r:
            metrics = r.read().decode()
        self.assertIn('rmqcoord_http_requests_total{route="/api/cluster",method="GET",status="503"} 3', metrics)

    def test_sigterm_stops_the_name_server_during_a_drip(self):
        for name in ("drip1", "drip2", "drip3"):
            self.register(name)
        t = threading.Thread(target=view, args=(self.ns, 20), daemon=True)
        t.start()
        self.assertTrue(wait_for(lambda: self.drip.accepted >= 1, 5), "the view never asked the broker")
        time.sleep(0.3)
        t0 = time.monotonic()
        self.ns.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.ns.proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        secs = time.monotonic() - t0
        self.assertIsNotNone(rc, "SIGTERM did not stop the name server within 10 s")
        self.assertEqual(rc, 0)
        self.assertLess(secs, 3, "stopping took %.1f s" % secs)


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


class HostileAdminForTheCli(unittest.TestCase):
    def test_cli_ends_within_its_deadline_against_a_dripping_server(self):
        drip = Dripper()
        try:
            runs = {}

            def one(args):
                runs[" ".join(args)] = cli(*args, "--http", drip.addr, timeout=20)

            cmds = [("groups",), ("describe", "G"), ("events", "G"), ("events", "G", "--follow")]
            threads = [threading.Thread(target=one, args=(c,)) for c in cmds]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        finally:
            drip.close()
        self.assertEqual(len(runs), len(cmds))
        for cmd, (rc, out, err, secs) in runs.items():
            self.assertIsNotNone(rc, "%s hung for 20 s against a dripping server" % cmd)
            self.assertEqual(rc, 1, (cmd, err))
            self.assertLess(secs, 9, "%s took %.1f s" % (cmd, secs))
            self.assertIn("timed out", err, cmd)

    def test_events_stops_when_a_page_does_not_advance(self):
        fake = FakeAdmin(events="stuck")
        try:
            rc, out, err, secs = cli("events", "G", "--http", fake.addr, timeout=15)
        finally:
            fake.close()
        self.assertIsNotNone(rc, "events kept fetching the same page for 15 s")
        self.assertEqual(rc, 1, err)
        self.assertIn("do not advance", err)
        self.assertEqual(len(out.splitlines()), 500, "the first page printed once")

    def test_hostile_names_are_printed_escaped(self):
        fake = FakeAdmin()
        try:
            runs = [cli("groups", "--http", fake.addr), cli("groups", "--json", "--http", fake.addr),
                    cli("describe", "G", "--http", fake.addr), cli("describe", "G", "--json", "--http", fake.addr),
                    cli("events", "G", "--http", fake.addr), cli("events", "G", "--json", "--http", fake.addr)]
        finally:
            fake.close()
        for i, (rc, out, err, _) in enumerate(runs):
            self.assertEqual(rc, 0, (i, err))
            for bad in RAW_BAD:
                self.assertNotIn(bad, out, "run %d printed %r raw: %r" % (i, bad, out[:300]))
        text = runs[0][1].decode()
        for form in ("esc\\x1B[2Jwipe", "csi\\u{009B}31mred", "rtl\\u{202E}gnp.exe", "iso\\u{2066}x\\u{2069}"):
            self.assertIn(form, text)
        self.assertIn("\\u{202E}", runs[2][1].decode())
        self.assertIn("\\x1B", runs[4][1].decode())
        # --json stays valid JSON meaning the same names
        self.assertEqual([g["group"] for g in json.loads(runs[1][1])["groups"]], EVIL)
        self.assertEqual([c["clientId"] for c in json.loads(runs[3][1])["group"]["consumers"]], EVIL)
        self.assertEqual([json.loads(line)["clientId"] for line in runs[5][1].splitlines()], EVIL)


if __name__ == "__main__":
    run_tests("cluster_hostile")
