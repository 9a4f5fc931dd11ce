"""Integration tests: the real rmqcoord daemon on loopback, driven over TCP
and HTTP the way RocketMQ clients and operators drive it."""
import json
import os
import signal
import socket
import sqlite3
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import (Conn, Daemon, DaemonCase, encode_header_json, frame, heartbeat_body,  # noqa: E402,F401
                       run_tests, signed)

HB, UNREG, LIST, ROUTE, NOTIFY = 34, 35, 38, 105, 40
QUERY_OFF, UPDATE_OFF, MAX_OFF, PULL, LOCK, UNLOCK = 14, 15, 30, 11, 41, 42
DATA = os.environ.get("RMQ_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))


def consumer_list(conn, group):
    r = conn.request(LIST, {"consumerGroup": group})
    if r is None or r.code != 0:
        return r
    return sorted(r.json()["consumerIdList"])


class DaemonTest(DaemonCase):
    extra = ("--channel-expiry-ms", "1500", "--expiry-scan-ms", "100", "--pull-hold-max-ms", "15000")

    def conn(self):
        c = self.d.connect()
        self.conns.append(c)
        return c

    def join(self, conn, cid, groups, **kw):
        r = conn.request(HB, body=heartbeat_body(cid, groups, **kw))
        self.assertIsNotNone(r, "no heartbeat reply")
        self.assertEqual(r.code, 0, r)
        return r


class Membership(DaemonTest):
    def test_second_join_notifies_first_and_list_has_both(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", {"G": ["T"]})
        self.assertIsNotNone(a.wait_notify("G"), "the joining channel is notified too")
        t0 = time.monotonic()
        self.join(b, "cB", {"G": ["T"]})
        n = a.wait_notify("G", timeout=1.0)
        self.assertIsNotNone(n, "first connection not notified of the second join")
        self.assertLess(time.monotonic() - t0, 0.5)
        self.assertEqual(n.flag & 2, 2, "NOTIFY must be oneway")
        self.assertEqual(n.ext, {"consumerGroup": "G"})
        self.assertEqual(consumer_list(a, "G"), ["cA", "cB"])

    def test_reheartbeat_is_not_a_change(self):
        a = self.conn()
        self.join(a, "cA", {"G": ["T"]})
        a.drain(0.2)
        self.join(a, "cA", {"G": ["T"]})
        self.join(a, "cA", {"G": [("T", "*", 99)]})  # newer subVersion alone: no change
        self.assertEqual([f for f in a.drain(0.3) if f.code == NOTIFY], [])

    def test_subscription_added_and_removed_notify(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", {"G": ["T"]})
        self.join(b, "cB", {"G": ["T"]})
        a.drain(0.2)
        self.join(b, "cB", {"G": ["T", "T2"]})
        self.assertIsNotNone(a.wait_notify("G"), "topic added must notify")
        self.join(b, "cB", {"G": ["T"]})
        self.assertIsNotNone(a.wait_notify("G"), "topic removed must notify")
        st, g = self.d.http("GET", "/api/groups/G")
        self.assertEqual(st, 200)
        self.assertEqual([s["topic"] for s in g["subscriptions"]], ["T"])

    def test_close_notifies_and_removes(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", {"G": ["T"]})
        self.join(b, "cB", {"G": ["T"]})
        a.drain(0.2)
        b.close()
        self.assertIsNotNone(a.wait_notify("G"), "close must notify the others")
        self.assertEqual(consumer_list(a, "G"), ["cA"])

    def test_unregister_keeps_socket_and_notifies(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", {"G": ["T"]})
        self.join(b, "cB", {"G": ["T"]}, producers=["CLIENT_INNER_PRODUCER"])
        a.drain(0.2)
        r = b.request(UNREG, {"clientID": "cB", "consumerGroup": "G"})
        self.assertEqual(r.code, 0)
        self.assertIsNotNone(a.wait_notify("G"))
        self.assertEqual(consumer_list(a, "G"), ["cA"])
        # the socket stays usable, and a producer-only heartbeat does not rejoin
        self.assertEqual(b.request(HB, body=heartbeat_body("cB", {}, producers=["CLIENT_INNER_PRODUCER"])).code, 0)
        self.assertEqual(consumer_list(b, "G"), ["cA"])

    def test_two_client_ids_on_one_connection_and_duplicates(self):
        a, b = self.conn(), self.conn()
        self.join(a, "same", {"G": ["T"]})
        self.join(b, "same", {"G": ["T"]})
        r = a.request(LIST, {"consumerGroup": "G"})
        self.assertEqual(r.json()["consumerIdList"], ["same", "same"], "one id per channel, duplicates kept")
        st, g = self.d.http("GET", "/api/groups/G")
        self.assertEqual(g["duplicateClientIds"], ["same"])

    def test_unknown_group_list_is_an_error_with_remark(self):
        a = self.conn()
        r = a.request(LIST, {"consumerGroup": "nobody"})
        self.assertEqual(r.code, 1)
        self.assertIn("no consumer for this group, nobody", r.remark)

    def test_broadcast_group_is_not_notified(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", {"B": ["T"]}, model="BROADCASTING")
        self.join(b, "cB", {"B": ["T"]}, model="BROADCASTING")
        self.assertEqual([f for f in a.drain(0.3) if f.code == NOTIFY], [])
        self.assertEqual(consumer_list(a, "B"), ["cA", "cB"])

    def test_heartbeat_v2_without_sub_is_not_unsubscribe(self):
        a, b = self.conn(), self.conn()
        self.join(a, "cA", {"GV": ["T"]})
        r = self.join(b, "cB", {"GV": ["T"]}, v2=(550966797, False))
        self.assertEqual(r.ext.get("IS_SUPPORT_HEART_BEAT_V2"), "true")
        self.assertEqual(r.ext.get("IS_SUB_CHANGE"), "false")
        a.drain(0.2)
        r = self.join(b, "cB", {"GV": []}, v2=(550966797, True))
        self.assertEqual(r.ext.get("IS_SUB_CHANGE"), "false")
        self.assertEqual([f for f in a.drain(0.3) if f.code == NOTIFY], [])
        st, g = self.d.http("GET", "/api/groups/GV")
        self.assertEqual([s["topic"] for s in g["subscriptions"]], ["T"])
        r = self.join(b, "cB", {"GV": []}, v2=(12345, True))
        self.assertEqual(r.ext.get("IS_SUB_CHANGE"), "true", "a new fingerprint asks for the full heartbeat")


def member_and_silent_member(case):
    """Connections a and c of cA and cC, both joined to G (a's notices so far
    drained); c stays silent from here on."""
    a, c = case.conn(), case.conn()
    case.join(a, "cA", {"G": ["T"]})
    case.join(c, "cC", {"G": ["T"]})
    a.drain(0.1)
    return a, c


class Expiry(DaemonTest):
    def test_silent_member_expires_is_closed_and_others_notified(self):
        a, c = member_and_silent_member(self)
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:  # keep A alive, let C go silent
            self.join(a, "cA", {"G": ["T"]})
            if consumer_list(a, "G") == ["cA"]:
                break
            time.sleep(0.2)
        self.assertEqual(consumer_list(a, "G"), ["cA"], "silent member not expired")
        self.assertIsNotNone(a.wait_notify("G", timeout=1.0), "rmqcoord notifies on expiry by default")
        self.assertTrue(c.is_closed_by_peer(2.0), "expired channel must be closed")
        st, ev = self.d.http("GET", "/api/events?group=G")
        self.assertIn("expire", [e["kind"] for e in ev["events"]])


class ExpirySilent(DaemonTest):
    extra = DaemonTest.extra + ("--notify-on-expiry", "off")

    def test_broker_behaviour_switch(self):
        a, c = member_and_silent_member(self)
        deadline = time.monotonic() + 4
        notes = []
        while time.monotonic() < deadline and consumer_list(a, "G") != ["cA"]:
            self.join(a, "cA", {"G": ["T"]})
            notes += [f for f in a.drain(0.2) if f.code == NOTIFY]
        self.assertEqual(consumer_list(a, "G"), ["cA"])
        notes += [f for f in a.drain(0.3) if f.code == NOTIFY]
        self.assertEqual(notes, [], "--notify-on-expiry off must stay silent like the broker")


class Protocol(DaemonTest):
    def test_route_quoting_by_version_and_retry_topic(self):
        a = self.conn()
        old = a.request(ROUTE, {"topic": "TopicTest"}, version=121)
        self.assertEqual(old.code, 0)
        self.assertIn(b'"brokerAddrs":{0:"127.0.0.1:%d"}' % self.d.port, old.body)
        new = a.request(ROUTE, {"topic": "TopicTest"}, version=409)
        route = json.loads(new.body)
        self.assertEqual(route["queueDatas"][0]["readQueueNums"], 8)
        self.assertEqual(route["brokerDatas"][0]["brokerAddrs"], {"0": "127.0.0.1:%d" % self.d.port})
        self.join(a, "cA", {"GR": ["TopicTest"]})
        r = json.loads(a.request(ROUTE, {"topic": "%RETRY%GR"}).body)
        self.assertEqual(r["queueDatas"][0]["readQueueNums"], 1)

    def test_cluster_info_in_the_single_process_role(self):
        st, _ = self.d.http("PUT", "/api/topics/R", {"brokers": [{"brokerName": "roomB@broker-b", "readQueueNums": 2}]})
        self.assertEqual(st, 200)
        r = self.conn().request(106, {})
        self.assertEqual(r.code, 0)
        info = json.loads(r.body.replace(b"{0:", b'{"0":'))
        self.assertEqual(sorted(info["brokerAddrTable"]), ["broker-a", "roomB@broker-b"])
        self.assertEqual(info["clusterAddrTable"], {"DefaultCluster": ["broker-a", "roomB@broker-b"]})
        self.assertEqual(info["brokerAddrTable"]["broker-a"]["brokerAddrs"], {"0": "127.0.0.1:%d" % self.d.port})

    def test_rocketmq_binary_request_gets_binary_reply(self):
        a = self.conn()
        r = a.request(ROUTE, {"topic": "T"}, serialize=1)
        self.assertEqual(r.serialize, 1)
        self.assertEqual(r.code, 0)
        self.assertEqual(json.loads(r.body)["queueDatas"][0]["brokerName"], "broker-a")

    def test_numeric_extfields_like_ali_ons(self):
        a = self.conn()
        self.join(a, "cA", {"G": ["T"]})
        a.send(UPDATE_OFF, raw_ext={"topic": "T", "consumerGroup": "G", "queueId": 3, "commitOffset": 42})
        r = a.request(QUERY_OFF, raw_ext={"topic": "T", "consumerGroup": "G", "queueId": 3})
        self.assertEqual((r.code, r.ext.get("offset")), (0, "42"))
        for v in r.ext.values():
            self.assertIsInstance(v, str)

    def test_offsets_query_defaults(self):
        a = self.conn()
        r = a.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0})
        self.assertEqual((r.code, r.ext.get("offset")), (0, "0"))
        r = a.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0, "setZeroIfNotFound": "false"})
        self.assertEqual(r.code, 22)
        a.send(UPDATE_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0, "commitOffset": 7}, flag=2)
        r = a.request(MAX_OFF, {"topic": "T", "queueId": 0})
        self.assertEqual(r.ext.get("offset"), "7")

    def test_oneway_is_never_answered(self):
        a = self.conn()
        a.send(9999, {}, flag=2)
        a.send(UPDATE_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 0, "commitOffset": 1}, flag=2)
        r = a.request(9998, {})
        self.assertEqual(r.code, 3)
        self.assertIn("9998", r.remark)
        self.assertEqual(a.inbox, [])
        self.assertEqual(a.rbuf, b"", "nothing else (no reply to the oneway requests) arrived")
        self.assertEqual(a.responses, {})

    def test_pull_is_held_then_not_found(self):
        a = self.conn()
        self.join(a, "cA", {"G": ["T"]})
        a.request(ROUTE, {"topic": "T"})
        t0 = time.monotonic()
        r = a.request(PULL, {"consumerGroup": "G", "topic": "T", "queueId": 1, "queueOffset": 5, "sysFlag": 2,
                             "commitOffset": 0, "suspendTimeoutMillis": 400, "maxMsgNums": 32, "subVersion": 1},
                      timeout=5)
        held = time.monotonic() - t0
        self.assertEqual(r.code, 19)
        self.assertGreaterEqual(held, 0.35)
        self.assertEqual({k: r.ext[k] for k in ("nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId")},
                         {"nextBeginOffset": "5", "minOffset": "0", "maxOffset": "5", "suggestWhichBrokerId": "0"})

    def test_pull_commit_offset_is_stored(self):
        a = self.conn()
        self.join(a, "cA", {"G": ["T"]})
        a.request(ROUTE, {"topic": "T"})
        r = a.request(PULL, {"consumerGroup": "G", "topic": "T", "queueId": 2, "queueOffset": 9, "sysFlag": 1,
                             "commitOffset": 9, "suspendTimeoutMillis": 15000})
        self.assertEqual(r.code, 19)
        r = a.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G", "queueId": 2})
        self.assertEqual(r.ext.get("offset"), "9")

    def test_locks(self):
        a = self.conn()
        mq = [{"brokerName": "broker-a", "queueId": 0, "topic": "T"}, {"brokerName": "broker-a", "queueId": 1, "topic": "T"}]
        r = a.request(LOCK, body={"clientId": "c1", "consumerGroup": "G", "mqSet": mq})
        self.assertEqual(len(r.json()["lockOKMQSet"]), 2)
        r = a.request(LOCK, body={"clientId": "c2", "consumerGroup": "G", "mqSet": mq})
        self.assertEqual(r.json()["lockOKMQSet"], [])
        self.assertEqual(a.request(UNLOCK, body={"clientId": "c1", "consumerGroup": "G", "mqSet": mq[:1]}).code, 0)
        r = a.request(LOCK, body={"clientId": "c2", "consumerGroup": "G", "mqSet": mq})
        self.assertEqual([m["queueId"] for m in r.json()["lockOKMQSet"]], [0])

    def test_captured_java_frames_are_answered(self):
        a = self.conn()
        seen = 0
        for name in ("java-json.jsonl", "java-rocketmq-serialize.jsonl", "java-5.3.3.jsonl"):
            with open(os.path.join(DATA, "captures", name)) as f:
                for line in f:
                    cap = json.loads(line)
                    if "rawHex" not in cap or cap["code"] in (PULL,):
                        continue
                    raw = bytes.fromhex(cap["rawHex"])
                    total, word = struct.unpack(">ii", raw[:8])
                    a.send_raw(raw)
                    seen += 1
                    if cap["flag"] & 2:
                        continue
                    hl = word & 0xFFFFFF
                    hdr = raw[8:8 + hl]
                    opaque = json.loads(hdr)["opaque"] if (word >> 24) == 0 else struct.unpack(">i", hdr[5:9])[0]
                    r = a.wait_response(opaque)
                    self.assertIsNotNone(r, "no reply to captured %s" % cap["name"])
                    self.assertEqual(r.serialize, (word >> 24) & 0xFF)
                    self.assertIn(r.code, (0, 1, 17, 22), cap["name"])
        self.assertGreater(seen, 10)


class BadInput(DaemonTest):
    def test_garbage_closes_only_that_connection(self):
        good, bad = self.conn(), self.conn()
        self.join(good, "cA", {"G": ["T"]})
        bad.send_raw(b"\x00\x00\x00\x10\x05\x00\x00\x04garbagegarbage!!")
        self.assertTrue(bad.is_closed_by_peer(), "a bad serialize type must close the connection")
        self.assertEqual(consumer_list(good, "G"), ["cA"])

    def test_oversized_frame_closes_before_buffering(self):
        good, bad = self.conn(), self.conn()
        bad.send_raw(struct.pack(">ii", 200 * 1024 * 1024, 10))
        self.assertTrue(bad.is_closed_by_peer())
        self.assertEqual(good.request(ROUTE, {"topic": "T"}).code, 0)

    def test_malformed_headers_and_bodies(self):
        for hdr in (b"not json", b"[1,2]", b'{"code":"x"}', b'{"code":34,"extFields":{"a":{"b":1}}}'):
            c = self.conn()
            c.send_raw(frame(hdr))
            self.assertTrue(c.is_closed_by_peer(), hdr)
        c = self.conn()
        for body in (b"{", b'{"clientID":""}', b'{"clientID":"x","consumerDataSet":[{"groupName":5}]}', b"[]"):
            r = c.request(HB, body=body)
            self.assertEqual(r.code, 1, body)
            self.assertIn("heartbeat", r.remark)
        r = c.request(QUERY_OFF, {"topic": "T", "consumerGroup": "G"})
        self.assertEqual(r.code, 1)
        self.assertIn("queueId", r.remark)
        r = c.request(LOCK, body=b"{]")
        self.assertEqual(r.code, 1)
        self.assertEqual(c.request(ROUTE, {"topic": "T"}).code, 0, "connection still serves after bad requests")

    def test_truncated_frame_then_close(self):
        c = self.conn()
        hb = encode_header_json({"code": 105, "flag": 0, "opaque": 1, "extFields": {"topic": "T"}})
        c.send_raw(frame(hb)[:-3])
        c.close()
        self.assertEqual(self.conn().request(ROUTE, {"topic": "T"}).code, 0)


class Limits(DaemonTest):
    extra = DaemonTest.extra + ("--max-connections", "3", "--max-requests-per-sec", "50", "--idle-timeout-ms",
                                "600", "--max-groups-per-client", "2", "--max-subscriptions", "2",
                                "--max-client-id-bytes", "16")

    def test_connection_limit(self):
        cs = [self.conn() for _ in range(3)]
        for c in cs:
            self.assertEqual(c.request(ROUTE, {"topic": "T"}).code, 0)
        extra = self.conn()
        self.assertTrue(extra.is_closed_by_peer(2.0), "the 4th connection must be refused")
        self.assertEqual(cs[0].request(ROUTE, {"topic": "T"}).code, 0)

    def test_request_rate_limit(self):
        c = self.conn()
        opaques = [c.send(ROUTE, {"topic": "T"}) for _ in range(150)]
        codes = [c.wait_response(o).code for o in opaques]
        self.assertGreater(codes.count(2), 50, "a flood gets SYSTEM_BUSY")
        self.assertGreaterEqual(codes.count(0), 45)
        for _ in range(4):  # stay under --idle-timeout-ms while the budget refills
            time.sleep(0.3)
            r = c.request(ROUTE, {"topic": "T"})
        self.assertEqual(r.code, 0, "the budget refills")

    def test_idle_connection_closed_active_kept(self):
        idle, active = self.conn(), self.conn()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            self.join(active, "cA", {"G": ["T"]})
            time.sleep(0.2)
        self.assertTrue(idle.is_closed_by_peer(1.0))
        self.assertEqual(active.request(ROUTE, {"topic": "T"}).code, 0)

    def test_heartbeat_size_limits(self):
        c = self.conn()
        r = c.request(HB, body=heartbeat_body("cA", {"G1": ["T"], "G2": ["T"], "G3": ["T"]}))
        self.assertEqual(r.code, 1)
        self.assertIn("--max-groups-per-client", r.remark)
        r = c.request(HB, body=heartbeat_body("cA", {"G1": ["T", "U", "V"]}))
        self.assertIn("--max-subscriptions", r.remark)
        r = c.request(HB, body=heartbeat_body("x" * 17, {"G1": ["T"]}))
        self.assertIn("--max-client-id-bytes", r.remark)
        self.assertEqual(c.request(LIST, {"consumerGroup": "G1"}).code, 1, "nothing was registered")


class Acl(unittest.TestCase):
    def test_requests_must_be_signed_by_a_known_account(self):
        import tempfile
        path = os.path.join(tempfile.mkdtemp(prefix="rmqcoord-acl-"), "plain_acl.yml")
        with open(path, "w") as f:
            f.write("globalWhiteRemoteAddresses:\naccounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n"
                    "    admin: false\n  - accessKey: 'other'\n    secretKey: \"s3cr3t\"\n")
        d = Daemon("--acl", path)
        try:
            c = d.connect()
            r = c.request(ROUTE, {"topic": "T"})
            self.assertEqual(r.code, 16)
            self.assertIn("AccessKey", r.remark)
            self.assertEqual(c.request(ROUTE, signed({"topic": "T"}, b"", "RocketMQ", "12345678")).code, 0)
            self.assertEqual(c.request(ROUTE, signed({"topic": "T"}, b"", "other", "s3cr3t")).code, 0)
            r = c.request(ROUTE, signed({"topic": "T"}, b"", "RocketMQ", "wrong"))
            self.assertEqual((r.code, r.remark), (16, "ACL: signature mismatch"))
            r = c.request(ROUTE, signed({"topic": "T"}, b"", "nobody", "x"))
            self.assertEqual(r.remark, "ACL: unknown AccessKey")
            body = json.dumps(heartbeat_body("c1", {"G": ["T"]})).encode()
            r = c.request(HB, signed({}, body, "RocketMQ", "12345678"), body=body)
            self.assertEqual(r.code, 0, "the body is part of the signature")
            r = c.request(HB, signed({}, b"tampered", "RocketMQ", "12345678"), body=body)
            self.assertEqual(r.code, 16)
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)
        p = __import__("subprocess").run([d.binary, "serve", "--acl", "/nonexistent/acl.yml", "--listen",
                                          "127.0.0.1:0", "--http", "off", "--store", d.store], capture_output=True,
                                         timeout=10)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"cannot load --acl", p.stderr)


class AdminCodes(unittest.TestCase):
    """The admin request codes need an admin account under --acl, and a
    signature with the token under --admin-token; other codes are untouched
    by the token."""

    def test_acl_admin_flag(self):
        import tempfile
        path = os.path.join(tempfile.mkdtemp(prefix="rmqcoord-acl-"), "plain_acl.yml")
        with open(path, "w") as f:
            f.write("accounts:\n  - accessKey: user\n    secretKey: u1234567\n    admin: false\n"
                    "  - accessKey: boss\n    secretKey: b1234567\n    admin: true\n")
        d = Daemon("--acl", path, "--topic", "T:4")
        try:
            c = d.connect()
            topic = {"topic": "T", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
            for code, ext in ((17, topic), (200, {}), (207, {"groupName": "G"}), (215, {"topic": "T"}),
                              (222, {"topic": "T", "group": "G", "timestamp": "0", "isForce": "true"})):
                r = c.request(code, signed(ext, b"", "user", "u1234567"))
                self.assertEqual(r.code, 16, "code %d from a non-admin account" % code)
                self.assertIn("admin", r.remark)
            r = c.request(ROUTE, signed({"topic": "T"}, b"", "user", "u1234567"))
            self.assertEqual(r.code, 0, "a non-admin account keeps the client codes")
            self.assertEqual(len(r.json()["queueDatas"]), 1)
            self.assertEqual(r.json()["queueDatas"][0]["readQueueNums"], 4, "the refused 17 changed nothing")
            r = c.request(17, signed(topic, b"", "boss", "b1234567"))
            self.assertEqual(r.code, 0, r.remark)
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)

    def test_admin_token_guards_remoting_admin_codes(self):
        d = Daemon("--admin-token", "t0ken", "--topic", "T:4")
        try:
            c = d.connect()
            topic = {"topic": "T", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
            r = c.request(17, topic)
            self.assertEqual(r.code, 16, "an unsigned admin code is refused")
            self.assertIn("--admin-token", r.remark)
            self.assertEqual(c.request(17, signed(topic, b"", "admin", "wrong")).code, 16)
            r = c.request(222, {"topic": "T", "group": "G", "timestamp": "0", "isForce": "true"})
            self.assertEqual(r.code, 16)
            # Client codes need nothing.
            self.assertEqual(c.request(HB, body=heartbeat_body("c1", {"G": ["T"]})).code, 0)
            self.assertEqual(c.request(15, {"topic": "T", "consumerGroup": "G", "queueId": 0,
                                            "commitOffset": 5}).code, 0)
            r = c.request(ROUTE, {"topic": "T"})
            self.assertEqual(r.json()["queueDatas"][0]["readQueueNums"], 4, "the refused 17 changed nothing")
            r = c.request(17, signed(topic, b"", "admin", "t0ken"))
            self.assertEqual(r.code, 0, r.remark)
            r = c.request(ROUTE, {"topic": "T"})
            self.assertEqual(r.json()["queueDatas"][0]["readQueueNums"], 1)
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)


class Persistence(unittest.TestCase):
    def test_restart_keeps_topics_and_offsets_and_drops_stale_members(self):
        d = Daemon("--auto-create-queues", "0")
        try:
            st, _ = d.http("PUT", "/api/topics/Orders", {"brokers": [
                {"brokerName": "roomA@broker-a", "readQueueNums": 4, "writeQueueNums": 4},
                {"brokerName": "roomB@broker-b", "readQueueNums": 2}]})
            self.assertEqual(st, 200)
            c = d.connect()
            self.assertEqual(c.request(HB, body=heartbeat_body("c1", {"G": ["Orders"]})).code, 0)
            r = c.request(UPDATE_OFF, {"topic": "Orders", "consumerGroup": "G", "queueId": 1, "commitOffset": 1234})
            self.assertEqual(r.code, 0, "an acknowledged offset")
            d.proc.kill()  # no clean shutdown: what was acknowledged must survive anyway
            d.proc.wait(5)
            c.close()
            d.stop()
            d.start()
            c = d.connect()
            r = c.request(QUERY_OFF, {"topic": "Orders", "consumerGroup": "G", "queueId": 1})
            self.assertEqual(r.ext.get("offset"), "1234")
            route = json.loads(c.request(ROUTE, {"topic": "Orders"}).body)
            self.assertEqual(sorted((q["brokerName"], q["readQueueNums"]) for q in route["queueDatas"]),
                             [("roomA@broker-a", 4), ("roomB@broker-b", 2)])
            self.assertEqual(c.request(ROUTE, {"topic": "Unknown"}).code, 17)
            self.assertEqual(c.request(ROUTE, {"topic": "%RETRY%G"}).code, 0, "a known group's retry topic")
            self.assertEqual(c.request(LIST, {"consumerGroup": "G"}).code, 1, "no stale live member")
            st, ev = d.http("GET", "/api/events?group=G")
            self.assertEqual([e["kind"] for e in ev["events"]], ["join", "restart"])
            db = sqlite3.connect(d.store)
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual(db.execute("SELECT count(*) FROM members WHERE left_ms IS NULL").fetchone()[0], 0)
            self.assertEqual(os.stat(d.store).st_mode & 0o777, 0o600)
            c.close()
        finally:
            self.assertEqual(d.stop(), 0)


class Http(DaemonTest):
    def test_group_and_topic_api(self):
        a = self.conn()
        self.join(a, "cA", {"G": ["T"]})
        st, h = self.d.http("GET", "/healthz")
        self.assertEqual(st, 200)
        st, gl = self.d.http("GET", "/api/groups")
        self.assertIn("G", [g["group"] for g in gl["groups"]])
        st, g = self.d.http("GET", "/api/groups/G")
        self.assertEqual(st, 200)
        self.assertEqual(g["consumers"][0]["clientId"], "cA")
        for k in ("remoteAddr", "language", "version", "lastHeartbeatMs"):
            self.assertIn(k, g["consumers"][0])
        self.assertEqual(g["messageModel"], "CLUSTERING")
        self.assertEqual(g["consumeType"], "CONSUME_PASSIVELY")
        self.assertEqual(g["subscriptions"][0]["subString"], "*")
        st, _ = self.d.http("GET", "/api/groups/nope")
        self.assertEqual(st, 404)
        st, t = self.d.http("PUT", "/api/topics/T", {"readQueueNums": 3, "writeQueueNums": 3})
        self.assertEqual(st, 200)
        route = json.loads(a.request(ROUTE, {"topic": "T"}).body)
        self.assertEqual(route["queueDatas"][0]["readQueueNums"], 3)
        st, err = self.d.http("PUT", "/api/topics/T", b"{nope")
        self.assertEqual(st, 400)
        self.assertIn("error", err)
        st, err = self.d.http("PUT", "/api/topics/T", {"readQueueNums": "x"})
        self.assertEqual(st, 400)
        st, _ = self.d.http("DELETE", "/api/topics/T")
        self.assertEqual(st, 200)
        st, _ = self.d.http("GET", "/api/topics/T")
        self.assertEqual(st, 404)
        st, ev = self.d.http("GET", "/api/events?group=G&since=0")
        self.assertEqual(ev["events"][0]["kind"], "join")
        self.assertEqual(ev["events"][0]["after"], ["cA"])


class Allocation(DaemonTest):
    def test_allocation_view_matches_client_strategies(self):
        conns = [self.conn() for _ in range(3)]
        for i, c in enumerate(conns):
            self.join(c, "c%d" % i, {"G": ["TopicTest"]})
        self.d.http("PUT", "/api/topics/TopicTest", {"readQueueNums": 8, "writeQueueNums": 8})
        st, a = self.d.http("GET", "/api/groups/G/allocation?topic=TopicTest&strategy=AVG")
        self.assertEqual(st, 200, a)
        self.assertEqual({k: [q["queueId"] for q in v] for k, v in a["allocation"].items()},
                         {"c0": [0, 1, 2], "c1": [3, 4, 5], "c2": [6, 7]})
        self.assertEqual((a["unassigned"], a["overlaps"]), ([], []))
        self.assertEqual(a["owners"][7], {"queue": {"topic": "TopicTest", "brokerName": "broker-a", "queueId": 7},
                                          "owners": ["c2"]})
        st, a = self.d.http("GET", "/api/groups/G/allocation?topic=TopicTest&strategy=AVG_BY_CIRCLE")
        self.assertEqual([q["queueId"] for q in a["allocation"]["c0"]], [0, 3, 6])
        st, a = self.d.http("GET", "/api/groups/G/allocation?topic=TopicTest&strategy=CONSISTENT_HASH&virtualNodes=10")
        self.assertEqual(st, 200)
        self.assertEqual(sorted(q["queueId"] for v in a["allocation"].values() for q in v), list(range(8)))
        st, a = self.d.http("GET", "/api/groups/G/allocation?topic=TopicTest&strategy=CONFIG&config=broker-a:1,broker-a:2")
        self.assertEqual([o["queue"]["queueId"] for o in a["overlaps"]], [1, 2], "CONFIG: every member takes the list")
        self.assertEqual(len(a["unassigned"]), 6)
        # a duplicated client id: both processes pull the same queues
        self.join(self.conn(), "c0", {"G": ["TopicTest"]})
        st, a = self.d.http("GET", "/api/groups/G/allocation?topic=TopicTest")
        self.assertEqual(a["consumers"], 4)
        self.assertTrue(a["overlaps"], "a duplicated id shows up as overlapping ownership")
        for bad in ("strategy=NOPE&topic=TopicTest", "virtualNodes=-1&topic=TopicTest&strategy=CONSISTENT_HASH",
                    "strategy=AVG", "topic=TopicTest&strategy=MACHINE_ROOM_NEARBY&brokerRooms=x"):
            st, e = self.d.http("GET", "/api/groups/G/allocation?" + bad)
            self.assertEqual(st, 400, bad)
            self.assertIn("detail", e)
        st, _ = self.d.http("GET", "/api/groups/G/allocation?topic=Nope")
        self.assertEqual(st, 404)

    def test_machine_room_layout(self):
        st, _ = self.d.http("PUT", "/api/topics/T", {"brokers": [
            {"brokerName": "hz@broker-a", "readQueueNums": 4}, {"brokerName": "sh@broker-b", "readQueueNums": 4}]})
        self.assertEqual(st, 200)
        for i in range(3):
            self.join(self.conn(), "c%d" % i, {"G": ["T"]})
        st, a = self.d.http("GET", "/api/groups/G/allocation?topic=T&strategy=MACHINE_ROOM&consumerIdcs=hz")
        self.assertEqual(st, 200, a)
        self.assertEqual({k: [q["queueId"] for q in v] for k, v in a["allocation"].items()},
                         {"c0": [0, 3], "c1": [1], "c2": [2]})
        self.assertEqual(len(a["unassigned"]), 4)


class Responder:
    """Answers the daemon's GET_CONSUMER_RUNNING_INFO (307) on a connection,
    like a Java consumer: fastjson mqTable with MessageQueue objects as keys."""

    def __init__(self, conn, holdings):
        import threading
        self.conn, self.holdings, self.stop, self.asked = conn, holdings, False, 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def body(self, group):
        entries = ",".join('{"brokerName":"broker-a","queueId":%d,"topic":"T"}:{"commitOffset":0,"droped":false}' % q
                           for q in self.holdings())
        return ('{"mqTable":{%s},"properties":{"consumerGroup":"%s","allocateMessageQueueStrategy":'
                '"org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1"}}'
                % (entries, group)).encode()

    def run(self):
        import struct as st
        while not self.stop:
            f = self.conn.recv_frame(0.05)
            if f is None or f.code != 307 or f.flag & 1:
                continue
            self.asked += 1
            hdr = encode_header_json({"code": 0, "flag": 1, "opaque": f.opaque, "language": "JAVA",
                                      "version": 409})
            body = self.body(f.ext.get("consumerGroup"))
            self.conn.send_raw(frame(hdr, body))

    def close(self):
        self.stop = True
        self.thread.join(2)


class Holdings(DaemonTest):
    extra = ("--channel-expiry-ms", "60000")  # a silent client's 3 s timeout must not expire the others

    def setUp(self):
        super().setUp()
        self.d.http("PUT", "/api/topics/T", {"readQueueNums": 8, "writeQueueNums": 8})
        self.a, self.b, self.silent = self.conn(), self.conn(), self.conn()
        self.join(self.a, "cA", {"G": ["T"]})
        self.join(self.b, "cB", {"G": ["T"]})
        self.held = {"cA": [0, 1, 2, 3], "cB": [4, 5, 6, 7]}
        self.ra = Responder(self.a, lambda: self.held["cA"])
        self.rb = Responder(self.b, lambda: self.held["cB"])

    def tearDown(self):
        self.ra.close()
        self.rb.close()
        super().tearDown()

    def test_running_info_and_consistency(self):
        st, ri = self.d.http("GET", "/api/groups/G/clients/cA/running-info")
        self.assertEqual(st, 200, ri)
        self.assertEqual([q["queueId"] for q in ri["channels"][0]["queues"]], [0, 1, 2, 3])
        self.assertIn("AllocateMessageQueueAveragely", ri["channels"][0]["strategy"])
        st, c = self.d.http("GET", "/api/groups/G/consistency?topic=T&strategy=AVG")
        self.assertEqual(st, 200, c)
        self.assertTrue(c["consistent"], c)
        self.assertEqual((c["overlaps"], c["gaps"], c["unresponsive"]), ([], [], []))
        # holdings that disagree: B also takes queue 3 and drops 7
        self.held["cB"] = [3, 4, 5, 6]
        st, c = self.d.http("GET", "/api/groups/G/consistency?topic=T")
        self.assertFalse(c["consistent"])
        self.assertEqual([o["queue"]["queueId"] for o in c["overlaps"]], [3])
        self.assertEqual([o["holders"] for o in c["overlaps"]], [["cA", "cB"]])
        self.assertEqual([g["queueId"] for g in c["gaps"]], [7])
        self.assertEqual([x["matches"] for x in c["clients"]], [True, False])

    def test_silent_client_is_unresponsive_not_skipped(self):
        self.join(self.silent, "cS", {"G": ["T"]})  # never answers 307, like ali-ons
        self.held = {"cA": [0, 1, 2], "cB": [3, 4, 5]}  # AVG over 3: cA 0-2, cB 3-5, cS 6-7
        t0 = time.monotonic()
        st, c = self.d.http("GET", "/api/groups/G/consistency?topic=T")
        self.assertEqual(st, 200)
        self.assertEqual(c["unresponsive"], ["cS"])
        self.assertEqual(c["gaps"], [], "queues expected for a silent client are not gaps")
        self.assertTrue(c["consistent"], c)
        self.assertLess(time.monotonic() - t0, 4.5, "a silent client costs one timeout, not more")
        st, ri = self.d.http("GET", "/api/groups/G/clients/cS/running-info")
        self.assertEqual(st, 504)
        self.assertFalse(ri["answered"])

    def test_converged_waits_for_agreement(self):
        self.held["cB"] = [3, 4, 5, 6, 7]
        import threading
        threading.Timer(0.4, lambda: self.held.__setitem__("cB", [4, 5, 6, 7])).start()
        t0 = time.monotonic()
        st, c = self.d.http("GET", "/api/groups/G/converged?topic=T&timeout_ms=5000")
        took = time.monotonic() - t0
        self.assertEqual(st, 200, c)
        self.assertTrue(c["converged"])
        self.assertGreaterEqual(took, 0.35)
        self.assertLess(took, 3)
        self.assertGreater(c["checks"], 1)
        self.held["cB"] = [7]
        st, c = self.d.http("GET", "/api/groups/G/converged?topic=T&timeout_ms=300")
        self.assertEqual(st, 408)
        self.assertFalse(c["converged"])
        self.assertEqual([g["queueId"] for g in c["gaps"]], [4, 5, 6])
        st, _ = self.d.http("GET", "/api/groups/nope/converged?topic=T")
        self.assertEqual(st, 404)
        st, _ = self.d.http("GET", "/api/groups/G/converged?topic=T&timeout_ms=abc")
        self.assertEqual(st, 400)


class Shutdown(unittest.TestCase):
    def test_sigterm_closes_channels_and_flushes(self):
        d = Daemon()
        c = d.connect()
        self.assertEqual(c.request(HB, body=heartbeat_body("c1", {"G": ["T"]})).code, 0)
        self.assertEqual(d.stop(signal.SIGTERM), 0)
        self.assertTrue(c.is_closed_by_peer(1.0))
        db = sqlite3.connect(d.store)
        kinds = [r[0] for r in db.execute("SELECT kind FROM events WHERE group_name='G' ORDER BY id")]
        self.assertEqual(kinds, ["join", "close"])

    def test_bad_flags(self):
        import subprocess
        d = Daemon()
        d.stop()
        for args in (["--listen", "nope"], ["--channel-expiry-ms", "-5"], ["--bogus"], ["--notify-on-expiry", "x"]):
            p = subprocess.run([d.binary, "serve"] + args, capture_output=True, timeout=10)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(b"rmqcoord serve:", p.stderr)
        p = subprocess.run([d.binary, "serve", "--help"], capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"--channel-expiry-ms", p.stdout)


if __name__ == "__main__":
    run_tests("integration")
