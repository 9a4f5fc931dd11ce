"""RocketMQ remoting frames for the mqadmin harness: a decoder, a tiny
request client, and a recording TCP proxy.

Frame: 4-byte big-endian length of what follows, 4-byte header word (top
byte = serialize type, 0 JSON / 1 ROCKETMQ, low 24 bits = header length),
header, body. Standard library only.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import remoting  # noqa: E402
from remoting import decode_header  # noqa: E402

MAX_FRAME = 64 * 1024 * 1024


def split_frames(buf, raw=False):
    """Returns (frames, rest): frames as (serialize, header dict, body bytes)
    (with raw=True, a fourth item: the frame's bytes)."""
    frames = []
    pos = 0
    while True:
        got = remoting.next_frame(buf, pos, MAX_FRAME)
        if got is None:
            break
        serialize, raw_h, body, n = got
        item = (serialize, decode_header(serialize, raw_h), body)
        frames.append(item + (buf[pos:pos + n],) if raw else item)
        pos += n
    return frames, buf[pos:]


def encode_request(code, ext, opaque, body=b"", flag=0, remark=None):
    h = remoting.request_header(code, opaque, {k: str(v) for k, v in (ext or {}).items()}, flag, remark=remark)
    return remoting.encode_frame(h, body)


class Client:
    """A blocking request/response client (JSON headers)."""

    def __init__(self, addr, timeout=5.0):
        self.sock = remoting.connect(addr, timeout)
        self.buf = b""
        self.opaque = 0

    def request(self, code, ext=None, body=b"", timeout=5.0):
        self.opaque += 1
        op = self.opaque
        self.sock.sendall(encode_request(code, ext, op, body))
        deadline = time.monotonic() + timeout
        while True:
            frames, self.buf = split_frames(self.buf)
            for _, h, b in frames:
                if h.get("flag", 0) & 1 and h.get("opaque") == op:
                    return h, b
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply to code %d" % code)
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by peer")
            self.buf += chunk

    def close(self):
        self.sock.close()


class RecordingProxy:
    """Forwards every connection to `upstream` and records each decoded frame.

    Each record: {"t": epoch ms, "conn": n, "connOpenedMs": ms, "dir": "c2s"|"s2c",
    "serialize", "code", "flag", "opaque", "version", "language", "extFields",
    "remark", "bodyLen", "body" (text, cut at body_limit)}.
    """

    def __init__(self, body_limit=8192):
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.upstream = None
        self.records = []
        self.lock = threading.Lock()
        self.body_limit = body_limit
        self.nconn = 0
        self.closing = False
        self.socks = []
        # interception (stub mode): intercept(proxy, conn, header, body) -> None to forward,
        # or (code, extFields, body, remark) to answer the client directly
        self.intercept = None
        self.conns = {}      # n -> {"client": socket, "lock": Lock, "clientIds": set()}
        self.pending = {}    # opaque of a proxy-originated request -> [Event, reply]
        self.next_opaque = 1 << 30

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def start(self, upstream):
        self.upstream = upstream
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closing:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            host, port = self.upstream.rsplit(":", 1)
            try:
                u = socket.create_connection((host, int(port)), timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.nconn += 1
                n = self.nconn
                self.socks += [c, u]
                self.conns[n] = {"client": c, "lock": threading.Lock(), "upstream": u,
                                 "ulock": threading.Lock(), "clientIds": set()}
            opened = int(time.time() * 1000)
            threading.Thread(target=self._pump, args=(c, u, n, opened, "c2s"), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, n, opened, "s2c"), daemon=True).start()

    def _pump(self, src, dst, n, opened, direction):
        buf = b""
        broken = False
        while True:
            try:
                chunk = src.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            st = self.conns[n]
            dlock = st["lock"] if direction == "s2c" else st["ulock"]
            if broken:
                with dlock:
                    dst.sendall(chunk)
                continue
            buf += chunk
            try:
                frames, buf = split_frames(buf, raw=True)
            except (ValueError, struct.error, UnicodeDecodeError, json.JSONDecodeError):
                broken = True
                with dlock:
                    dst.sendall(buf)
                continue
            now = int(time.time() * 1000)
            for serialize, h, body, raw in frames:
                if not self._intercepted(n, direction, h, body, now):
                    try:
                        with dlock:
                            dst.sendall(raw)
                    except OSError:
                        return
                rec = {"t": now, "conn": n, "connOpenedMs": opened, "dir": direction,
                       "serialize": serialize, "code": h.get("code"), "flag": h.get("flag", 0),
                       "opaque": h.get("opaque"), "version": h.get("version"),
                       "language": h.get("language"), "extFields": h.get("extFields") or {},
                       "remark": h.get("remark"), "bodyLen": len(body),
                       "body": body[:self.body_limit].decode("utf-8", "replace")}
                with self.lock:
                    self.records.append(rec)

    def _intercepted(self, n, direction, h, body, now):
        if direction != "c2s":
            return False
        flag = h.get("flag", 0)
        if h.get("code") == 34 and not flag & 1:
            try:
                self.conns[n]["clientIds"].add(json.loads(body)["clientID"])
            except (ValueError, KeyError, TypeError):
                pass
        if flag & 1:
            with self.lock:
                waiter = self.pending.pop(h.get("opaque"), None)
            if waiter is None:
                return False
            waiter[1] = (h, body)
            waiter[0].set()
            return True
        if self.intercept is None:
            return False
        answer = self.intercept(self, n, h, body)
        if answer is None:
            return False
        code, ext, rbody, remark = answer
        if not flag & 2:   # a oneway request gets no reply
            self._record(now, n, "s2c", code, 1, h.get("opaque"), ext, remark, rbody)
            frame = encode_request(code, ext, h.get("opaque"), rbody or b"", flag=1, remark=remark)
            st = self.conns[n]
            with st["lock"]:
                st["client"].sendall(frame)
        return True

    def _record(self, now, n, direction, code, flag, opaque, ext, remark, body):
        rec = {"t": now, "conn": n, "connOpenedMs": 0, "dir": direction, "serialize": 0, "code": code,
               "flag": flag, "opaque": opaque, "version": None, "language": "stub", "extFields": ext or {},
               "remark": remark, "bodyLen": len(body or b""),
               "body": (body or b"")[:self.body_limit].decode("utf-8", "replace")}
        with self.lock:
            self.records.append(rec)

    def call_client(self, client_id, code, ext, body=b"", timeout=10.0, oneway=False):
        """Sends a request to the client that heartbeated with client_id (as the broker would).
        Returns (header, body) of its reply, None for oneway, or raises LookupError / TimeoutError."""
        with self.lock:
            conns = [(n, st) for n, st in self.conns.items() if client_id in st["clientIds"]]
            op = self.next_opaque
            self.next_opaque += 1
            waiter = [threading.Event(), None]
            if not oneway:
                self.pending[op] = waiter
        if not conns:
            raise LookupError(client_id)
        n, st = conns[-1]
        frame = encode_request(code, ext, op, body, flag=2 if oneway else 0)
        self._record(int(time.time() * 1000), n, "s2c", code, 2 if oneway else 0, op, ext, None, body)
        with st["lock"]:
            st["client"].sendall(frame)
        if oneway:
            return None
        if not waiter[0].wait(timeout):
            with self.lock:
                self.pending.pop(op, None)
            raise TimeoutError(client_id)
        return waiter[1]

    def snapshot(self):
        with self.lock:
            return list(self.records)

    def close(self):
        self.closing = True
        try:
            self.lsock.close()
        except OSError:
            pass
        with self.lock:
            socks = list(self.socks)
        for s in socks:
            try:
                s.close()
            except OSError:
                pass


def exchanges(records, start_ms, end_ms):
    """Requests seen in [start_ms, end_ms] that belong to one admin command,
    each paired with its reply: requests on connections opened inside the
    window, plus requests the server sent to any client inside the window
    (e.g. a forwarded GET_CONSUMER_RUNNING_INFO).
    Returns a list of {"req": record, "resp": record or None}."""
    out = []
    replies = {}
    for r in records:
        if r["flag"] & 1:
            replies.setdefault((r["conn"], r["dir"], r["opaque"]), r)
    for r in records:
        if r["flag"] & 1 or not (start_ms <= r["t"] <= end_ms):
            continue
        mine = start_ms <= r["connOpenedMs"] <= end_ms
        if not mine and r["dir"] != "s2c":
            continue
        back = "s2c" if r["dir"] == "c2s" else "c2s"
        out.append({"req": r, "resp": replies.get((r["conn"], back, r["opaque"]))})
    return out
