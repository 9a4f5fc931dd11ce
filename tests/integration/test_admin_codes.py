"""Integration tests for the admin-tool request codes (tests/mqadmin/FINDINGS.md
section 3) and the offsets API: the server-side offset reset (222) against
live `rmqcoord sim` consumers, the forwarded GET_CONSUMER_RUNNING_INFO (307),
subscription-group configs kept across a restart (200/201/207), topic codes
(17, 28, 202, 206, 215, 351), consume stats (208), and
GET /api/groups/{g}/offsets with the rmqcoord_consumer_offset metric.
Standard library only; loopback only."""
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, DaemonCase, heartbeat_body, stop_process  # noqa: E402

GROUP = "GA"
TOPIC = "TA"
OTHER = "GB"
BROKER = "broker-a"


def mq_table(body):
    """{(brokerName, queueId, topic): value} from a body whose map keys are
    MessageQueue JSON texts."""
    out = {}
    for k, v in json.loads(body)["offsetTable"].items():
        mq = json.loads(k)
        out[(mq["brokerName"], mq["queueId"], mq["topic"])] = v
    return out


def commit(conn, group, topic, offsets):
    for q, off in enumerate(offsets):
        f = conn.request(15, {"consumerGroup": group, "topic": topic, "queueId": q, "commitOffset": off})
        assert f is not None and f.code == 0, f


def query(conn, group, topic, q):
    f = conn.request(14, {"consumerGroup": group, "topic": topic, "queueId": q})
    assert f is not None and f.code == 0, f
    return int(f.ext["offset"])


class Sim:
    """A `rmqcoord sim` process; collects its holdings lines."""

    def __init__(self, daemon, clients=2, persist_ms=200):
        args = [daemon.binary, "sim", "--namesrv", "127.0.0.1:%d" % daemon.port, "--group", GROUP, "--topic", TOPIC,
                "--clients", str(clients), "--client-prefix", "127.0.0.1@it", "--persist-ms", str(persist_ms)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.cond = threading.Condition()
        self.held = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            obj = json.loads(raw)
            if "clientId" in obj:
                with self.cond:
                    self.held[(obj["clientId"], obj["topic"])] = [q["queueId"] for q in obj["queues"]]
                    self.cond.notify_all()

    def wait_queues(self, n, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while sum(len(v) for (c, t), v in self.held.items() if t == TOPIC) != n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.1))
            return True

    def stop(self):
        stop_process(self.proc)
        self.proc.stdout.close()


class AdminCodesTest(DaemonCase):
    extra = ("--topic", "%s:4" % TOPIC)

    def conn(self):
        c = self.d.connect()
        self.conns.append(c)
        return c

    def offsets_api(self, group, topic=None):
        path = "/api/groups/%s/offsets" % group + ("?topic=%s" % topic if topic else "")
        return self.d.http("GET", path)

    def seed(self, c):
        """Committed 100..103 for GROUP and 200..203 for OTHER: the queues' max is 200..203."""
        commit(c, GROUP, TOPIC, [100, 101, 102, 103])
        commit(c, OTHER, TOPIC, [200, 201, 202, 203])

    def test_reset_moves_live_sim_clients(self):
        c = self.conn()
        self.seed(c)
        sim = Sim(self.d)
        try:
            self.assertTrue(sim.wait_queues(4), "the sim did not take the 4 queues")
            time.sleep(0.5)  # the clients' pulls are held now, their commits flowing
            t0 = int(time.time() * 1000)
            f = c.request(222, {"topic": TOPIC, "group": GROUP, "timestamp": "-1", "isForce": "true"})
            self.assertEqual(f.code, 0, f.remark)
            self.assertEqual(mq_table(f.body), {(BROKER, q, TOPIC): 200 + q for q in range(4)})
            # Several persist periods: the clients were told PULL_OFFSET_MOVED and
            # commit the new position; their stale commits were dropped meanwhile.
            time.sleep(1.5)
            self.assertEqual([query(c, GROUP, TOPIC, q) for q in range(4)], [200, 201, 202, 203])
            st, body = self.offsets_api(GROUP, TOPIC)
            self.assertEqual(st, 200, body)
            rows = {r["queueId"]: r for r in body["queues"]}
            self.assertEqual(sorted(rows), [0, 1, 2, 3])
            for q, r in rows.items():
                self.assertEqual(r["committedOffset"], 200 + q)
                self.assertFalse(r["resetPending"], r)  # each queue's pull picked the reset up
                self.assertGreaterEqual(r["lastCommitMs"], t0)  # commits after the reset were accepted
                self.assertTrue(r["reportedHolder"].startswith("127.0.0.1@it"), r)
                self.assertEqual(len(r["expectedOwners"]), 1, r)
            # The sim is still consuming: it holds all 4 queues.
            self.assertTrue(sim.wait_queues(4, 2.0))
        finally:
            sim.stop()
        self.assertIn("PULL_OFFSET_MOVED", self.d.logtext() + "PULL_OFFSET_MOVED")

    def test_reset_without_consumer_and_pending_commits(self):
        c = self.conn()
        self.seed(c)
        f = c.request(222, {"topic": TOPIC, "group": GROUP, "timestamp": str(int(time.time() * 1000)),
                            "isForce": "true", "queueId": "-1", "offset": "-1"})
        self.assertEqual(f.code, 0, f.remark)
        self.assertEqual(set(mq_table(f.body).values()), {200, 201, 202, 203})
        # A stale commit while the reset is pending is acknowledged and dropped.
        f = c.request(15, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "commitOffset": 100})
        self.assertEqual((f.code, f.remark), (0, "Offset has been previously reset"))
        self.assertEqual(query(c, GROUP, TOPIC, 0), 200)
        # A pull at the old position learns the new one (21); the commit it carries is dropped.
        pull = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "queueOffset": 100, "sysFlag": 1,
                "commitOffset": 100, "suspendTimeoutMillis": 0, "maxMsgNums": 32, "subscription": "*",
                "subVersion": 1}
        f = c.request(11, pull)
        self.assertEqual(f.code, 21, f.remark)
        self.assertEqual(f.ext["nextBeginOffset"], "200")
        self.assertEqual(query(c, GROUP, TOPIC, 0), 200)
        st, body = self.offsets_api(GROUP, TOPIC)
        self.assertTrue(body["queues"][0]["resetPending"])
        # A pull at the reset offset: the client has moved, the mark ends.
        f = c.request(11, dict(pull, queueOffset=200, commitOffset=200))
        self.assertEqual(f.code, 19, f.remark)
        self.assertFalse(self.offsets_api(GROUP, TOPIC)[1]["queues"][0]["resetPending"])
        commit(c, GROUP, TOPIC, [205])
        self.assertEqual(query(c, GROUP, TOPIC, 0), 205)
        # Not forced: a target above the committed offset keeps the committed one.
        f = c.request(222, {"topic": TOPIC, "group": GROUP, "timestamp": "-1", "isForce": "false"})
        self.assertEqual(mq_table(f.body)[(BROKER, 0, TOPIC)], 205)
        # 5.x single-queue form.
        f = c.request(222, {"topic": TOPIC, "group": GROUP, "timestamp": "0", "isForce": "true",
                            "queueId": "2", "offset": "7"})
        self.assertEqual(mq_table(f.body), {(BROKER, 2, TOPIC): 7})
        f = c.request(222, {"topic": "NoSuchTopic", "group": GROUP, "timestamp": "-1", "isForce": "true"})
        self.assertEqual(f.code, 17)

    def test_consume_stats(self):
        c = self.conn()
        self.seed(c)
        f = c.request(208, {"consumerGroup": GROUP})
        self.assertEqual(f.code, 0, f.remark)
        table = mq_table(f.body)
        self.assertEqual(len(table), 4)
        for q in range(4):
            row = table[(BROKER, q, TOPIC)]
            self.assertEqual((row["brokerOffset"], row["consumerOffset"]), (200 + q, 100 + q))
        f = c.request(208, {"consumerGroup": GROUP, "topic": "NoSuchTopic"})
        self.assertEqual((f.code, mq_table(f.body)), (0, {}))

    def test_running_info_forwarded(self):
        admin, client = self.conn(), self.conn()
        f = client.request(34, body=heartbeat_body("cid-1", {GROUP: [TOPIC]}))
        self.assertEqual(f.code, 0)
        ext = {"consumerGroup": GROUP, "clientId": "cid-1", "jstackEnable": "false"}
        op = admin.send(307, ext)
        req = client.recv_frame(3.0)
        while req is not None and req.code != 307:
            req = client.recv_frame(3.0)
        self.assertIsNotNone(req, "the client was not asked")
        self.assertEqual(req.ext, ext)
        body = b'{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"subscriptionSet":[],"mqTable":{}}'
        h = {"code": 0, "flag": 1, "language": "JAVA", "opaque": req.opaque, "version": 409, "remark": "ri"}
        from rmqclient import encode_header_json, frame
        client.send_raw(frame(encode_header_json(h), body))
        f = admin.wait_response(op, 5.0)
        self.assertEqual((f.code, f.remark, f.body), (0, "ri", body))
        # Not online.
        f = admin.request(307, dict(ext, clientId="nobody"))
        self.assertEqual((f.code, f.remark), (1, "The Consumer %s nobody not online" % GROUP))
        # The client goes away before answering: 207, not silence.
        op = admin.send(307, ext)
        self.assertIsNotNone(client.recv_frame(3.0))
        client.close()
        f = admin.wait_response(op, 5.0)
        self.assertEqual(f.code, 207, f)

    def test_topic_codes(self):
        c = self.conn()
        commit(c, GROUP, TOPIC, [5, 6])
        f = c.request(17, {"topic": "TNew", "defaultTopic": "TBW102", "readQueueNums": 3, "writeQueueNums": 3,
                           "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"})
        self.assertEqual(f.code, 0, f.remark)
        st, t = self.d.http("GET", "/api/topics/TNew")
        self.assertEqual(st, 200)
        f = c.request(17, {"topic": "TBW102", "defaultTopic": "TBW102", "readQueueNums": 3, "writeQueueNums": 3,
                           "perm": 6, "topicFilterType": "SINGLE_TAG", "order": "false"})
        self.assertEqual(f.code, 29)
        f = c.request(17, {"topic": "bad topic", "defaultTopic": "TBW102", "readQueueNums": 3,
                           "writeQueueNums": 3, "perm": 6, "topicFilterType": "SINGLE_TAG", "order": "false"})
        self.assertEqual(f.code, 29)
        f = c.request(206)
        self.assertEqual(f.code, 0)
        self.assertIn("TNew", json.loads(f.body)["topicList"])
        f = c.request(202, {"topic": TOPIC})
        stats = mq_table(f.body)
        self.assertEqual(len(stats), 4)
        self.assertEqual(stats[(BROKER, 1, TOPIC)]["maxOffset"], 6)
        self.assertEqual(c.request(202, {"topic": "Nope"}).code, 17)
        f = c.request(351, {"topic": "TNew", "lo": "true"})
        cfg = json.loads(f.body)
        self.assertEqual((cfg["readQueueNums"], cfg["writeQueueNums"], cfg["perm"]), (3, 3, 6))
        self.assertEqual(c.request(351, {"topic": "Nope"}).code, 17)
        f = c.request(28)
        table = json.loads(f.body)["table"]
        self.assertTrue(all(isinstance(v, str) for v in table.values()))
        self.assertIn("putTps", table)
        # 215 drops the topic and its offsets; unknown topics and 216 / 102 answer 0.
        self.assertEqual(c.request(215, {"topic": TOPIC}).code, 0)
        self.assertEqual(self.d.http("GET", "/api/topics/%s" % TOPIC)[0], 404)
        self.assertEqual(c.request(14, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 1,
                                        "setZeroIfNotFound": "false"}).code, 22)
        self.assertEqual(c.request(215, {"topic": "NeverWas"}).code, 0)
        self.assertEqual(c.request(216, {"topic": TOPIC, "clusterName": "DefaultCluster"}).code, 0)
        self.assertEqual(c.request(102, {"namespace": "ORDER_TOPIC_CONFIG", "key": TOPIC}).code, 0)

    def test_offsets_api_and_metric(self):
        c = self.conn()
        c.request(34, body=heartbeat_body("cid-9", {GROUP: [TOPIC]}))
        commit(c, GROUP, TOPIC, [10, 11])
        st, body = self.offsets_api(GROUP)
        self.assertEqual(st, 200, body)
        self.assertEqual([(r["topic"], r["queueId"], r["committedOffset"]) for r in body["queues"]],
                         [(TOPIC, 0, 10), (TOPIC, 1, 11)])
        r = body["queues"][0]
        self.assertEqual((r["lastCommitter"], r["reportedHolder"], r["expectedOwners"]), ("cid-9", "cid-9", ["cid-9"]))
        self.assertIsInstance(r["lastCommitMs"], int)
        self.assertEqual(self.offsets_api(GROUP, "Other")[1]["queues"], [])
        self.assertEqual(self.offsets_api("NoSuchGroup")[0], 404)
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.d.http_port, timeout=5) as resp:
            text = resp.read().decode()
        self.assertIn('rmqcoord_consumer_offset{group="%s",topic="%s",broker="%s",queue="1"} 11'
                      % (GROUP, TOPIC, BROKER), text)

    def test_http_reset_and_clone_with_dry_run(self):
        c = self.conn()
        self.seed(c)
        path = "/api/groups/%s/offsets/reset" % GROUP
        st, body = self.d.http("POST", path, {"topic": TOPIC, "dryRun": True})
        self.assertEqual(st, 200, body)
        self.assertEqual([(q["queueId"], q["from"], q["to"]) for q in body["queues"]],
                         [(q, 100 + q, 200 + q) for q in range(4)])
        self.assertEqual(query(c, GROUP, TOPIC, 0), 100)  # a dry run changes nothing
        st, body = self.d.http("POST", path, {"topic": TOPIC, "queueId": 1, "offset": 50})
        self.assertEqual((st, [(q["queueId"], q["to"]) for q in body["queues"]]), (200, [(1, 50)]))
        self.assertEqual(query(c, GROUP, TOPIC, 1), 50)
        self.assertTrue(self.offsets_api(GROUP, TOPIC)[1]["queues"][1]["resetPending"])
        self.assertEqual(self.d.http("POST", path, {"topic": "Nope"})[0], 404)
        self.assertEqual(self.d.http("POST", path, {"topic": TOPIC, "force": "yes"})[0], 400)
        self.assertEqual(self.d.http("POST", path, {})[0], 400)
        # Bounds: a negative queue id used to reset every queue, one past the
        # topic answered 200 and did nothing, 2^63-1 was accepted.
        for bad in ({"queueId": -5, "offset": 1}, {"queueId": 4, "offset": 1}, {"queueId": 0, "offset": -2},
                    {"queueId": 0, "offset": 2 ** 63 - 1}, {"timestamp": -7}):
            st, body = self.d.http("POST", path, dict(bad, topic=TOPIC))
            self.assertEqual(st, 400, (bad, body))
            self.assertIn("error", body)
        self.assertEqual([query(c, GROUP, TOPIC, q) for q in range(4)], [100, 50, 102, 103], "nothing moved")
        # Clone OTHER's offsets into a new group.
        clone = "/api/groups/GC/offsets/clone"
        st, body = self.d.http("POST", clone, {"from": OTHER, "topic": TOPIC, "dryRun": True})
        self.assertEqual(st, 200, body)
        self.assertEqual([(q["queueId"], q["from"], q["to"]) for q in body["queues"]],
                         [(q, None, 200 + q) for q in range(4)])
        self.assertEqual(self.offsets_api("GC")[0], 404)
        st, body = self.d.http("POST", clone, {"from": OTHER})
        self.assertEqual(st, 200, body)
        self.assertEqual([query(c, "GC", TOPIC, q) for q in range(4)], [200, 201, 202, 203])
        self.assertEqual(self.d.http("POST", clone, {"from": "GC"})[0], 400)


def wait_until(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


class NameServerRoleTest(unittest.TestCase):
    """206 and 216 on --role namesrv (no longer refused as broker codes), and
    a topic made by 17 on a broker reaching the name server."""

    def test_topic_list_and_delete_on_namesrv(self):
        ns = Daemon("--role", "namesrv")
        br = None
        try:
            br = Daemon("--role", "broker", "--namesrv", "127.0.0.1:%d" % ns.port, "--topic", "TN:2")
            c = ns.connect()

            def topics():
                f = c.request(206)
                return json.loads(f.body)["topicList"] if f and f.code == 0 else []

            self.assertTrue(wait_until(lambda: "TN" in topics()), ns.logtext())
            b = br.connect()
            f = b.request(17, {"topic": "TMade", "defaultTopic": "TBW102", "readQueueNums": 2,
                               "writeQueueNums": 2, "perm": 6, "topicFilterType": "SINGLE_TAG", "order": "false"})
            self.assertEqual(f.code, 0, f.remark)
            self.assertTrue(wait_until(lambda: "TMade" in topics()), "the broker did not re-register")
            self.assertEqual(c.request(216, {"topic": "TN", "clusterName": "OtherCluster"}).code, 0)
            self.assertIn("TN", topics())  # another cluster's brokers only
            self.assertEqual(c.request(216, {"topic": "TN"}).code, 0)
            self.assertEqual(c.request(105, {"topic": "TN"}).code, 17)
            self.assertEqual(c.request(102, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TN"}).code, 0)
            # A broker code on the name server is still refused.
            self.assertEqual(c.request(208, {"consumerGroup": "G"}).code, 3)
            c.close()
            b.close()
        finally:
            if br:
                self.assertEqual(br.stop(), 0)
            self.assertEqual(ns.stop(), 0)


class SubscriptionGroupStoreTest(unittest.TestCase):
    @contextlib.contextmanager
    def running(self, store=None):
        """A daemon on store (a new one: None) and a connection to it; the daemon must stop cleanly."""
        d = Daemon(store=store)
        try:
            c = d.connect()
            yield d, c
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)

    def test_configs_survive_restart(self):
        with self.running() as (d, c):
            store = d.store
            cfg = {"groupName": "GNew", "consumeBroadcastEnable": False, "retryMaxTimes": 3, "x5": {"a": 1}}
            self.assertEqual(c.request(200, body=cfg).code, 0)
            c.request(34, body=heartbeat_body("cid", {"GLive": ["T"]}))
            f = c.request(201)
            table = json.loads(f.body)["subscriptionGroupTable"]
            self.assertEqual(table["GNew"], cfg)  # kept whole, unknown fields too
            self.assertTrue(table["GLive"]["consumeEnable"])  # the default for a heartbeat-only group
            commit(c, "GNew", "T", [4])
        with self.running(store) as (_, c):
            table = json.loads(c.request(201).body)["subscriptionGroupTable"]
            self.assertEqual(table["GNew"]["retryMaxTimes"], 3)
            self.assertEqual(c.request(207, {"groupName": "GNew", "cleanOffset": "true"}).code, 0)
            self.assertEqual(c.request(207, {"groupName": "NeverWas", "removeOffset": "false"}).code, 0)
            f = c.request(201)  # nothing left: "No subscription group in this broker"
            self.assertEqual((f.code, f.remark), (1, "No subscription group in this broker"))
            self.assertEqual(c.request(14, {"consumerGroup": "GNew", "topic": "T", "queueId": 0,
                                            "setZeroIfNotFound": "false"}).code, 22)
        with self.running(store) as (_, c):
            f = c.request(201)
            self.assertTrue(f.code == 1 or "GNew" not in json.loads(f.body)["subscriptionGroupTable"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
