"""The recorded mixed run the replay tests share: a daemon recording a trace,
one `sim --no-notify` client with a short timer (it behaves like ali-ons:
holds every queue, ignores NOTIFY, gives queues up only on its own timer),
two NOTIFY-acting clients, then a later join (a membership change the fast
clients react to and the slow one ignores)."""
import json
import os
import subprocess
import time

from rmqclient import BIN, Daemon

SLOW_ID = "10.0.0.2@slow-0"


def replay(path, *flags):
    """`rmqcoord replay PATH FLAGS...`'s stdout; raises if it fails."""
    p = subprocess.run([BIN, "replay", path] + list(flags), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError("replay failed (%d): %s" % (p.returncode, p.stderr.decode()))
    return p.stdout.decode()


def records(path, *flags):
    return [json.loads(line) for line in replay(path, "--format", "json", *flags).splitlines()]


def record_mixed_run(tmp, slow_ms, tail_s, daemon_args=(), at_end=None):
    """Records the run into tmp/trace.jsonl and returns its path. tail_s: how
    long the run goes on after the late join; at_end(daemon) runs just before
    the clients stop."""
    trace = os.path.join(tmp, "trace.jsonl")
    d = Daemon("--record", trace, *daemon_args, "--topic", "T:8", store=os.path.join(tmp, "s.db"))
    procs = []

    def sim(*args):
        common = ["--namesrv", "127.0.0.1:%d" % d.port, "--group", "G", "--topic", "T", "--quiet",
                  "--heartbeat-ms", "1000"]
        procs.append(subprocess.Popen([BIN, "sim"] + common + list(args), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))

    try:
        sim("--client-id", SLOW_ID, "--no-notify", "--rebalance-ms", str(slow_ms))
        time.sleep(1.5)
        sim("--client-prefix", "10.0.0.3@fast", "--clients", "2")
        time.sleep(3.5)
        sim("--client-id", "10.0.0.4@late-0")
        time.sleep(tail_s)
        if at_end:
            at_end(d)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)
        time.sleep(0.3)
        d.stop()
    return trace
