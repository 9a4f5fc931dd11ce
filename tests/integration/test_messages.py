"""Integration tests: messages through the real daemon. SEND_MESSAGE (V1,
V2) and SEND_BATCH_MESSAGE into the store, a restart, PULL_MESSAGE back
with every record field checked against what was sent (offsets, msgId,
order), and a held pull answered by a send (docs/protocol.md §13)."""
import os
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import DaemonCase, heartbeat_body, run_tests  # noqa: E402

SEND, PULL, SEND_V2, SEND_BATCH, HB, SEND_BACK = 10, 11, 310, 320, 34, 36
MAX_OFF, MIN_OFF = 30, 31
SUSPEND, SUBSCRIPTION = 0x2, 0x4
V2_KEYS = dict(producerGroup="a", topic="b", defaultTopic="c", defaultTopicQueueNums="d", queueId="e",
               sysFlag="f", bornTimestamp="g", flag="h", properties="i", reconsumeTimes="j", unitMode="k",
               maxReconsumeTimes="l", batch="m")


def props_str(d):
    return "".join("%s\x01%s\x02" % kv for kv in d.items())


def props_dict(s):
    out = {}
    for piece in s.split("\x02"):
        if "\x01" in piece:
            k, v = piece.split("\x01", 1)
            out[k] = v
    return out


def decode_records(body):
    """The records of a FOUND body: a list of dicts."""
    out, at = [], 0
    while at < len(body):
        total, magic, crc, qid, flag, qoff, phys, sysflag, born = struct.unpack_from(">iiiiiqqiq", body, at)
        assert magic == -626843481, "v1 magic"
        p = at + 48
        born_host = body[p:p + 4]
        born_port, = struct.unpack_from(">i", body, p + 4)
        store_ms, = struct.unpack_from(">q", body, p + 8)
        store_host = body[p + 16:p + 20]
        store_port, recons, prep, blen = struct.unpack_from(">iiqi", body, p + 20)
        p += 40
        msg_body = body[p:p + blen]
        p += blen
        tlen = body[p]
        topic = body[p + 1:p + 1 + tlen].decode()
        p += 1 + tlen
        plen, = struct.unpack_from(">h", body, p)
        props = body[p + 2:p + 2 + plen].decode()
        p += 2 + plen
        assert p - at == total, "TOTALSIZE %d, fields %d" % (total, p - at)
        msg_id = (store_host + struct.pack(">i", store_port) + struct.pack(">q", phys)).hex().upper()
        out.append(dict(crc=crc, queue_id=qid, flag=flag, queue_offset=qoff, physical=phys, sys_flag=sysflag,
                        born_ms=born, born_host=born_host, born_port=born_port, store_ms=store_ms,
                        reconsume=recons, body=msg_body, topic=topic, props=props_dict(props), msg_id=msg_id))
        at = p
    return out


def batch_item(body, props):
    p = props.encode()
    return struct.pack(">iiiii", 22 + len(body) + len(p), 0, 0, 0, len(body)) + body + struct.pack(">h", len(p)) + p


class MessagesBase(DaemonCase):
    """Helpers: a connection, a send, a pull."""

    def conn(self):
        c = self.d.connect()
        self.conns.append(c)
        return c

    def send(self, conn, topic, qid, body, props, v2=True, code=None, born=1700000000123):
        ext = dict(producerGroup="PG", topic=topic, defaultTopic="TBW102", defaultTopicQueueNums="4",
                   queueId=str(qid), sysFlag="0", bornTimestamp=str(born), flag="0", properties=props,
                   reconsumeTimes="0", unitMode="false", maxReconsumeTimes="16", batch="false")
        if code == SEND_BATCH:
            ext["batch"] = "true"
        if v2:
            ext = {V2_KEYS[k]: v for k, v in ext.items()}
        r = conn.request(code or (SEND_V2 if v2 else SEND), ext, body=body)
        self.assertIsNotNone(r, "no send reply")
        return r

    def pull(self, conn, topic, qid, offset, sys_flag=SUBSCRIPTION, expr="*", suspend_ms=0, timeout=3.0):
        ext = dict(consumerGroup="CG", topic=topic, queueId=str(qid), queueOffset=str(offset), maxMsgNums="32",
                   sysFlag=str(sys_flag), commitOffset="0", suspendTimeoutMillis=str(suspend_ms),
                   subscription=expr, subVersion="0", expressionType="TAG")
        return conn.request(PULL, ext, timeout=timeout)



class Messages(MessagesBase):
    def test_send_restart_pull(self):
        a = self.conn()
        sent = []  # (msgId, offset, body, uniq, tags, keys)
        for i in range(4):
            uniq = "7F00000100002A9F0000000000%06d" % i
            p = props_str({"TAGS": "t%d" % (i % 2), "KEYS": "k%d" % i, "UNIQ_KEY": uniq, "WAIT": "true"})
            r = self.send(a, "ST", 0, b"body-%d" % i, p, v2=(i % 2 == 0))
            self.assertEqual(r.code, 0, r)
            self.assertEqual(r.ext["queueId"], "0")
            self.assertEqual(int(r.ext["queueOffset"]), i)
            self.assertEqual(r.ext["transactionId"], uniq)
            self.assertEqual(r.ext["MSG_REGION"], "DefaultRegion")
            self.assertEqual(r.ext["TRACE_ON"], "true")
            self.assertEqual(len(r.ext["msgId"]), 32)
            sent.append((r.ext["msgId"], i, b"body-%d" % i, uniq, "t%d" % (i % 2), "k%d" % i))
        items = b"".join(batch_item(b"batch-%d" % k, props_str({"UNIQ_KEY": "B%d" % k, "TAGS": "bt"}))
                         for k in range(3))
        r = self.send(a, "ST", 0, items, "", code=SEND_BATCH)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(int(r.ext["queueOffset"]), 4)
        ids = r.ext["msgId"].split(",")
        self.assertEqual(len(ids), 3)
        for k in range(3):
            sent.append((ids[k], 4 + k, b"batch-%d" % k, "B%d" % k, "bt", None))
        # unknown queue, oversized body
        r = self.send(a, "ST", 99, b"x", "")
        self.assertEqual(r.code, 1, r)
        self.assertTrue(r.remark.startswith("request queueId[99] is illegal"), r.remark)

        self.d.stop()
        self.d.start()
        b = self.conn()
        r = self.pull(b, "ST", 0, 0)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.ext["nextBeginOffset"], "7")
        self.assertEqual(r.ext["minOffset"], "0")
        self.assertEqual(r.ext["maxOffset"], "7")
        recs = decode_records(r.body)
        self.assertEqual(len(recs), 7)
        for rec, (msg_id, off, body, uniq, tags, keys) in zip(recs, sent):
            self.assertEqual(rec["queue_offset"], off)
            self.assertEqual(rec["msg_id"], msg_id, "the send's msgId names the stored record")
            self.assertEqual(rec["body"], body)
            self.assertEqual(rec["topic"], "ST")
            self.assertEqual(rec["queue_id"], 0)
            self.assertEqual(rec["born_ms"], 1700000000123)
            self.assertEqual(rec["born_host"], bytes([127, 0, 0, 1]))
            self.assertEqual(rec["props"]["UNIQ_KEY"], uniq)
            self.assertEqual(rec["props"]["TAGS"], tags)
            if keys:
                self.assertEqual(rec["props"]["KEYS"], keys)
            self.assertGreater(rec["store_ms"], 0)
        phys = [rec["physical"] for rec in recs]
        self.assertEqual(phys, sorted(phys))
        self.assertEqual(len(set(phys)), 7)
        # tag filter: t1 only (offsets 1, 3), scanned through the whole read
        r = self.pull(b, "ST", 0, 0, expr="t1")
        self.assertEqual(r.code, 0, r)
        self.assertEqual([x["queue_offset"] for x in decode_records(r.body)], [1, 3])
        self.assertEqual(r.ext["nextBeginOffset"], "7")
        # after the restart a send continues the queue
        r = self.send(b, "ST", 0, b"after", props_str({"UNIQ_KEY": "AFTER"}))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(int(r.ext["queueOffset"]), 7)
        self.assertEqual(b.request(MAX_OFF, {"topic": "ST", "queueId": "0"}).ext["offset"], "8")
        self.assertEqual(b.request(MIN_OFF, {"topic": "ST", "queueId": "0"}).ext["offset"], "0")
        r = self.pull(b, "ST", 0, 8)
        self.assertEqual(r.code, 19, r)
        r = self.pull(b, "ST", 0, 20)
        self.assertEqual(r.code, 21, r)

    def test_sql92_subscription_refused_not_delivered_unfiltered(self):
        """rmqcoord evaluates no SQL92 expression: a pull under one is refused
        as a broker without property filtering refuses it, never answered
        with every message."""
        a = self.conn()
        self.assertEqual(self.send(a, "SQ", 0, b"x", props_str({"UNIQ_KEY": "U1", "a": "1"})).code, 0)
        ext = dict(consumerGroup="CG", topic="SQ", queueId="0", queueOffset="0", maxMsgNums="32",
                   sysFlag=str(SUBSCRIPTION), commitOffset="0", suspendTimeoutMillis="0",
                   subscription="a > 5", subVersion="0", expressionType="SQL92")
        r = a.request(PULL, ext)
        self.assertEqual(r.code, 1, r)
        self.assertIn("filter message by SQL92", r.remark)
        # The same through the group's heartbeat subscription (no SUBSCRIPTION flag).
        body = heartbeat_body("c-sql", {"CG": ["SQ"]})
        body["consumerDataSet"][0]["subscriptionDataSet"][0].update(expressionType="SQL92", subString="a > 5")
        self.assertEqual(a.request(HB, body=body).code, 0)
        ext.update(sysFlag="0")
        r = a.request(PULL, ext)
        self.assertEqual(r.code, 1, r)
        self.assertIn("filter message by SQL92", r.remark)

    def test_send_back_retries_then_dead_letters(self):
        """CONSUMER_SEND_MSG_BACK: the message goes to %RETRY%<group> with
        reconsumeTimes + 1, RETRY_TOPIC and ORIGIN_MESSAGE_ID, and to
        %DLQ%<group> once its reconsume times reach the maximum."""
        a = self.conn()
        self.assertEqual(self.send(a, "SB", 0, b"fail-me", props_str({"UNIQ_KEY": "SB1", "TAGS": "t"})).code, 0)
        rec = decode_records(self.pull(a, "SB", 0, 0).body)[0]
        back = dict(group="CG", offset=str(rec["physical"]), delayLevel="0", originMsgId=rec["msg_id"],
                    originTopic="SB", maxReconsumeTimes="1", unitMode="false")
        self.assertEqual(a.request(SEND_BACK, back).code, 0)
        r = self.pull(a, "%RETRY%CG", 0, 0)
        self.assertEqual(r.code, 0, r)
        retry = decode_records(r.body)[0]
        self.assertEqual((retry["body"], retry["reconsume"], retry["topic"]), (b"fail-me", 1, "%RETRY%CG"))
        self.assertEqual(retry["props"]["RETRY_TOPIC"], "SB")
        self.assertEqual(retry["props"]["ORIGIN_MESSAGE_ID"], rec["msg_id"])
        self.assertEqual(retry["props"]["UNIQ_KEY"], "SB1", "the copy keeps its unique key")
        # Its second failure reaches maxReconsumeTimes 1: the dead-letter topic.
        back.update(offset=str(retry["physical"]))
        self.assertEqual(a.request(SEND_BACK, back).code, 0)
        self.assertEqual(a.request(MAX_OFF, {"topic": "%DLQ%CG", "queueId": "0"}).ext["offset"], "1")
        self.assertEqual(a.request(MAX_OFF, {"topic": "%RETRY%CG", "queueId": "0"}).ext["offset"], "1")
        # An offset that holds no message: SUCCESS by default (README, "Where rmqcoord differs").
        self.assertEqual(a.request(SEND_BACK, dict(back, offset="999999")).code, 0)

    def test_held_pull_answered_by_send(self):
        a, b = self.conn(), self.conn()
        r = a.request(HB, body=heartbeat_body("producer-1", {}, producers=("PG", "CLIENT_INNER_PRODUCER")))
        self.assertEqual(r.code, 0, "a producer's heartbeat is accepted: %r" % r)
        r = self.send(a, "HT", 1, b"first", props_str({"UNIQ_KEY": "H0"}))
        self.assertEqual(r.code, 0, r)
        opaque = b.send(PULL, dict(consumerGroup="CG", topic="HT", queueId="1", queueOffset="1", maxMsgNums="32",
                                   sysFlag=str(SUBSCRIPTION | SUSPEND), commitOffset="0",
                                   suspendTimeoutMillis="10000", subscription="*", subVersion="0",
                                   expressionType="TAG"))
        self.assertIsNone(b.wait_response(opaque, timeout=0.5), "held while nothing new is stored")
        t0 = time.monotonic()
        r = self.send(a, "HT", 1, b"second", props_str({"UNIQ_KEY": "H1"}))
        self.assertEqual(r.code, 0, r)
        p = b.wait_response(opaque, timeout=3.0)
        self.assertIsNotNone(p)
        self.assertLess(time.monotonic() - t0, 2.0)
        self.assertEqual(p.code, 0, p)
        recs = decode_records(p.body)
        self.assertEqual([x["body"] for x in recs], [b"second"])
        self.assertEqual(recs[0]["msg_id"], r.ext["msgId"])
        self.assertEqual(p.ext["nextBeginOffset"], "2")


class Retention(MessagesBase):
    """--max-queue-messages and --max-message-bytes: the oldest messages go
    (within a second), the queue's min offset rises with them and a pull
    below it is told PULL_OFFSET_MOVED; the newest always stays."""

    extra = ("--max-queue-messages", "10", "--max-message-bytes", "40000")

    def wait_min(self, c, topic, qid, want, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = int(c.request(MIN_OFF, {"topic": topic, "queueId": str(qid)}).ext["offset"])
            if got >= want:
                return got
            time.sleep(0.1)
        return got

    def test_per_queue_count_and_total_bytes(self):
        a = self.conn()
        for i in range(25):
            self.assertEqual(self.send(a, "RT", 0, b"m%d" % i, props_str({"UNIQ_KEY": "R%d" % i})).code, 0)
        self.assertEqual(self.wait_min(a, "RT", 0, 15), 15, "the 15 oldest of 25 go at 10 per queue")
        self.assertEqual(a.request(MAX_OFF, {"topic": "RT", "queueId": "0"}).ext["offset"], "25")
        r = self.pull(a, "RT", 0, 3)
        self.assertEqual(r.code, 21, "a pull below the min offset: PULL_OFFSET_MOVED")
        r = self.pull(a, "RT", 0, 15)
        self.assertEqual(r.code, 0)
        recs = decode_records(r.body)
        self.assertEqual([x["queue_offset"] for x in recs], list(range(15, 25)))
        # Kept across a restart: the min offset comes back from the store.
        a.close()
        self.conns.remove(a)
        self.assertEqual(self.d.stop(), 0)
        self.d.start()
        a = self.conn()
        self.assertEqual(int(a.request(MIN_OFF, {"topic": "RT", "queueId": "0"}).ext["offset"]), 15)
        # Bytes in all: 1 KiB bodies over 4 queues, 40,000 bytes at most (the
        # oldest of any queue go first, RT's among them).
        for i in range(60):
            self.assertEqual(self.send(a, "RB", i % 4, b"x" * 1024, props_str({"UNIQ_KEY": "B%d" % i})).code, 0)
        deadline = time.monotonic() + 5
        kept = None
        while time.monotonic() < deadline:
            kept = sum(int(a.request(MAX_OFF, {"topic": "RB", "queueId": str(q)}).ext["offset"]) -
                       int(a.request(MIN_OFF, {"topic": "RB", "queueId": str(q)}).ext["offset"]) for q in range(4))
            if kept <= 36:
                break
            time.sleep(0.1)
        self.assertLessEqual(kept, 36, "about 40,000 bytes of 1 KiB messages are kept")
        self.assertGreaterEqual(kept, 4, "each queue keeps its newest")


if __name__ == "__main__":
    run_tests("messages")
