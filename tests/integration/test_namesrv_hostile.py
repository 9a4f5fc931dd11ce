"""Hostile peers of a `--role namesrv` process (docs/cluster.md "Who may
change a registration", docs/reliability.md): a foreign connection cannot
take over, unregister or remove a broker name another connection holds;
brokerAddr must be HOST:PORT; rmqcoord brokers sign their registrations with
--namesrv-access-key so a name server with --acl takes them; topic caps
(--ns-max-topics-per-broker, --ns-max-topics) and the body bound refuse
oversized registrations; GET /api/cluster pages the brokers and lists
topics only on request. Standard library only; every wait is bounded."""
import json
import os
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Conn, Daemon  # noqa: E402

SYSTEM_ERROR, NO_PERMISSION = 1, 16


def wait_until(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def reg_body(topics):
    table = {t: {"topicName": t, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6} for t in topics}
    return json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": 1, "timestamp": 1}, "topicConfigTable": table}}).encode()


def register(conn, name, addr, topics=("T",), body=None):
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": "DefaultCluster", "haServerAddr": addr,
           "brokerId": "0", "compressed": "false"}
    return conn.request(103, ext, reg_body(topics) if body is None else body, timeout=10)


def unregister(conn, name, addr):
    return conn.request(104, {"brokerName": name, "brokerAddr": addr, "clusterName": "DefaultCluster",
                              "brokerId": "0"})


def route_addrs(port, topic="T"):
    c = Conn(port)
    try:
        f = c.request(105, {"topic": topic}, version=409)
    finally:
        c.close()
    if f is None or f.code != 0:
        return {}
    return {b["brokerName"]: b["brokerAddrs"]["0"] for b in f.json()["brokerDatas"]}


def limit_hits(d):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % d.http_port, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("rmqcoord_limit_hits_total "):
                return int(float(line.split()[1]))
    return None


class Base(unittest.TestCase):
    def setUp(self):
        self.procs = []

    def start(self, *args):
        d = Daemon(*args)
        self.procs.append(d)
        return d

    def tearDown(self):
        for d in reversed(self.procs):
            self.assertEqual(d.stop(), 0, d.logtext())

    def broker(self, ns, name, *extra):
        return self.start("--role", "broker", "--namesrv", "127.0.0.1:%d" % ns.port, "--broker-name", name,
                          "--topic", "T:4", "--register-interval-ms", "300", *extra)


class OwnershipTest(Base):
    def setUp(self):
        super().setUp()
        self.ns = self.start("--role", "namesrv")
        self.a = self.broker(self.ns, "broker-a")
        self.real = "127.0.0.1:%d" % self.a.port
        self.assertTrue(wait_until(lambda: route_addrs(self.ns.port).get("broker-a") == self.real),
                        self.ns.logtext())

    def test_foreign_registration_under_a_taken_name_is_refused(self):
        evil = Conn(self.ns.port)
        f = register(evil, "broker-a", "10.6.6.6:10911")
        self.assertEqual(f.code, SYSTEM_ERROR, f)
        self.assertIn("registered at %s by another connection" % self.real, f.remark)
        evil.close()  # a register-then-close must not remove the real broker either
        time.sleep(0.7)  # two of the broker's registration periods
        self.assertEqual(route_addrs(self.ns.port), {"broker-a": self.real})

    def test_foreign_unregister_is_refused(self):
        evil = Conn(self.ns.port)
        f = unregister(evil, "broker-a", self.real)
        self.assertEqual(f.code, SYSTEM_ERROR, f)
        self.assertIn("UNREGISTER_BROKER", f.remark)
        evil.close()
        self.assertEqual(route_addrs(self.ns.port), {"broker-a": self.real})

    def test_owner_connection_may_replace_and_unregister(self):
        own = Conn(self.ns.port)
        self.assertEqual(register(own, "broker-x", "10.0.0.1:10911").code, 0)
        self.assertEqual(register(own, "broker-x", "10.0.0.2:10911").code, 0)
        self.assertEqual(route_addrs(self.ns.port).get("broker-x"), "10.0.0.2:10911")
        self.assertEqual(unregister(own, "broker-x", "10.0.0.2:10911").code, 0)
        self.assertNotIn("broker-x", route_addrs(self.ns.port))
        own.close()

    def test_broker_addr_must_be_host_port(self):
        c = Conn(self.ns.port)
        for bad in ("nohost", "h:0", "h:65536", "h:", ":10911", "a b:1", "h:1x", "h\n:1", "[zz]:1",
                    "x" * 300 + ":1"):
            f = register(c, "broker-bad", bad)
            self.assertEqual(f.code, SYSTEM_ERROR, bad)
            self.assertIn("brokerAddr", f.remark)
        for good in ("10.0.0.1:1", "host-1.example:65535", "[::1]:10911"):
            self.assertEqual(register(c, "broker-ok", good).code, 0, good)
        c.close()

    def test_unsigned_broker_leaves_at_clean_shutdown(self):
        self.a.stop()
        self.procs.remove(self.a)
        self.assertTrue(wait_until(lambda: route_addrs(self.ns.port) == {}, timeout=3), self.ns.logtext())


class AclTest(Base):
    def setUp(self):
        super().setUp()
        fd, self.acl = tempfile.mkstemp(suffix=".yml")
        os.write(fd, b"accounts:\n  - accessKey: brokerKey\n    secretKey: brokerSecret1\n")
        os.close(fd)
        self.addCleanup(os.unlink, self.acl)
        self.ns = self.start("--role", "namesrv", "--acl", self.acl)

    def test_signed_broker_registers_and_unregisters(self):
        a = self.broker(self.ns, "broker-a", "--namesrv-access-key", "brokerKey", "--namesrv-secret-key",
                        "brokerSecret1")
        # the name server's own route query must be signed too: ask the broker's status instead
        self.assertTrue(wait_until(lambda: a.http("GET", "/api/cluster")[1]["namesrvs"][0]["registered"]),
                        a.logtext())
        st, body = self.ns.http("GET", "/api/cluster")
        self.assertEqual([(b["brokerName"], b["signed"]) for b in body["brokers"]], [("broker-a", True)])
        a.stop()
        self.procs.remove(a)
        self.assertTrue(wait_until(lambda: self.ns.http("GET", "/api/cluster")[1]["brokers"] == [], timeout=3))
        self.assertIn("removed (UNREGISTER_BROKER)", self.ns.logtext())

    def test_unsigned_broker_is_refused(self):
        b = self.broker(self.ns, "broker-b")
        self.assertTrue(wait_until(
            lambda: "ACL" in (b.http("GET", "/api/cluster")[1]["namesrvs"][0].get("lastError") or "")),
            b.logtext())
        self.assertEqual(self.ns.http("GET", "/api/cluster")[1]["brokers"], [])

    def test_wrong_secret_is_refused(self):
        b = self.broker(self.ns, "broker-b", "--namesrv-access-key", "brokerKey", "--namesrv-secret-key", "nope")
        self.assertTrue(wait_until(
            lambda: "signature mismatch" in (b.http("GET", "/api/cluster")[1]["namesrvs"][0].get("lastError")
                                             or "")), b.logtext())
        self.assertEqual(self.ns.http("GET", "/api/cluster")[1]["brokers"], [])

    def test_half_a_key_pair_is_a_usage_error(self):
        with self.assertRaises(RuntimeError):
            Daemon("--role", "broker", "--namesrv", "127.0.0.1:1", "--namesrv-access-key", "k")


class LimitsTest(Base):
    def setUp(self):
        super().setUp()
        self.ns = self.start("--role", "namesrv", "--ns-max-topics-per-broker", "10", "--ns-max-topics", "15")

    def test_topic_caps_and_body_bound(self):
        c = Conn(self.ns.port)
        before = limit_hits(self.ns)
        f = register(c, "b1", "10.0.0.1:1", ["T%d" % i for i in range(11)])
        self.assertEqual(f.code, SYSTEM_ERROR)
        self.assertIn("--ns-max-topics-per-broker", f.remark)
        self.assertEqual(register(c, "b1", "10.0.0.1:1", ["T%d" % i for i in range(10)]).code, 0)
        f = register(c, "b2", "10.0.0.2:1", ["U%d" % i for i in range(6)])
        self.assertEqual(f.code, SYSTEM_ERROR)
        self.assertIn("--ns-max-topics (15)", f.remark)
        self.assertEqual(register(c, "b2", "10.0.0.2:1", ["U%d" % i for i in range(5)]).code, 0)
        # b1 may shrink and b2 grow into the room it left
        self.assertEqual(register(c, "b1", "10.0.0.1:1", ["T0"]).code, 0)
        self.assertEqual(register(c, "b2", "10.0.0.2:1", ["U%d" % i for i in range(10)]).code, 0)
        # refused before parsing: 10 topics * 512 + 64 KiB
        f = register(c, "b3", "10.0.0.3:1", body=b"{" + b" " * (10 * 512 + 65536) + b"}")
        self.assertEqual(f.code, SYSTEM_ERROR)
        self.assertIn("RegisterBrokerBody bytes over --ns-max-topics-per-broker", f.remark)
        # and before parsing, by its count of objects: more than 3 per allowed topic (+64)
        f = register(c, "b3", "10.0.0.3:1", body=b'{"x":[' + b"{}," * 100 + b"{}]}")
        self.assertEqual(f.code, SYSTEM_ERROR)
        self.assertIn("topic entries (JSON objects / 3) over --ns-max-topics-per-broker (10)", f.remark)
        self.assertEqual(limit_hits(self.ns) - before, 4)
        c.close()

    def test_admin_view_pages_and_lists_topics_on_request(self):
        c = Conn(self.ns.port)
        for i in range(5):
            self.assertEqual(register(c, "b%d" % i, "10.0.0.%d:1" % (i + 1), ["T%d" % i, "X"]).code, 0)
        st, body = self.ns.http("GET", "/api/cluster?limit=2")
        self.assertEqual(st, 200)
        self.assertEqual([b["brokerName"] for b in body["brokers"]], ["b0", "b1"])
        self.assertEqual((body["brokerCount"], body["topicCount"], body["nextBrokersAfter"]), (5, 10, "b1"))
        self.assertTrue(all(b["topicCount"] == 2 and not b["topicsTruncated"] for b in body["brokers"]))
        st, body = self.ns.http("GET", "/api/cluster?limit=2&brokersAfter=b3&topicsOf=b4")
        self.assertEqual([b["brokerName"] for b in body["brokers"]], ["b4"])
        self.assertNotIn("nextBrokersAfter", body)
        self.assertEqual([t["topic"] for t in body["brokers"][0]["topics"]], ["T4", "X"])
        # a broker's topic list is cut to 16 unless topicsOf names it
        ns = self.start("--role", "namesrv")
        c2 = Conn(ns.port)
        self.assertEqual(register(c2, "b4", "10.0.0.5:1", ["Z%02d" % i for i in range(20)]).code, 0)
        for q, n in (("", 16), ("&topicsOf=b4", 20)):
            st, body = ns.http("GET", "/api/cluster?brokersAfter=b3" + q)
            b = body["brokers"][0]
            self.assertEqual((len(b["topics"]), b["topicCount"], b["topicsTruncated"]), (n, 20, n < 20))
        for bad in ("0", "257", "x", ""):
            st, body = self.ns.http("GET", "/api/cluster?limit=" + bad)
            self.assertEqual(st, 400, bad)
        c.close()
        c2.close()


if __name__ == "__main__":
    unittest.main()
