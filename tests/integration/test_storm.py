"""Integration tests: NOTIFY coalescing over real sockets. A single join
on a quiet group is notified at once (with or without --notify-coalesce-ms);
a burst of changes ends with every member notified after the last change;
a join storm sends far fewer NOTIFYs than one per member per join."""
import os
import resource
import selectors
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import DaemonCase, heartbeat_body, run_tests  # noqa: E402

HB, LIST, NOTIFY = 34, 38, 40


def read_notifies(conns, until_quiet=0.5, limit=15.0):
    """Reads every connection until none has received anything for
    until_quiet seconds (at most limit); returns, per connection index, the
    arrival times of its NOTIFY frames."""
    got = {i: [] for i in range(len(conns))}
    sel = selectors.DefaultSelector()
    for i, c in enumerate(conns):
        for f in c.inbox:  # frames a request() call already set aside
            if f.code == NOTIFY:
                got[i].append(0.0)
        c.inbox = []
        while True:  # frames already buffered (or waiting in the socket)
            f = c.recv_frame(0)
            if f is None:
                break
            if not f.flag & 1 and f.code == NOTIFY:
                got[i].append(time.monotonic())
        sel.register(c.sock, selectors.EVENT_READ, i)
    end = time.monotonic() + limit
    last = time.monotonic()
    try:
        while time.monotonic() < end and time.monotonic() - last < until_quiet:
            for key, _ in sel.select(0.05):
                c = conns[key.data]
                if not c._fill(time.monotonic()):
                    continue
                last = time.monotonic()
                while True:
                    f = c.recv_frame(0)
                    if f is None:
                        break
                    if not f.flag & 1 and f.code == NOTIFY:
                        got[key.data].append(last)
    finally:
        sel.close()
    return got


class StormCase(DaemonCase):
    def conn(self):
        c = self.d.connect()
        self.conns.append(c)
        return c

    def join(self, c, cid, group="G"):
        r = c.request(HB, body=heartbeat_body(cid, {group: ["T"]}))
        self.assertIsNotNone(r, "no heartbeat reply")
        self.assertEqual(r.code, 0, r)


class CoalesceWindow(StormCase):
    extra = ("--notify-coalesce-ms", "1500")

    def test_single_join_on_a_quiet_group_is_notified_at_once(self):
        a = self.conn()
        t0 = time.monotonic()
        self.join(a, "cA")
        self.assertIsNotNone(a.wait_notify("G", timeout=1.0))
        self.assertLess(time.monotonic() - t0, 0.5, "the first NOTIFY waited for the window")
        time.sleep(1.7)  # longer than the window: the group is quiet again
        b = self.conn()
        t1 = time.monotonic()
        self.join(b, "cB")
        for c in (a, b):
            self.assertIsNotNone(c.wait_notify("G", timeout=1.0))
        self.assertLess(time.monotonic() - t1, 0.5, "a join after a quiet window waited")

    def test_burst_ends_with_every_member_notified_after_the_last_change(self):
        old = [self.conn() for _ in range(5)]
        for i, c in enumerate(old):
            self.join(c, "old%d" % i)
        read_notifies(old, until_quiet=1.8, limit=8.0)  # the joins above, the window's end included
        time.sleep(1.7)  # a window with no NOTIFY: the group is quiet now
        lead = self.conn()
        t0 = time.monotonic()
        self.join(lead, "lead")  # the window's first change: notified at once
        self.assertIsNotNone(lead.wait_notify("G", timeout=1.0))
        self.assertLess(time.monotonic() - t0, 0.5)
        late = [self.conn() for _ in range(5)]
        for i, c in enumerate(late):
            self.join(c, "late%d" % i)
        last_ack = time.monotonic()
        self.assertLess(last_ack - t0, 1.0, "the burst did not fit the window; the machine is too slow")
        everyone = old + [lead] + late
        got = read_notifies(everyone, until_quiet=2.0, limit=8.0)  # quiet for longer than the window
        for i, times in got.items():
            self.assertTrue(times, "member %d never notified" % i)
            self.assertGreater(max(times), last_ack, "member %d: no NOTIFY after the last change" % i)
        # old members: the leading NOTIFY and the trailing one; late ones only the trailing one
        self.assertEqual([len(got[i]) for i in range(5)], [2] * 5)
        self.assertEqual([len(got[i]) for i in range(6, 11)], [1] * 5)
        r = lead.request(LIST, {"consumerGroup": "G"})
        self.assertEqual(len(r.json()["consumerIdList"]), 11)


class JoinStorm(StormCase):
    N = 600

    @classmethod
    def setUpClass(cls):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, 4096)
        if soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    def test_storm_notifies_everyone_without_a_notify_per_join(self):
        n = self.N
        conns = [self.conn() for _ in range(n)]
        opaques = [c.send(HB, body=heartbeat_body("s%d" % i, {"G": ["T"]})) for i, c in enumerate(conns)]
        for c, op in zip(conns, opaques):
            r = c.wait_response(op, timeout=20.0)
            self.assertIsNotNone(r)
            self.assertEqual(r.code, 0)
        got = read_notifies(conns, until_quiet=0.5, limit=30.0)
        missing = [i for i, t in got.items() if not t]
        self.assertEqual(missing, [], "members without a NOTIFY")
        total = sum(len(t) for t in got.values())
        # One NOTIFY per member per join would be n(n+1)/2.
        self.assertLess(total, n * (n + 1) // 2 // 4, "NOTIFYs were not coalesced")
        r = conns[0].request(LIST, {"consumerGroup": "G"})
        self.assertEqual(len(r.json()["consumerIdList"]), n)
        # After the storm a single join is notified at once, to everyone.
        x = self.conn()
        t0 = time.monotonic()
        self.join(x, "x")
        got = read_notifies(conns + [x], until_quiet=0.3, limit=5.0)
        self.assertEqual(sorted(set(len(t) for t in got.values())), [1])
        self.assertLess(max(max(t) for t in got.values()) - t0, 1.0)


if __name__ == "__main__":
    run_tests("storm")
