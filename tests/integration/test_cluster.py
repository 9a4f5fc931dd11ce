"""Cluster mode (docs/cluster.md): one `--role namesrv` process and two
`--role broker` processes on loopback. Brokers register with REGISTER_BROKER,
the name server routes over both, a killed broker leaves the routes and
consumers rebalance onto the survivor, and a divergence between the brokers'
member lists shows in GET /api/cluster?group=G, and in each broker's recorded
heartbeat trace replayed offline (`rmqcoord replay --format json`, see
docs/trace-format.md). Standard library only."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Conn, Daemon, heartbeat_body  # noqa: E402

BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "rmqcoord")
GROUP = "G"
FAST = ("--register-interval-ms", "300")


def wait_until(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class Sim:
    """`rmqcoord sim` consumers; holdings keyed by clientId as (brokerName, queueId) sets."""

    def __init__(self, ns_port, clients=2):
        self.proc = subprocess.Popen(
            [BIN, "sim", "--namesrv", "127.0.0.1:%d" % ns_port, "--group", GROUP, "--topic", "T", "--clients",
             str(clients), "--heartbeat-ms", "300", "--rebalance-ms", "300", "--route-ms", "300"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lock = threading.Lock()
        self.held = {}
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            obj = json.loads(raw)
            if "clientId" in obj and obj.get("topic") == "T":
                with self.lock:
                    self.held[obj["clientId"]] = {(q["brokerName"], q["queueId"]) for q in obj["queues"]}

    def union(self):
        with self.lock:
            out = set()
            for qs in self.held.values():
                out |= qs
            return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)


def replay_changes(trace, group):
    """The offline replay's membership changes of `group` in `trace`: [(kind, clientId, members)]."""
    p = subprocess.run([BIN, "replay", trace, "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError("replay %s failed (%d): %s" % (trace, p.returncode, p.stderr.decode(errors="replace")))
    recs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    return [(r["kind"], r.get("clientId"), r["members"]) for r in recs if r["type"] == "change" and r["group"] == group]


def route(port, topic="T", version=409):
    c = Conn(port)
    try:
        return c.request(105, {"topic": topic}, version=version)
    finally:
        c.close()


def route_brokers(port, topic="T"):
    f = route(port, topic)
    if f is None or f.code != 0:
        return {}
    # version 409 < 401? no: 409 >= 401, so brokerAddrs keys are quoted and the body is standard JSON.
    r = f.json()
    addrs = {b["brokerName"]: b["brokerAddrs"]["0"] for b in r["brokerDatas"]}
    queues = {q["brokerName"]: (q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in r["queueDatas"]}
    return {n: (addrs.get(n), queues.get(n)) for n in queues}


class ClusterTest(unittest.TestCase):
    def setUp(self):
        self.procs = []
        # every broker records its heartbeat trace (serve --record) here
        self.tmp = tempfile.mkdtemp(prefix="rmqcoord-cluster-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.traces = {}
        self.ns = self.start("--role", "namesrv", "--broker-expiry-ms", "1500")
        self.a = self.broker("broker-a")
        self.b = self.broker("broker-b")
        ok = wait_until(lambda: len(route_brokers(self.ns.port)) == 2)
        self.assertTrue(ok, "routes never listed both brokers: %s" % self.ns.logtext())

    def start(self, *args):
        d = Daemon(*args)
        self.procs.append(d)
        return d

    def broker(self, name):
        self.traces[name] = os.path.join(self.tmp, name + ".trace.jsonl")
        return self.start("--role", "broker", "--namesrv", "127.0.0.1:%d" % self.ns.port, "--broker-name", name,
                          "--topic", "T:4", "--record", self.traces[name], *FAST)

    def tearDown(self):
        for d in reversed(self.procs):
            killed = d.proc.poll() is not None and d.proc.returncode < 0
            rc = d.stop()
            if not killed:  # a clean shutdown (and, under ASan, no leak report)
                self.assertEqual(rc, 0, d.logtext())

    def test_routes_list_every_broker_at_its_own_address(self):
        rb = route_brokers(self.ns.port)
        self.assertEqual(rb, {"broker-a": ("127.0.0.1:%d" % self.a.port, (4, 4, 6)),
                              "broker-b": ("127.0.0.1:%d" % self.b.port, (4, 4, 6))})
        # old clients get fastjson's bare ids; the route is otherwise the same
        f = route(self.ns.port, version=317)
        self.assertEqual(f.code, 0)
        self.assertIn(b'"brokerAddrs":{0:"127.0.0.1:%d"}' % self.a.port, f.body)

    def test_cluster_info_lists_live_brokers(self):
        c = Conn(self.ns.port)
        r = c.request(106, {})
        c.close()
        self.assertEqual(r.code, 0)
        self.assertIn(b'"brokerAddrs":{0:"127.0.0.1:', r.body, "bare broker ids, as the name server writes them")
        info = json.loads(r.body.replace(b"{0:", b'{"0":'))
        self.assertEqual(sorted(info["brokerAddrTable"]), ["broker-a", "broker-b"])
        self.assertEqual(info["clusterAddrTable"], {"DefaultCluster": ["broker-a", "broker-b"]})
        addrs = {b["brokerName"]: b["brokerAddrs"]["0"] for b in info["brokerAddrTable"].values()}
        self.assertEqual(addrs, {"broker-a": "127.0.0.1:%d" % self.a.port, "broker-b": "127.0.0.1:%d" % self.b.port})

    def test_name_server_has_no_auto_create_and_refuses_broker_codes(self):
        f = route(self.ns.port, "Unknown")
        self.assertEqual(f.code, 17)
        c = Conn(self.ns.port)
        f = c.request(34, body=heartbeat_body("c1", {GROUP: ["T"]}))
        self.assertEqual(f.code, 3, f)
        c.close()
        # a broker asked for an unknown topic does not create it either (cluster mode)
        self.assertEqual(route(self.a.port, "Unknown2").code, 17)

    def test_topic_created_on_a_broker_reaches_the_name_server(self):
        st, _ = self.a.http("PUT", "/api/topics/T2", {"readQueueNums": 3, "writeQueueNums": 3})
        self.assertIn(st, (200, 201), _)
        ok = wait_until(lambda: route_brokers(self.ns.port, "T2"))
        self.assertEqual(ok, {"broker-a": ("127.0.0.1:%d" % self.a.port, (3, 3, 6))})

    def test_api_cluster_on_both_roles(self):
        st, body = self.ns.http("GET", "/api/cluster")
        self.assertEqual(st, 200)
        self.assertEqual(body["role"], "namesrv")
        self.assertEqual([b["brokerName"] for b in body["brokers"]], ["broker-a", "broker-b"])
        for b in body["brokers"]:
            self.assertIn("httpAddr", b)
            self.assertGreater(b["lastRegisteredMs"], 0)
        st, body = self.a.http("GET", "/api/cluster")
        self.assertEqual(st, 200)
        self.assertEqual(body["role"], "broker")
        self.assertEqual(body["brokerName"], "broker-a")
        self.assertTrue(wait_until(lambda: self.a.http("GET", "/api/cluster")[1]["namesrvs"][0]["registered"]))

    def test_clean_shutdown_unregisters(self):
        self.b.stop()
        self.assertTrue(wait_until(lambda: list(route_brokers(self.ns.port)) == ["broker-a"], timeout=3))
        # an unsigned broker closes its registration connection first (docs/cluster.md), which removes it
        self.assertRegex(self.ns.logtext(), r"broker broker-b at \S+ removed \((its connection closed|UNREGISTER_BROKER)\)")

    def test_sim_consumers_use_both_brokers_and_survive_a_kill(self):
        sim = Sim(self.ns.port, clients=2)
        try:
            every = {(b, q) for b in ("broker-a", "broker-b") for q in range(4)}
            self.assertTrue(wait_until(lambda: sim.union() == every, timeout=15), sim.held)
            with sim.lock:
                self.assertEqual(len(sim.held), 2)
                self.assertTrue(all(len(q) == 4 for q in sim.held.values()), sim.held)
            # both brokers see both consumers: each notifies its own channels
            for d in (self.a, self.b):
                st, g = d.http("GET", "/api/groups/" + GROUP)
                self.assertEqual(st, 200)
                self.assertEqual(len(g["consumers"]), 2, g)
            self.b.proc.send_signal(signal.SIGKILL)
            self.b.proc.wait(5)
            self.assertTrue(wait_until(lambda: list(route_brokers(self.ns.port)) == ["broker-a"], timeout=5))
            only_a = {("broker-a", q) for q in range(4)}
            self.assertTrue(wait_until(lambda: sim.union() == only_a, timeout=15), sim.held)
        finally:
            self.assertEqual(sim.stop(), 0)

    def test_divergence_is_visible_in_api_cluster(self):
        # membership is per channel: each client id has its own connection
        conns = {"a": Conn(self.a.port), "b": Conn(self.b.port), "a2": Conn(self.a.port)}
        try:
            for k in ("a", "b"):
                self.assertEqual(conns[k].request(34, body=heartbeat_body("c1", {GROUP: ["T"]})).code, 0)
            self.assertEqual(conns["a2"].request(34, body=heartbeat_body("c2", {GROUP: ["T"]})).code, 0)
            st, body = self.ns.http("GET", "/api/cluster?group=" + GROUP)
            self.assertEqual(st, 200, body)
            by = {b["brokerName"]: b for b in body["brokers"]}
            self.assertEqual(by["broker-a"]["members"], ["c1", "c2"])
            self.assertEqual(by["broker-b"]["members"], ["c1"])
            self.assertEqual(by["broker-a"]["missing"], [])
            self.assertEqual(by["broker-b"]["missing"], ["c2"])
            self.assertFalse(body["agree"])
            self.assertEqual(body["allMembers"], ["c1", "c2"])
        finally:
            for c in conns.values():
                c.close()
        # The same divergence in the brokers' own records: each broker's trace, replayed
        # offline, gives its own membership timeline, and c2 (which heartbeat only to
        # broker-a) is in broker-a's and nowhere in broker-b's.
        for d in (self.a, self.b):  # every member has left by a close (each broker's group ends empty)
            self.assertTrue(wait_until(lambda: d.http("GET", "/api/groups/" + GROUP)[1].get("consumers") == [], timeout=5),
                            d.http("GET", "/api/groups/" + GROUP))
        events = {}
        for name, d in (("broker-a", self.a), ("broker-b", self.b)):
            st, ev = d.http("GET", "/api/events?limit=1000")
            self.assertEqual(st, 200, ev)
            events[name] = [(e["kind"], e["after"]) for e in sorted(ev["events"], key=lambda e: e["id"])
                            if e["group"] == GROUP]
            self.assertEqual(d.stop(), 0, d.logtext())  # SIGTERM flushes the trace's last buffered lines
        tl = {name: replay_changes(self.traces[name], GROUP) for name in ("broker-a", "broker-b")}
        ids = {name: {c for _, c, _ in t} | {m for _, _, ms in t for m in ms} for name, t in tl.items()}
        self.assertEqual(ids["broker-a"], {"c1", "c2"}, tl["broker-a"])
        self.assertEqual(ids["broker-b"], {"c1"}, tl["broker-b"])
        self.assertEqual(tl["broker-a"][:2], [("join", "c1", ["c1"]), ("join", "c2", ["c1", "c2"])], tl["broker-a"])
        self.assertEqual(tl["broker-b"][0], ("join", "c1", ["c1"]), tl["broker-b"])
        for name, t in tl.items():
            self.assertEqual(t[-1][2], [], "%s: every member left: %s" % (name, t))
            # and each broker's replay is that broker's own event log
            self.assertEqual([(k, m) for k, _, m in t], events[name], name)


def fake_registration(name, **more):
    """extFields and body of REGISTER_BROKER (103) from a broker `name` at
    127.0.0.1:1 with topic T (2 queues), extFields `more` added."""
    body = {"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": 1, "timestamp": 1},
        "topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}}}}
    ext = {"brokerName": name, "brokerAddr": "127.0.0.1:1", "clusterName": "DefaultCluster",
           "haServerAddr": "127.0.0.1:1", "brokerId": 0, "compressed": "false", "bodyCrc32": 0, **more}
    return ext, body


class ExpiryTest(unittest.TestCase):
    def test_broker_that_stops_registering_expires(self):
        ns = Daemon("--role", "namesrv", "--broker-expiry-ms", "1500")
        try:
            c = Conn(ns.port)
            ext, body = fake_registration("fake")
            f = c.request(103, ext, body=body)
            self.assertEqual(f.code, 0, f)
            self.assertEqual(list(route_brokers(ns.port)), ["fake"])
            # a wrong checksum is refused
            f = c.request(103, dict(ext, bodyCrc32=12345), body=body)
            self.assertEqual(f.code, 1, f)
            t0 = time.monotonic()
            self.assertTrue(wait_until(lambda: route_brokers(ns.port) == {}, timeout=5))
            self.assertGreater(time.monotonic() - t0, 0.8)  # expiry, not the connection (still open)
            c.close()
        finally:
            ns.stop()


class SlowBrokerView(unittest.TestCase):
    """GET /api/cluster?group= asks every broker's admin API (up to 1 s
    each). A broker whose admin API never answers must not hold the name
    server's other admin requests: the fetch runs off the HTTP thread."""

    def test_slow_broker_does_not_stall_the_admin_api(self):
        import socket
        import threading
        import urllib.request
        blackhole = socket.socket()
        blackhole.bind(("127.0.0.1", 0))
        blackhole.listen(16)  # accepts (in the backlog) and never answers
        ns = Daemon("--role", "namesrv")
        try:
            c = Conn(ns.port)
            ext, body = fake_registration("slow", rmqcoordHttp="127.0.0.1:%d" % blackhole.getsockname()[1])
            self.assertEqual(c.request(103, ext, body=body).code, 0)
            views = []
            t = threading.Thread(target=lambda: views.append(ns.http("GET", "/api/cluster?group=G")))
            t.start()
            time.sleep(0.2)  # the view is now waiting on the slow broker
            lat = []
            for _ in range(5):
                t0 = time.monotonic()
                with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % ns.http_port, timeout=5) as r:
                    self.assertEqual(r.status, 200)
                lat.append(time.monotonic() - t0)
            t.join(10)
            self.assertEqual(views and views[0][0], 200, views)
            self.assertLess(max(lat), 0.5, "/healthz waited %.2f s behind the slow broker" % max(lat))
            c.close()
        finally:
            ns.stop()
            blackhole.close()


if __name__ == "__main__":
    unittest.main()

