"""RocketMQ remoting connections for the conformance harness (stdlib only).

Both header encodings (JSON type 0, ROCKETMQ binary type 1, coded by
tests/pylib/remoting.py); one socket per
Conn; every frame is kept with its arrival time so the harness can tell
replies from server-initiated requests (NOTIFY) and see closes.
"""
import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import remoting  # noqa: E402
from remoting import frame  # noqa: E402,F401


class Frame(remoting.Frame):
    """A frame with its arrival time `t`."""

    def __init__(self, header, body, serialize, t):
        super().__init__(header, body, serialize)
        self.t = t


class Conn:
    """One TCP connection; frames are read into `frames` in arrival order."""

    def __init__(self, addr, timeout=5.0):
        self.addr = addr
        self.sock = remoting.connect(addr, timeout)
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
        h = remoting.request_header(code, opaque, ext, flag, serialize, version, language)
        self.send_raw(remoting.encode_frame(h, body, serialize))
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
        while True:
            got = remoting.next_frame(self.rbuf)
            if got is None:
                return
            st, hb, body, n = got
            self.rbuf = self.rbuf[n:]
            try:
                header = remoting.decode_header(st, hb)
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

