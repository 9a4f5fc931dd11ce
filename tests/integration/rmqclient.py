"""A minimal RocketMQ remoting client for rmqcoord's integration tests.

Standard library only. Speaks both header encodings (JSON type 0 and the
ROCKETMQ binary type 1, coded by tests/pylib/remoting.py), keeps
server-initiated requests (NOTIFY) in an inbox, and starts/stops a real
rmqcoord daemon on free loopback ports.
"""
import base64
import contextlib
import hashlib
import hmac
import json
import os
import signal
import select
import tempfile
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from remoting import (Frame, connect, decode_header, encode_frame, encode_header_json,  # noqa: E402,F401
                      encode_header_rmq, frame, next_frame, request_header)
from procs import stop as stop_process  # noqa: E402
import daemon  # noqa: E402


BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "rmqcoord")


class Conn:
    """One TCP connection to the daemon."""

    def __init__(self, port, host="127.0.0.1"):
        self.sock = connect("%s:%d" % (host, port))
        self.rbuf = b""
        self.next_opaque = 1
        self.inbox = []  # server-initiated requests (e.g. NOTIFY)
        self.responses = {}  # responses that arrived before they were waited for
        self.closed = False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, code, ext=None, body=b"", flag=0, serialize=0, version=409, language="JAVA", raw_ext=None):
        opaque = self.next_opaque
        self.next_opaque += 1
        h = request_header(code, opaque, ext, flag, serialize, version, language)
        if raw_ext is not None:
            h["extFields"] = raw_ext
        self.send_raw(encode_frame(h, body, serialize))
        return opaque

    def _fill(self, deadline):
        while True:
            left = max(0.0, deadline - time.monotonic())  # 0: poll once without waiting
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return False
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, OSError):
                chunk = b""
            if not chunk:
                self.closed = True
                return False
            self.rbuf += chunk
            return True

    def recv_frame(self, timeout=3.0):
        """Next frame, or None on timeout / close."""
        deadline = time.monotonic() + timeout
        while True:
            got = next_frame(self.rbuf)
            if got is not None:
                st, hb, body, n = got
                self.rbuf = self.rbuf[n:]
                return Frame(decode_header(st, hb, errors="strict"), body, st)
            if not self._fill(deadline):
                return None

    def request(self, code, ext=None, body=b"", timeout=3.0, **kw):
        opaque = self.send(code, ext, body, **kw)
        return self.wait_response(opaque, timeout)

    def wait_response(self, opaque, timeout=3.0):
        """The response to opaque. Replies may come in any order (as with a
        real broker, matching is by opaque): others are kept for later."""
        if opaque in self.responses:
            return self.responses.pop(opaque)
        deadline = time.monotonic() + timeout
        while True:
            f = self.recv_frame(max(0.0, deadline - time.monotonic()))
            if f is None:
                return None
            if f.flag & 1 and f.opaque == opaque:
                return f
            if f.flag & 1:
                self.responses[f.opaque] = f
            else:
                self.inbox.append(f)

    def wait_notify(self, group=None, timeout=2.0):
        deadline = time.monotonic() + timeout
        while True:
            for i, f in enumerate(self.inbox):
                if f.code == 40 and (group is None or f.ext.get("consumerGroup") == group):
                    return self.inbox.pop(i)
            f = self.recv_frame(max(0.0, deadline - time.monotonic()))
            if f is None:
                return None
            if not f.flag & 1:
                self.inbox.append(f)

    def drain(self, duration=0.3):
        """Reads for `duration` seconds; returns the server requests received."""
        deadline = time.monotonic() + duration
        while True:
            f = self.recv_frame(max(0.0, deadline - time.monotonic()))
            if f is None:
                break
            if not f.flag & 1:
                self.inbox.append(f)
        got, self.inbox = self.inbox, []
        return got

    def is_closed_by_peer(self, timeout=3.0):
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self._fill(deadline)
        return self.closed


def heartbeat_body(client_id, groups, model="CLUSTERING", sub_version=1, producers=(), v2=None):
    """groups: {group: [topic, ...]} or {group: [(topic, subString, subVersion), ...]}."""
    cds = []
    for g, topics in groups.items():
        subs = []
        for t in topics:
            if isinstance(t, tuple):
                topic, sub, ver = t
            else:
                topic, sub, ver = t, "*", sub_version
            subs.append({"classFilterMode": False, "codeSet": [], "expressionType": "TAG", "subString": sub,
                         "subVersion": ver, "tagsSet": [], "topic": topic})
        cds.append({"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
                    "groupName": g, "messageModel": model, "subscriptionDataSet": subs, "unitMode": False})
    body = {"clientID": client_id, "consumerDataSet": cds,
            "producerDataSet": [{"groupName": p} for p in producers]}
    if v2 is not None:
        body["heartbeatFingerprint"], body["withoutSub"] = v2
    return body


def probe_latencies(d, stop, out, period=0.02, limit=2000):
    """Asks for a consumer list (38) every period seconds on its own
    connection until stop is set (at most limit times); appends each round
    trip (s), or None for a request not answered within 5 s, which ends it."""
    c = d.connect()
    try:
        for _ in range(limit):
            if stop.is_set():
                break
            t0 = time.monotonic()
            try:
                r = c.request(38, {"consumerGroup": "probe"}, timeout=5.0)
            except Exception:  # noqa: BLE001 - a missing answer is what we count
                r = None
            out.append(time.monotonic() - t0 if r is not None else None)
            if r is None:
                break
            time.sleep(period)
    finally:
        c.close()


@contextlib.contextmanager
def probing(d, **kw):
    """probe_latencies on its own thread for the with block; yields the list it fills."""
    stop, lat = threading.Event(), []
    t = threading.Thread(target=probe_latencies, args=(d, stop, lat), kwargs=kw)
    t.start()
    try:
        yield lat
    finally:
        stop.set()
        t.join(15)


def signed(ext, body, access, secret):
    """ext with AccessKey and Signature, as a RocketMQ client signs a request."""
    ext = dict(ext, AccessKey=access)
    content = "".join(str(ext[k]) for k in sorted(ext)).encode() + body
    ext["Signature"] = base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()
    return ext


class Daemon:
    """A real rmqcoord process on free loopback ports with its own store."""

    def __init__(self, *extra, store=None, binary=None):
        self.binary = binary or BIN
        self.tmp = None
        if store is None:
            self.tmp = tempfile.mkdtemp(prefix="rmqcoord-it-")
            store = os.path.join(self.tmp, "store.db")
        self.store = store
        self.extra = list(extra)
        self.proc = None
        self.start()

    def start(self):
        args = [self.binary, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--store", self.store,
                "--log-level", "debug"] + self.extra
        self.log = open(self.store + ".log", "ab")
        try:
            self.proc, ready = daemon.start(args, stderr=self.log)
        except daemon.StartError as e:
            self.proc = e.proc
            raise RuntimeError("daemon did not start: %r, log: %s" % (e.line, self.logtext()))
        self.port, self.http_port = ready.port, ready.http_port

    def logtext(self):
        try:
            with open(self.store + ".log", "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def connect(self):
        return Conn(self.port)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=None):
        rc = stop_process(self.proc, sig or signal.SIGTERM) if self.proc else None
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.log.close()
        return rc

    def http(self, method, path, body=None):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.http_port, path), data=data, method=method)
        if data is not None or method in ("POST", "PUT", "DELETE"):
            req.add_header("Content-Type", "application/json")  # mutations need it (docs/admin-api.md)
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


class DaemonCase(unittest.TestCase):
    """A test case with its own daemon (started with the class's `extra`
    flags) whose connections opened through it are closed afterwards, and
    which fails when the daemon died or did not shut down cleanly."""

    extra = ()

    def setUp(self):
        self.d = Daemon(*self.extra)
        self.conns = []

    def tearDown(self):
        for c in self.conns:
            c.close()
        alive = self.d.alive()
        rc = self.d.stop()
        if not alive or rc not in (0, None):
            print(self.d.logtext(), file=sys.stderr)
        self.assertTrue(alive, "daemon died during the test")
        self.assertEqual(rc, 0, "daemon did not shut down cleanly")


def run_tests(label):
    """Runs the calling script's tests (unittest.main on __main__, verbose),
    prints "<label>: N passed, M failed" and exits 1 if any failed or erred."""
    result = unittest.main(module="__main__", exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%s: %d passed, %d failed" % (label, result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
