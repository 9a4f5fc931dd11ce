"""RocketMQ remoting frames for the conformance harness (stdlib only).

Both header encodings (JSON type 0, ROCKETMQ binary type 1); one socket per
Conn; every frame is kept with its arrival time so the harness can tell
replies from server-initiated requests (NOTIFY) and see closes.
"""
import json
import select
import socket
import struct
import time

LANG_BYTES = {"JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6, "OTHER": 7,
              "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13}
LANG_NAMES = {v: k for k, v in LANG_BYTES.items()}


def enc_json(h):
    return json.dumps(h, separators=(",", ":")).encode()


def enc_rmq(h):
    remark = (h.get("remark") or "").encode()
    ext = b""
    for k, v in (h.get("extFields") or {}).items():
        kb, vb = k.encode(), str(v).encode()
        ext += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    return (struct.pack(">hBhii", h["code"], LANG_BYTES.get(h.get("language", "JAVA"), 0), h.get("version", 0),
                        h["opaque"], h.get("flag", 0))
            + struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext)


def dec_rmq(b):
    code, lang, version, opaque, flag = struct.unpack(">hBhii", b[:13])
    pos = 13
    (rlen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    remark = b[pos:pos + rlen].decode("utf-8", "replace") if rlen > 0 else None
    pos += max(rlen, 0)
    (elen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    end = pos + elen
    ext = {}
    while pos < end:
        (kl,) = struct.unpack(">h", b[pos:pos + 2])
        pos += 2
        k = b[pos:pos + kl].decode("utf-8", "replace")
        pos += kl
        (vl,) = struct.unpack(">i", b[pos:pos + 4])
        pos += 4
        ext[k] = b[pos:pos + vl].decode("utf-8", "replace")
        pos += vl
    h = {"code": code, "language": LANG_NAMES.get(lang, lang), "version": version, "opaque": opaque, "flag": flag}
    if elen > 0:
        h["extFields"] = ext
    if remark is not None:
        h["remark"] = remark
    return h


def frame(header_bytes, body=b"", serialize=0):
    return struct.pack(">ii", 4 + len(header_bytes) + len(body), (serialize << 24) | len(header_bytes)) + header_bytes + body


class Frame:
    def __init__(self, header, body, serialize, t):
        self.header, self.body, self.serialize, self.t = header, body, serialize, t
        self.code = header.get("code")
        self.flag = header.get("flag", 0)
        self.opaque = header.get("opaque")
        self.ext = header.get("extFields")
        self.remark = header.get("remark")

    @property
    def is_response(self):
        return bool(self.flag & 1)


class Conn:
    """One TCP connection; frames are read into `frames` in arrival order."""

    def __init__(self, addr, timeout=5.0):
        host, port = addr.rsplit(":", 1)
        self.addr = addr
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rbuf = b""
        self.opaque = 0
        self.pending = []  # frames read and not yet consumed
        self.closed_by_peer = False
        self.closed = False

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def send(self, code, ext=None, body=b"", flag=0, serialize=0, version=409, language="JAVA", opaque=None):
        if opaque is None:
            self.opaque += 1
            opaque = self.opaque
        h = {"code": code, "flag": flag, "language": language, "opaque": opaque,
             "serializeTypeCurrentRPC": "JSON" if serialize == 0 else "ROCKETMQ", "version": version}
        if ext is not None:
            h["extFields"] = {k: (v if isinstance(v, str) else json.dumps(v) if isinstance(v, bool) else str(v))
                              for k, v in ext.items()}
        if isinstance(body, (dict, list)):
            body = json.dumps(body, separators=(",", ":")).encode()
        elif isinstance(body, str):
            body = body.encode()
        hb = enc_json(h) if serialize == 0 else enc_rmq(h)
        self.send_raw(frame(hb, body, serialize))
        return opaque

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed_by_peer = True

    def _read_some(self, deadline):
        if self.closed or self.closed_by_peer:
            return False
        left = max(0.0, deadline - time.monotonic())
        try:
            r, _, _ = select.select([self.sock], [], [], left)
        except (OSError, ValueError):
            self.closed_by_peer = True
            return False
        if not r:
            return False
        try:
            chunk = self.sock.recv(1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            self.closed_by_peer = True
            return False
        self.rbuf += chunk
        self._parse()
        return True

    def _parse(self):
        while len(self.rbuf) >= 8:
            total, word = struct.unpack(">ii", self.rbuf[:8])
            if len(self.rbuf) < 4 + total:
                return
            st, hl = (word >> 24) & 0xFF, word & 0xFFFFFF
            hb = self.rbuf[8:8 + hl]
            body = self.rbuf[8 + hl:4 + total]
            self.rbuf = self.rbuf[4 + total:]
            try:
                header = json.loads(hb) if st == 0 else dec_rmq(hb)
            except Exception as e:  # an undecodable frame from the server is itself a finding
                header = {"code": None, "flag": 1, "undecodable": repr(e)[:200]}
            self.pending.append(Frame(header, body, st, time.monotonic()))

    def wait_response(self, opaque, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for i, f in enumerate(self.pending):
                if f.is_response and f.opaque == opaque:
                    return self.pending.pop(i)
            if time.monotonic() >= deadline:
                return None
            if not self._read_some(deadline) and (self.closed_by_peer or time.monotonic() >= deadline):
                # one last look at what was parsed
                for i, f in enumerate(self.pending):
                    if f.is_response and f.opaque == opaque:
                        return self.pending.pop(i)
                return None

    def pump(self, duration):
        """Reads for `duration` seconds (or until closed)."""
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            if not self._read_some(deadline) and self.closed_by_peer:
                break

    def take_requests(self):
        """Server-initiated requests read so far (and drops stray responses)."""
        got = [f for f in self.pending if not f.is_response]
        self.pending = [f for f in self.pending if f.is_response]
        return got


def wait_listen(addr, timeout):
    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False
