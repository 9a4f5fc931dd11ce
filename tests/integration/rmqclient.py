"""A minimal RocketMQ remoting client for rmqcoord's integration tests.

Standard library only. Speaks both header encodings (JSON type 0 and the
ROCKETMQ binary type 1), keeps server-initiated requests (NOTIFY) in an
inbox, and starts/stops a real rmqcoord daemon on free loopback ports.
"""
import json
import os
import select
import socket
import struct
import subprocess
import tempfile
import sys
import time
import unittest
import urllib.error
import urllib.request

LANGS = {"JAVA": 0, "CPP": 1, "GO": 9}


def encode_header_json(h):
    return json.dumps(h, separators=(",", ":")).encode()


def encode_header_rmq(h):
    remark = (h.get("remark") or "").encode()
    ext = b""
    for k, v in (h.get("extFields") or {}).items():
        kb, vb = k.encode(), str(v).encode()
        ext += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    return (struct.pack(">hBhii", h["code"], LANGS.get(h.get("language", "JAVA"), 0), h.get("version", 409),
                        h["opaque"], h.get("flag", 0))
            + struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext)


def decode_header_rmq(b):
    code, lang, version, opaque, flag = struct.unpack(">hBhii", b[:13])
    pos = 13
    (rlen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    remark = b[pos:pos + rlen].decode() if rlen else None
    pos += rlen
    (elen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    end = pos + elen
    ext = {}
    while pos < end:
        (kl,) = struct.unpack(">h", b[pos:pos + 2])
        pos += 2
        k = b[pos:pos + kl].decode()
        pos += kl
        (vl,) = struct.unpack(">i", b[pos:pos + 4])
        pos += 4
        ext[k] = b[pos:pos + vl].decode()
        pos += vl
    h = {"code": code, "language": lang, "version": version, "opaque": opaque, "flag": flag, "extFields": ext}
    if remark is not None:
        h["remark"] = remark
    return h


def frame(header_bytes, body=b"", serialize=0):
    return struct.pack(">ii", 4 + len(header_bytes) + len(body), (serialize << 24) | len(header_bytes)) + header_bytes + body


class Frame:
    def __init__(self, header, body, serialize):
        self.header, self.body, self.serialize = header, body, serialize
        self.code = header.get("code")
        self.flag = header.get("flag", 0)
        self.opaque = header.get("opaque")
        self.ext = header.get("extFields") or {}
        self.remark = header.get("remark")

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "Frame(code=%r flag=%r opaque=%r ext=%r remark=%r body=%r)" % (
            self.code, self.flag, self.opaque, self.ext, self.remark, self.body[:200])


class Conn:
    """One TCP connection to the daemon."""

    def __init__(self, port, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
        h = {"code": code, "flag": flag, "language": language, "opaque": opaque, "version": version}
        if raw_ext is not None:
            h["extFields"] = raw_ext
        elif ext is not None:
            h["extFields"] = {k: str(v) for k, v in ext.items()}
        if isinstance(body, (dict, list)):
            body = json.dumps(body, separators=(",", ":")).encode()
        hb = encode_header_json(h) if serialize == 0 else encode_header_rmq(h)
        self.send_raw(frame(hb, body, serialize))
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
            if len(self.rbuf) >= 8:
                total, word = struct.unpack(">ii", self.rbuf[:8])
                if len(self.rbuf) >= 4 + total:
                    st, hl = (word >> 24) & 0xFF, word & 0xFFFFFF
                    hb = self.rbuf[8:8 + hl]
                    body = self.rbuf[8 + hl:4 + total]
                    self.rbuf = self.rbuf[4 + total:]
                    header = json.loads(hb) if st == 0 else decode_header_rmq(hb)
                    return Frame(header, body, st)
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


class Daemon:
    """A real rmqcoord process on free loopback ports with its own store."""

    def __init__(self, *extra, store=None, binary=None):
        self.binary = binary or os.environ.get("RMQCOORD_BIN") or os.path.join(
            os.path.dirname(__file__), "..", "..", "build", "rmqcoord")
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
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("READY "):
            self.proc.wait(5)
            raise RuntimeError("daemon did not start: %r, log: %s" % (line, self.logtext()))
        fields = dict(kv.split("=", 1) for kv in line.split()[1:])
        self.port = int(fields["remoting"].split(",")[0].rsplit(":", 1)[1])
        self.http_port = int(fields["http"].rsplit(":", 1)[1]) if fields["http"] != "off" else None

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
        if self.proc and self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        rc = self.proc.returncode if self.proc else None
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
