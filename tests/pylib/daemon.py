"""Starting an rmqcoord daemon and waiting for its READY line (standard library only).

Once it listens, `rmqcoord serve` prints one line on stdout:

    READY remoting=HOST:PORT[,HOST:PORT...] http=HOST:PORT|off

start() runs the daemon with its stdout on a pipe, reads that line and
returns the process with the parsed line; the harnesses build the command
line, choose where stderr goes and what a failed start means to them.
"""
import os
import re
import select
import subprocess
import time

_READY = re.compile(r"^READY remoting=(\S+) http=(\S+)\s*$")


class Ready:
    """The parsed READY line: remoting, the listening addresses (HOST:PORT
    strings, at least one); http, the admin API's HOST:PORT or None (off);
    fields, the raw key=value pairs."""

    def __init__(self, fields):
        self.fields = fields
        self.remoting = fields["remoting"].split(",")
        self.http = None if fields["http"] == "off" else fields["http"]

    @property
    def addr(self):
        """The first remoting address (HOST:PORT)."""
        return self.remoting[0]

    @property
    def port(self):
        """The port of the first remoting address."""
        return int(self.addr.rsplit(":", 1)[1])

    @property
    def http_port(self):
        """The admin API's port, or None when it is off."""
        return int(self.http.rsplit(":", 1)[1]) if self.http else None


def parse_ready(line):
    """The Ready of a READY line (str or bytes, with or without its newline),
    or None when line is not one."""
    if isinstance(line, bytes):
        line = line.decode(errors="replace")
    m = _READY.match(line or "")
    if not m:
        return None
    return Ready({"remoting": m.group(1), "http": m.group(2)})


def read_line(stream, timeout=None):
    """One line from a pipe, without its newline, as str: what arrived before
    end of file or before timeout seconds passed (None: no limit). Reads the
    file descriptor a byte at a time, so nothing after the line is taken
    from whoever reads the stream next."""
    end = None if timeout is None else time.monotonic() + timeout
    buf = b""
    while True:
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            break
        r, _, _ = select.select([stream], [], [], left)
        if not r:
            break
        c = os.read(stream.fileno(), 1)
        if not c or c == b"\n":
            break
        buf += c
    return buf.decode(errors="replace")


class StartError(RuntimeError):
    """The daemon did not print READY; line is what it printed instead, proc
    the process (stopped, its stdout closed)."""

    def __init__(self, line, proc):
        super().__init__("daemon did not print READY: %r" % line)
        self.line, self.proc = line, proc


def start(args, stderr=None, timeout=None, popen=None, **kw):
    """Runs args (the daemon's command line) with stdout on a pipe and
    stderr to stderr, through popen (the harness's own Popen wrapper, if it
    has one; else subprocess.Popen as it is at the call, so a test may
    replace it) with the keyword arguments kw; returns (proc, Ready) once the
    READY line arrives. When another line, end of file or timeout seconds
    (None: no limit) come first, kills the process if it still runs and
    raises StartError. Whatever the daemon prints after READY stays in
    proc.stdout for the caller."""
    proc = (popen or subprocess.Popen)(args, stdout=subprocess.PIPE, stderr=stderr, **kw)
    line = read_line(proc.stdout, timeout)
    ready = parse_ready(line)
    if ready is None:
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        proc.stdout.close()
        raise StartError(line, proc)
    return proc, ready
