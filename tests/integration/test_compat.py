"""Integration tests of the rows of README's "Where rmqcoord differs from the
RocketMQ broker": rmqcoord's own answer by default, the broker's under
--compat broker (5.x) and --compat broker-4.9, and a flag overriding
--compat. tests/conformance/run.sh checks the same against real brokers;
this runs without Java. One daemon per class (names are unique per test)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, heartbeat_body  # noqa: E402

HB, UNREG, LIST, ROUTE, NOTIFY, KV = 34, 35, 38, 105, 40, 101
QUERY_OFF, UPDATE_OFF, MAX_OFF, SEARCH_OFF, PULL = 14, 15, 30, 29, 11
UNLOCK, CHECK_CONFIG, SEND_BACK, CLUSTER, ASSIGNMENT = 42, 46, 36, 106, 400
TOPICS = ("--topic", "TopicA:4", "--lock-expiry-ms", "4000")


def pull_ext(group, topic, qid, offset=0, sysflag=0, suspend=1000, sub_version=1):
    return {"consumerGroup": group, "topic": topic, "queueId": qid, "queueOffset": offset, "maxMsgNums": 32,
            "sysFlag": sysflag, "commitOffset": 0, "suspendTimeoutMillis": suspend, "subVersion": sub_version,
            "bname": "broker-a"}


def off_ext(group, qid, **more):
    e = {"consumerGroup": group, "topic": "TopicA", "queueId": qid}
    e.update(more)
    return e


def sql92_body(group):
    return {"clientId": "c", "group": group,
            "subscriptionData": {"classFilterMode": False, "codeSet": [], "expressionType": "SQL92",
                                 "subString": "a > 1", "subVersion": 1, "tagsSet": [], "topic": "TopicA"}}


class CompatCase(unittest.TestCase):
    extra = ()

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(*(TOPICS + cls.extra))

    @classmethod
    def tearDownClass(cls):
        alive = cls.d.alive()
        rc = cls.d.stop()
        if not alive or rc not in (0, None):
            print(cls.d.logtext(), file=sys.stderr)
        assert alive and rc == 0, "daemon died or did not shut down cleanly"

    def setUp(self):
        self.conns = []
        self.g = "G_" + self._testMethodName

    def tearDown(self):
        for c in self.conns:
            c.close()

    def conn(self):
        c = self.d.connect()
        self.conns.append(c)
        return c

    def held_pull_across_join(self, suspend_ms):
        """A pull of cA held up to suspend_ms while cB joins the group: how long
        after it was sent the reply (no messages, 19) came (s)."""
        a, b = self.conn(), self.conn()
        self.join(a, "cA")
        t0 = time.monotonic()
        o = a.send(PULL, pull_ext(self.g, "TopicA", 0, sysflag=2, suspend=suspend_ms))
        time.sleep(0.2)
        self.join(b, "cB")
        r = a.wait_response(o, 5)
        self.assertEqual(r.code, 19)
        return time.monotonic() - t0

    def join(self, c, cid, groups=None, **kw):
        r = c.request(HB, body=heartbeat_body(cid, groups if groups is not None else {self.g: ["TopicA"]}, **kw))
        self.assertIsNotNone(r)
        self.assertEqual(r.code, 0, r)
        return r

    def noop_unregister_notifies(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA")
        a.drain(0.3)
        r = b.request(UNREG, {"clientID": "cB", "consumerGroup": self.g})
        self.assertEqual(r.code, 0, r)
        return a.wait_notify(self.g, timeout=0.6) is not None


class Defaults(CompatCase):
    """rmqcoord's own behaviour: each assertion is one README row's "rmqcoord" column."""

    def test_noop_unregister_no_notify(self):
        self.assertFalse(self.noop_unregister_notifies())

    def test_sql92_accepted(self):
        self.assertEqual(self.conn().request(CHECK_CONFIG, body=sql92_body(self.g)).code, 0)

    def test_queue_end_is_highest_commit(self):
        c = self.conn()
        self.assertEqual(c.request(UPDATE_OFF, off_ext(self.g, 3, commitOffset=41)).code, 0)
        self.assertEqual(c.request(MAX_OFF, {"topic": "TopicA", "queueId": 3}).ext["offset"], "41")
        r = c.request(SEARCH_OFF, {"topic": "TopicA", "queueId": 3, "timestamp": 1})
        self.assertEqual(r.ext["offset"], "41")

    def test_unknown_topic_route_created(self):
        r = self.conn().request(ROUTE, {"topic": "Nope_" + self.g})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["queueDatas"][0]["readQueueNums"], 8)
        self.assertNotIn(b"enableActingMaster", r.body)
        self.assertEqual(r.json()["queueDatas"][0]["perm"], 6)

    def test_pulls_not_checked(self):
        c = self.conn()
        r = c.request(PULL, pull_ext(self.g, "TopicA", 0), timeout=5)  # before any heartbeat
        self.assertEqual(r.code, 19, r)
        self.join(c, "cA")
        r = c.request(PULL, pull_ext(self.g, "TopicA", 1, offset=5), timeout=5)  # past the end
        self.assertEqual((r.code, r.ext["nextBeginOffset"]), (19, "5"))
        self.assertNotIn("groupSysFlag", r.ext)
        r = c.request(PULL, pull_ext(self.g, "TopicA", 0, sub_version=99), timeout=5)  # newer subVersion
        self.assertEqual(r.code, 19, r)

    def test_held_pull_released_on_change(self):
        self.assertLess(self.held_pull_across_join(3000), 2.0)

    def test_heartbeat_fields_and_reply_encoding(self):
        c = self.conn()
        r = c.request(HB, body=heartbeat_body("cA", {}, producers=["P_" + self.g]), serialize=1)
        self.assertEqual(r.serialize, 1, "the reply uses the request's encoding")
        self.assertEqual(r.ext, {"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "false"})

    def test_query_nothing_committed(self):
        c = self.conn()
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 0)).ext.get("offset"), "0")
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 0, setZeroIfNotFound="false")).code, 22)
        # fixed in every mode: a stored -1 is "nothing committed"
        self.assertEqual(c.request(UPDATE_OFF, off_ext(self.g, 1, commitOffset=-1)).code, 0)
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 1)).ext.get("offset"), "0")

    def test_commit_of_unknown_group_stored(self):
        c = self.conn()
        self.assertEqual(c.request(UPDATE_OFF, off_ext(self.g, 2, commitOffset=7)).code, 0)
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 2)).ext.get("offset"), "7")

    def test_bad_input_named(self):
        c = self.conn()
        r = c.request(ROUTE, {})
        self.assertEqual(r.code, 1)
        self.assertIn("topic", r.remark)
        r = c.request(UNLOCK, body={"consumerGroup": self.g})
        self.assertEqual(r.code, 1)
        self.assertIn("clientId", r.remark)
        r = c.request(HB, body={"consumerDataSet": [{"groupName": self.g}]})
        self.assertEqual(r.code, 1)
        self.assertIn("clientID", r.remark)

    def test_send_back_accepted_kv_not_found_assignment_unsupported(self):
        c = self.conn()
        self.assertEqual(c.request(SEND_BACK, {"offset": 123, "group": self.g}).code, 0)
        r = c.request(KV, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"})
        self.assertEqual(r.code, 22, r)
        self.assertIn("No config item", r.remark)
        r = c.request(ASSIGNMENT, body={"clientId": "c", "consumerGroup": self.g, "topic": "TopicA"})
        self.assertEqual(r.code, 3)

    def test_broadcast_not_notified(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", model="BROADCASTING")
        self.join(b, "cB", model="BROADCASTING")
        self.assertIsNone(a.wait_notify(self.g, timeout=0.5))


class Broker5(CompatCase):
    """--compat broker: each assertion is one README row's "RocketMQ broker" column (5.x)."""
    extra = ("--compat", "broker")

    def test_noop_unregister_notifies(self):
        self.assertTrue(self.noop_unregister_notifies())

    def test_sql92_refused(self):
        r = self.conn().request(CHECK_CONFIG, body=sql92_body(self.g))
        self.assertEqual(r.code, 1)
        self.assertIn("SQL92", r.remark)

    def test_queue_end_zero_and_offset_moved(self):
        c = self.conn()
        self.join(c, "cA")
        self.assertEqual(c.request(UPDATE_OFF, off_ext(self.g, 3, commitOffset=41)).code, 0)
        self.assertEqual(c.request(MAX_OFF, {"topic": "TopicA", "queueId": 3}).ext["offset"], "0")
        r = c.request(PULL, pull_ext(self.g, "TopicA", 1, offset=5), timeout=5)
        self.assertEqual((r.code, r.ext["nextBeginOffset"], r.ext["maxOffset"]), (21, "0", "0"))
        self.assertEqual((r.ext["groupSysFlag"], r.ext["topicSysFlag"]), ("0", "0"))

    def test_pull_checks(self):
        c = self.conn()
        self.assertEqual(c.request(PULL, pull_ext(self.g, "TopicA", 0), timeout=5).code, 24)
        self.join(c, "cA")
        self.assertEqual(c.request(PULL, pull_ext(self.g, "TopicA", 9), timeout=5).code, 29)
        self.assertEqual(c.request(PULL, pull_ext(self.g, "TopicA", 0, sub_version=99), timeout=5).code, 25)

    def test_held_pull_kept_on_change(self):
        self.assertGreaterEqual(self.held_pull_across_join(2000), 1.8)

    def test_routes(self):
        c = self.conn()
        r = c.request(ROUTE, {"topic": "Nope_" + self.g})
        self.assertEqual(r.code, 17)
        r = c.request(ROUTE, {"topic": "TopicA"})
        self.assertIn(b'"cluster":"DefaultCluster","enableActingMaster":false}', r.body)
        self.assertIn(b'"enableActingMaster":false', c.request(CLUSTER).body)
        r = c.request(ROUTE, {"topic": "TBW102"})
        self.assertEqual((r.json()["queueDatas"][0]["perm"], r.json()["queueDatas"][0]["readQueueNums"]), (7, 8))
        r = c.request(ROUTE, {})
        self.assertEqual(r.code, 17)

    def test_json_replies_and_sub_change(self):
        c = self.conn()
        r = c.request(HB, body=heartbeat_body("cA", {}, producers=["P_" + self.g]), serialize=1)
        self.assertEqual(r.serialize, 0, "a 5.x broker answers in JSON")
        self.assertEqual(r.ext["IS_SUB_CHANGE"], "true")

    def test_offsets(self):
        c = self.conn()
        r = c.request(UPDATE_OFF, off_ext(self.g, 2, commitOffset=7))
        self.assertEqual(r.code, 26)
        self.assertIn("not exist", r.remark)
        self.join(c, "cA")
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 0, setZeroIfNotFound="true")).code, 22)
        self.assertEqual(c.request(UPDATE_OFF, off_ext(self.g, 1, commitOffset=-1)).code, 0)
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 1)).code, 22)
        self.assertEqual(c.request(UPDATE_OFF, off_ext(self.g, 2, commitOffset=7)).code, 0)
        self.assertEqual(c.request(QUERY_OFF, off_ext(self.g, 2)).ext.get("offset"), "7")

    def test_query_assignment(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA")
        self.join(b, "cB")
        body = {"clientId": "cA", "consumerGroup": self.g, "messageModel": "CLUSTERING", "strategyName": "AVG",
                "topic": "TopicA"}
        r = a.request(ASSIGNMENT, body=body)
        self.assertEqual(r.code, 0, r)
        got = sorted(x["messageQueue"]["queueId"] for x in r.json()["messageQueueAssignments"])
        self.assertEqual(got, [0, 1])
        self.assertEqual({x["mode"] for x in r.json()["messageQueueAssignments"]}, {"PULL"})
        body["messageModel"] = "BROADCASTING"
        self.assertEqual(len(a.request(ASSIGNMENT, body=body).json()["messageQueueAssignments"]), 4)

    def test_unlock_without_fields_and_send_back(self):
        c = self.conn()
        self.assertEqual(c.request(UNLOCK, body={"consumerGroup": self.g}).code, 0)
        r = c.request(SEND_BACK, {"offset": 123, "group": self.g})
        self.assertEqual(r.code, 1)
        self.assertIn("look message by offset failed, 123", r.remark)


class Broker49(CompatCase):
    """--compat broker-4.9: the rows where 4.9 answers otherwise than 5.x."""
    extra = ("--compat", "broker-4.9")

    def test_heartbeat_reply_without_fields(self):
        c = self.conn()
        r = c.request(HB, body=heartbeat_body("cA", {self.g: ["TopicA"]}), serialize=1)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.ext, {})
        self.assertEqual(r.serialize, 1, "4.9 answers in the request's encoding")

    def test_v2_fields_ignored(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", v2=(1111, False))
        self.join(b, "cB", v2=(1111, False))
        a.drain(0.3)
        self.join(a, "cA", {self.g: []}, v2=(1111, True))
        self.assertIsNotNone(b.wait_notify(self.g, timeout=1.0), "withoutSub is a v1 heartbeat with no topics")

    def test_query_offsets(self):
        c = self.conn()
        r = c.request(QUERY_OFF, off_ext(self.g, 0, setZeroIfNotFound="false"))
        self.assertEqual((r.code, r.ext.get("offset")), (0, "0"))

    def test_broadcast_notified(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", model="BROADCASTING")
        a.drain(0.3)
        self.join(b, "cB", model="BROADCASTING")
        self.assertIsNotNone(a.wait_notify(self.g, timeout=1.0))

    def test_bad_queue_id_and_plain_pull_reply(self):
        c = self.conn()
        self.join(c, "cA")
        self.assertEqual(c.request(PULL, pull_ext(self.g, "TopicA", 9), timeout=5).code, 1)
        r = c.request(PULL, pull_ext(self.g, "TopicA", 0), timeout=5)
        self.assertEqual(r.code, 19)
        self.assertNotIn("groupSysFlag", r.ext)
        self.assertNotIn(b"enableActingMaster", c.request(ROUTE, {"topic": "TopicA"}).body)


class NameServer49(CompatCase):
    """--role namesrv --compat broker-4.9: a code the 4.9 name server does not serve gets no reply
    (in the one-port mode it cannot be told from a broker code, and is answered 3)."""
    extra = ("--role", "namesrv", "--compat", "broker-4.9")

    def test_unknown_code_unanswered(self):
        c = self.conn()
        self.assertIsNone(c.request(9999, {}, timeout=1.0))
        self.assertIsNone(c.request(UPDATE_OFF, off_ext(self.g, 0, commitOffset=1), timeout=1.0))
        self.assertEqual(c.request(KV, {"namespace": "N", "key": "K"}).code, 22, "the connection is still served")

    def test_one_port_mode_answers(self):
        d = Daemon("--compat", "broker-4.9")
        try:
            c = d.connect()
            self.assertEqual(c.request(9999, {}).code, 3)
            c.close()
        finally:
            d.stop()


class Override(CompatCase):
    """A flag given with --compat overrides it, whatever the order."""
    extra = ("--auto-create-queues", "4", "--compat", "broker", "--release-pulls-on-change", "on")

    def test_flag_overrides_compat(self):
        r = self.conn().request(ROUTE, {"topic": "Nope_" + self.g})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["queueDatas"][0]["readQueueNums"], 4)
        self.assertIn(b"enableActingMaster", r.body)

    def test_bad_compat_value_refused(self):
        d = None
        with self.assertRaises(RuntimeError):
            d = Daemon("--compat", "broker-3")
        if d:
            d.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
