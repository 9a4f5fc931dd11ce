"""Integration tests for `rmqcoord sim`: simulated Java push consumers against
the real daemon (AVG convergence, NOTIFY-driven convergence and its latency,
every strategy against `rmqcoord allocate`, shared connections) and against a
scripted fake broker (the 307 reply, unknown codes, NOTIFY, reconnect,
UNREGISTER at shutdown). Standard library only; loopback only."""
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Conn, Daemon, DaemonCase, encode_header_json, frame, heartbeat_body, run_tests  # noqa: E402

BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "rmqcoord")
GROUP = "G"
# Latency bounds are for an optimised build; a sanitizer build runs ~3x slower.
try:
    with open(BIN, "rb") as _f:
        SLOW = 3 if b"__asan_init" in _f.read() else 1
except OSError:
    SLOW = 1
RETRY = "%RETRY%" + GROUP


class Sim:
    """One `rmqcoord sim` process; a reader thread collects its JSON lines."""

    def __init__(self, port, *extra, topics=("T",), group=GROUP):
        args = [BIN, "sim", "--namesrv", "127.0.0.1:%d" % port, "--group", group]
        for t in topics:
            args += ["--topic", t]
        self.args = args + list(extra)
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.cond = threading.Condition()
        self.lines, self.held, self.summary = [], {}, None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(target=self._read_err, daemon=True)
        self.stderr = b""
        self.err_reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            obj = json.loads(raw)
            with self.cond:
                if "summary" in obj:
                    self.summary = obj
                else:
                    self.lines.append(obj)
                    self.held[(obj["clientId"], obj["topic"])] = [q["queueId"] for q in obj["queues"]]
                self.cond.notify_all()

    def _read_err(self):
        self.stderr = self.proc.stderr.read()

    def wait_for(self, pred, timeout=10.0):
        """Waits until pred(held) is true; returns whether it became true."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred(self.held):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return pred(self.held)
                self.cond.wait(min(left, 0.1))
            return True

    def stop(self, test=None):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait(5)
        self.reader.join(5)
        self.err_reader.join(5)
        if test is not None:
            test.assertEqual(rc, 0, "sim exited %r: %s" % (rc, self.stderr.decode(errors="replace")[-2000:]))
            test.assertIsNotNone(self.summary, "no summary line")
        return rc


def avg_split(n_queues, cids):
    """docs/protocol.md §11.3 over one broker: {cid: [queueIds]} for sorted cids."""
    cids = sorted(cids)
    c, out = len(cids), {}
    for i, cid in enumerate(cids):
        mod = n_queues % c
        avg = 1 if n_queues <= c else (n_queues // c + 1 if mod > 0 and i < mod else n_queues // c)
        start = i * avg if mod > 0 and i < mod else i * avg + mod
        out[cid] = list(range(start, start + max(0, min(avg, n_queues - start))))
    return out


def allocate_cli(strategy, queues, consumers, options=None):
    """Expected allocation from `rmqcoord allocate` (allocate_group)."""
    case = {"strategy": strategy, "queues": queues, "consumers": consumers, "options": options or {}}
    out = subprocess.run([BIN, "allocate"], input=json.dumps(case) + "\n", capture_output=True, text=True,
                         timeout=30, check=True).stdout
    res = json.loads(out)
    if "error" in res:
        raise AssertionError(res["error"])
    return {cid: [(q["topic"], q["brokerName"], q["queueId"]) for q in qs] for cid, qs in res["allocation"].items()}


def matches(expected, topic):
    return lambda held: all(held.get((cid, topic)) == qs for cid, qs in expected.items())


class SimDaemonTest(DaemonCase):
    extra = ("--topic", "T:8")

    def setUp(self):
        super().setUp()
        self.sims = []

    def tearDown(self):
        for s in self.sims:
            s.stop()
        try:
            super().tearDown()
        finally:
            if self.d.tmp:
                shutil.rmtree(self.d.tmp, ignore_errors=True)

    def sim(self, *extra, **kw):
        s = Sim(self.d.port, *extra, **kw)
        self.sims.append(s)
        return s


class Convergence(SimDaemonTest):
    def test_three_clients_converge_to_avg(self):
        s = self.sim("--clients", "3", "--client-prefix", "c")
        want = avg_split(8, ["c-0", "c-1", "c-2"])
        self.assertEqual(want, {"c-0": [0, 1, 2], "c-1": [3, 4, 5], "c-2": [6, 7]})
        self.assertTrue(s.wait_for(matches(want, "T")), s.held)
        self.assertTrue(s.wait_for(matches({"c-0": [0], "c-1": [], "c-2": []}, RETRY)), s.held)
        with s.cond:
            first = {}
            for l in s.lines:
                first.setdefault((l["clientId"], l["topic"]), l["reason"])
        self.assertEqual(set(first.values()), {"start"})
        # The daemon sees three members pulling (one held pull per queue).
        c = self.d.connect()
        r = c.request(38, {"consumerGroup": GROUP})
        self.assertEqual(sorted(r.json()["consumerIdList"]), ["c-0", "c-1", "c-2"])
        c.close()
        s.stop(self)
        self.assertEqual(s.summary["summary"]["heldQueues"], 9)
        self.assertEqual(s.summary["summary"]["unregistered"], 6)  # consumer + inner producer, each client
        self.assertEqual(s.summary["summary"]["timeouts"], 0)

    def test_fourth_client_moves_everyone_by_notify(self):
        s = self.sim("--clients", "3", "--client-prefix", "c", "--rebalance-ms", "60000")
        self.assertTrue(s.wait_for(matches(avg_split(8, ["c-0", "c-1", "c-2"]), "T")), s.held)
        t0 = time.time() * 1000
        j = self.sim("--client-id", "c-3", "--rebalance-ms", "60000")
        want = avg_split(8, ["c-0", "c-1", "c-2", "c-3"])
        self.assertTrue(j.wait_for(matches({"c-3": want.pop("c-3")}, "T"), timeout=5), j.held)
        self.assertTrue(s.wait_for(matches(want, "T"), timeout=5), s.held)
        with s.cond:
            moved = [l for l in s.lines if l["reason"] == "notify" and l["topic"] == "T"]
        self.assertEqual(sorted({l["clientId"] for l in moved}), ["c-0", "c-1", "c-2"], "every member moved")
        took = max(l["t"] for l in moved) - t0
        print("\n4th join: all members moved %.0f ms after the joiner was started" % took, file=sys.stderr)
        self.assertLess(took, 500 * SLOW)
        # Leaving hands the queues back, again by NOTIFY only.
        j.stop(self)
        self.assertTrue(s.wait_for(matches(avg_split(8, ["c-0", "c-1", "c-2"]), "T"), timeout=5), s.held)
        s.stop(self)

    def test_no_notify_waits_for_the_timer(self):
        s = self.sim("--clients", "2", "--client-prefix", "q", "--no-notify", "--rebalance-ms", "1500")
        self.assertTrue(s.wait_for(matches(avg_split(8, ["q-0", "q-1"]), "T")), s.held)
        t0 = time.monotonic()
        j = self.sim("--client-id", "q-2", "--rebalance-ms", "60000")
        want = avg_split(8, ["q-0", "q-1", "q-2"])
        want.pop("q-2")
        self.assertTrue(s.wait_for(matches(want, "T"), timeout=5), s.held)
        self.assertGreater(time.monotonic() - t0, 0.2, "moved before the timer: NOTIFY was not ignored")
        with s.cond:
            self.assertEqual({l["reason"] for l in s.lines if l["reason"] != "start"}, {"timer"})
        j.stop(self)
        s.stop(self)


class SharedConnections(SimDaemonTest):
    def test_clients_per_conn(self):
        """Six clients on two connections. Whatever the daemon makes of several
        client ids on one channel (a Java broker keeps one member per channel,
        the last id to heartbeat), each client must hold what AVG gives it over
        the daemon's consumer list, and every queue is held exactly once."""
        cids = ["k-%d" % i for i in range(6)]
        s = self.sim("--clients", "6", "--client-prefix", "k", "--clients-per-conn", "3", "--rebalance-ms", "300")
        c = self.d.connect()
        ok = False
        for _ in range(40):
            r = c.request(38, {"consumerGroup": GROUP})
            listed = sorted(r.json()["consumerIdList"]) if r is not None and r.code == 0 else []
            split = avg_split(8, listed)
            want = {cid: split.get(cid, []) for cid in cids}
            if s.wait_for(matches(want, "T"), timeout=0.5):
                ok = True
                break
        c.close()
        self.assertTrue(ok, "%r vs list %r" % (s.held, listed))
        with s.cond:
            held = sorted(q for cid in cids for q in s.held.get((cid, "T"), []))
        self.assertEqual(held, list(range(8)))
        s.stop(self)
        summary = s.summary["summary"]
        self.assertEqual(summary["connections"], 2)
        self.assertEqual(summary["connects"], 2, "name server and broker share each group's connection")


class Strategies(SimDaemonTest):
    """Every strategy: the union of the sims' holdings is what allocate_group
    (via `rmqcoord allocate`) says, for the topic and the retry topic."""

    def check(self, strategy, sim_args, options=None, cids=None, broker="broker-a"):
        cids = cids or ["s-%d" % i for i in range(4)]
        s = self.sim("--clients", str(len(cids)), "--client-prefix", "s", "--strategy", strategy, *sim_args)
        for topic, n in (("T", 8), (RETRY, 1)):
            queues = [{"topic": topic, "brokerName": broker, "queueId": i} for i in range(n)]
            exp = allocate_cli(strategy, queues, cids, options)
            # CONFIG hands every topic's rebalance the whole list; a topic holds its own.
            want = {cid: [q[2] for q in exp.get(cid, []) if q[0] == topic] for cid in cids}
            self.assertTrue(s.wait_for(matches(want, topic)), "%s %s: %r != %r" % (strategy, topic, s.held, want))
        s.stop(self)

    def test_avg_and_circle(self):
        self.check("AVG", [])
        self.check("AVG_BY_CIRCLE", [])

    def test_consistent_hash(self):
        self.check("CONSISTENT_HASH", ["--virtual-nodes", "10"], {"virtualNodes": 10})

    def test_config(self):
        conf = [{"topic": "T", "brokerName": "broker-a", "queueId": q} for q in (5, 1)]
        self.check("CONFIG", ["--config-queues", "T:broker-a:5,T:broker-a:1"], {"config": conf})

    def test_machine_room_nearby_maps(self):
        rooms = {"s-0": "A", "s-1": "B", "s-2": "A", "s-3": "B"}
        self.check("MACHINE_ROOM_NEARBY", ["--broker-rooms", "broker-a=A", "--consumer-rooms",
                                           ",".join("%s=%s" % kv for kv in rooms.items()), "--inner", "AVG_BY_CIRCLE"],
                   {"brokerRooms": {"broker-a": "A"}, "consumerRooms": rooms, "inner": "AVG_BY_CIRCLE"})


class MachineRoomStrategies(SimDaemonTest):
    extra = ("--topic", "T:8", "--broker-name", "hz@broker-a")

    def test_machine_room(self):
        Strategies.check(self, "MACHINE_ROOM", ["--consumer-idcs", "hz"], {"consumerIdcs": ["hz"]},
                         broker="hz@broker-a")

    def test_machine_room_other_idc_gets_nothing(self):
        Strategies.check(self, "MACHINE_ROOM", ["--consumer-idcs", "sh"], {"consumerIdcs": ["sh"]},
                         broker="hz@broker-a")


class NearbyByRule(SimDaemonTest):
    extra = ("--topic", "T:8", "--broker-name", "broker-a-0")

    def test_machine_room_nearby_rule(self):
        # The rule takes the text after the last '-': client s-<i> sits in room i,
        # so only s-0 shares broker-a-0's room.
        Strategies.check(self, "MACHINE_ROOM_NEARBY", [], {}, broker="broker-a-0")


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


class Latency(SimDaemonTest):
    """Join -> last member's holdings line, NOTIFY only (--rebalance-ms 60000).
    The joiner is a raw connection whose id sorts first, so the join shifts
    every member's AVG block; it leaves by closing its socket."""
    daemon_args = ()
    joins = 10

    def measure(self, members, queues):
        self.d.stop()
        if self.d.tmp:
            shutil.rmtree(self.d.tmp, ignore_errors=True)
        self.d = Daemon("--topic", "L:%d" % queues)
        prefix = "m"
        cids = ["%s-%d" % (prefix, i) for i in range(members)]
        s = self.sim("--clients", str(members), "--client-prefix", prefix, "--rebalance-ms", "60000",
                     "--heartbeat-ms", "60000", topics=("L",))
        self.assertTrue(s.wait_for(matches(avg_split(queues, cids), "L"), timeout=60), "initial split")
        samples = []
        for k in range(self.joins):
            joiner = "a-joiner-%d" % k
            want = avg_split(queues, cids + [joiner])
            back = avg_split(queues, cids)
            want.pop(joiner)
            with s.cond:
                mark = len(s.lines)
            c = self.d.connect()
            t0 = time.time() * 1000
            r = c.request(34, body=heartbeat_body(joiner, {GROUP: ["L", RETRY]}))
            self.assertEqual(r.code, 0)
            self.assertTrue(s.wait_for(matches(want, "L"), timeout=10), "join %d did not converge" % k)
            with s.cond:
                new = [l for l in s.lines[mark:] if l["topic"] == "L"]
            self.assertTrue(new and all(l["reason"] == "notify" for l in new), new[:3])
            samples.append(max(l["t"] for l in new) - t0)
            c.close()
            self.assertTrue(s.wait_for(matches(back, "L"), timeout=10), "leave %d did not converge" % k)
        s.stop(self)
        p50, p99 = percentile(samples, 50), percentile(samples, 99)
        print("\nconvergence, %d members + 1 joiner, %d queues, %d joins: p50 %.0f ms, p99 %.0f ms (%s)" %
              (members, queues, self.joins, p50, p99, ", ".join("%.0f" % x for x in samples)), file=sys.stderr)
        return p50, p99

    def test_10_members(self):
        p50, p99 = self.measure(10, 100)
        self.assertLess(p99, 500 * SLOW)

    def test_100_members(self):
        p50, p99 = self.measure(100, 1000)
        self.assertLess(p50, 500 * SLOW)


class FakeBroker:
    """A scripted name server + broker on one port: answers what a consumer
    asks, records every request, and lets the test send requests to the sim."""

    def __init__(self, cid_list=None):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.cid_list = cid_list  # None: everyone who heartbeated
        self.members = []
        self.got = []  # (code, ext, body) of requests from the sim
        self.responses = []  # responses the sim sent
        self.conns = []
        self.lock = threading.Condition()
        self.stopping = False
        self.dropping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _route(self, topic):
        n = 1 if topic.startswith("%RETRY%") else 4
        return ('{"brokerDatas":[{"brokerAddrs":{0:"%s"},"brokerName":"broker-a","cluster":"C"}],'
                '"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":%d,'
                '"topicSysFlag":0,"writeQueueNums":%d}]}' % (self.addr, n, n)).encode()

    def _reply(self, c, f, code=0, ext=None, body=b""):
        h = {"code": code, "flag": 1, "language": "JAVA", "opaque": f.opaque, "version": 409,
             "extFields": ext or {}}
        c.send_raw(frame(encode_header_json(h), body))

    def _answer(self, c, f):
        if f.code == 105:
            self._reply(c, f, body=self._route(f.ext["topic"]))  # bare Long key, as fastjson writes it
        elif f.code == 34:
            cid = json.loads(f.body)["clientID"]
            if cid not in self.members:
                self.members.append(cid)
            self._reply(c, f)
        elif f.code == 38:
            ids = self.cid_list if self.cid_list is not None else self.members
            self._reply(c, f, body=json.dumps({"consumerIdList": ids}).encode())
        elif f.code in (14, 30):
            self._reply(c, f, ext={"offset": "7"})
        elif f.code == 35:
            self._reply(c, f)
        # 11 (pull) is held forever; 15 is oneway

    def _run(self):
        while not self.stopping:
            if self.dropping:
                with self.lock:
                    for c in self.conns:
                        c.close()
                    self.conns, self.dropping = [], False
                    self.lock.notify_all()
            socks = [self.lsock] + [c.sock for c in self.conns]
            r, _, _ = select.select(socks, [], [], 0.05)
            for s in r:
                if s is self.lsock:
                    a, _ = self.lsock.accept()
                    c = Conn.__new__(Conn)
                    c.sock, c.rbuf, c.next_opaque, c.inbox, c.closed = a, b"", 1000, [], False
                    with self.lock:
                        self.conns.append(c)
                    continue
                c = next(x for x in self.conns if x.sock is s)
                with self.lock:
                    while True:
                        f = c.recv_frame(0.0 if c.rbuf else 0.01)
                        if f is None:
                            break
                        if f.flag & 1:
                            self.responses.append(f)
                        else:
                            self.got.append((f.code, f.ext, f.body, f.flag))
                            self._answer(c, f)
                    if c.closed:
                        self.conns.remove(c)
                    self.lock.notify_all()

    def wait(self, pred, timeout=5.0):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(min(left, 0.05))
            return True

    def count(self, code):
        return sum(1 for g in self.got if g[0] == code)

    def send(self, code, ext, flag=0):
        with self.lock:
            return self.conns[0].send(code, ext, flag=flag)

    def response(self, opaque):
        got = []
        self.wait(lambda: got.extend(r for r in self.responses if r.opaque == opaque) or got, 3)
        return got[0] if got else None

    def drop_connections(self):
        """Closes every accepted connection (in the broker thread)."""
        self.dropping = True
        self.wait(lambda: not self.dropping)

    def close(self):
        self.stopping = True
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.lsock.close()


class AgainstFakeBroker(unittest.TestCase):
    def setUp(self):
        self.b = FakeBroker()
        self.s = Sim(self.b.port, "--clients", "2", "--client-prefix", "f", "--clients-per-conn", "2",
                     "--persist-ms", "200", "--rebalance-ms", "60000")

    def tearDown(self):
        self.s.stop()
        self.b.close()

    def test_java_sequence_and_running_info(self):
        s, b = self.s, self.b
        self.assertTrue(s.wait_for(matches({"f-0": [0, 1], "f-1": [2, 3]}, "T")), s.held)
        self.assertTrue(b.wait(lambda: b.count(11) >= 5))  # 4 queues of T + the retry queue
        codes = [g[0] for g in b.got]
        self.assertLess(codes.index(105), codes.index(34))
        self.assertLess(codes.index(34), codes.index(38))
        pull = next(g for g in b.got if g[0] == 11)[1]
        self.assertEqual(pull["queueOffset"], "7")
        self.assertEqual(pull["sysFlag"], "3")
        self.assertEqual(pull["suspendTimeoutMillis"], "15000")
        self.assertEqual(pull["bname"], "broker-a")
        hb = json.loads(next(g for g in b.got if g[0] == 34)[2])
        cd = hb["consumerDataSet"][0]
        self.assertEqual(sorted(sd["topic"] for sd in cd["subscriptionDataSet"]), [RETRY, "T"])
        self.assertEqual(hb["producerDataSet"], [{"groupName": "CLIENT_INNER_PRODUCER"}])
        self.assertTrue(b.wait(lambda: any(g[0] == 15 and g[3] == 2 for g in b.got)), "persist is oneway 15")

        op = b.send(307, {"consumerGroup": GROUP, "clientId": "f-1", "jstackEnable": "false"})
        r = b.response(op)
        self.assertIsNotNone(r)
        self.assertEqual((r.code, r.flag), (0, 1))
        body = r.body.decode()
        self.assertTrue(body.startswith('{"mqTable":{{"brokerName":"broker-a","queueId":2,"topic":"T"}:{'
                                        '"cachedMsgCount":0,'), body)
        self.assertIn('"allocateMessageQueueStrategy":"org.apache.rocketmq.client.consumer.rebalance.'
                      'AllocateMessageQueueAveragely@1"', body)
        self.assertIn('"commitOffset":7', body)
        op = b.send(307, {"consumerGroup": GROUP, "clientId": "nobody"})
        r = b.response(op)
        self.assertEqual(r.code, 1)
        self.assertIn("not exist in this consumer", r.remark)
        op = b.send(999, {})
        self.assertEqual(b.response(op).code, 3)
        b.send(998, {}, flag=2)  # oneway: no reply may come
        op = b.send(999, {})
        self.assertEqual(b.response(op).code, 3)
        self.assertEqual([x for x in b.responses if x.code == 3 and x.opaque == op - 1], [])

    def test_notify_rebalances_and_reconnect_reheartbeats(self):
        s, b = self.s, self.b
        self.assertTrue(s.wait_for(matches({"f-0": [0, 1], "f-1": [2, 3]}, "T")), s.held)
        b.cid_list = ["f-0", "f-1", "e-9"]
        lists = b.count(38)
        b.send(40, {"consumerGroup": GROUP}, flag=2)
        want = {"f-0": [2], "f-1": [3]}  # e-9 sorts first and takes [0, 1]
        self.assertTrue(s.wait_for(matches(want, "T"), timeout=2), s.held)
        self.assertGreater(b.count(38), lists)
        self.assertEqual({l["reason"] for l in s.lines if l["reason"] != "start"}, {"notify"})
        hbs = b.count(34)
        b.drop_connections()
        self.assertTrue(b.wait(lambda: b.count(34) >= hbs + 2, timeout=5), "no re-heartbeat after reconnect")
        self.assertTrue(b.wait(lambda: b.count(11) > 0 and len(b.conns) == 1, timeout=5))

    def test_shutdown_unregisters(self):
        s, b = self.s, self.b
        self.assertTrue(s.wait_for(matches({"f-0": [0, 1], "f-1": [2, 3]}, "T")), s.held)
        t0 = time.monotonic()
        s.stop(self)
        self.assertLess(time.monotonic() - t0, 3)
        unreg = [g[1] for g in b.got if g[0] == 35]
        self.assertEqual(sorted((u["clientID"], u.get("consumerGroup", ""), u.get("producerGroup", "")) for u in unreg),
                         [("f-0", "", "CLIENT_INNER_PRODUCER"), ("f-0", "G", ""),
                          ("f-1", "", "CLIENT_INNER_PRODUCER"), ("f-1", "G", "")])
        self.assertEqual(s.summary["summary"]["unregistered"], 4)


class BadFlags(unittest.TestCase):
    def test_bad_flags(self):
        for args in ([], ["--namesrv", "127.0.0.1:1"], ["--namesrv", "127.0.0.1:1", "--group", "G"],
                     ["--namesrv", "127.0.0.1:1", "--group", "G", "--topic", "T", "--clients", "0"],
                     ["--namesrv", "127.0.0.1:1", "--group", "G", "--topic", "T", "--strategy", "NOPE"],
                     ["--namesrv", "127.0.0.1:1", "--group", "G", "--topic", "T", "--strategy", "CONFIG"],
                     ["--namesrv", "127.0.0.1:1", "--group", "G", "--topic", "T", "--clients", "2",
                      "--client-id", "x"]):
            r = subprocess.run([BIN, "sim"] + args, capture_output=True, timeout=10)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(b"rmqcoord sim:", r.stderr)
        r = subprocess.run([BIN, "sim", "--help"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0)

    def test_unreachable_namesrv_and_duration(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        t0 = time.monotonic()
        r = subprocess.run([BIN, "sim", "--namesrv", "127.0.0.1:%d" % port, "--group", "G", "--topic", "T",
                            "--duration-ms", "600", "--route-ms", "100"], capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIn(b'"summary"', r.stdout)


if __name__ == "__main__":
    run_tests("sim integration")
