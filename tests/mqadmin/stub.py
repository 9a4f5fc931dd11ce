"""Reference answers for the request codes rmqcoord does not support yet.

`harness.py --stub` puts these in the recording proxy: a request with one
of these codes is answered here (from the daemon's real state, read through
its HTTP API and remoting port) instead of being forwarded. It shows that
the replies specified in FINDINGS.md are what the real mqadmin needs: with
the stub every command passes. It is a test aid and a worked example of the
spec, not an implementation: the daemon must answer these codes itself.
"""
import json
import time
import urllib.parse
import urllib.request

import wire

SUCCESS, SYSTEM_ERROR, TOPIC_NOT_EXIST, CONSUME_MSG_TIMEOUT, CONSUMER_NOT_ONLINE = 0, 1, 17, 207, 206


def mq_key(topic, broker, qid):
    # fastjson writes a map with MessageQueue keys with the key object inline (not quoted)
    return json.dumps({"brokerName": broker, "queueId": qid, "topic": topic}, separators=(",", ":"), sort_keys=True)


# How a map keyed by MessageQueue is written: "object" as fastjson writes it
# ({{"brokerName":..}:v}, not standard JSON), or "string": standard JSON with the
# key object's JSON text as a quoted string key ({"{\"brokerName\":..}":v}).
# fastjson (both tool versions) reads either form.
KEY_STYLE = "object"


def mq_map(entries):
    """entries: [((topic, broker, qid), value)] -> map text keyed by MessageQueue."""
    def key(k):
        text = mq_key(*k)
        return text if KEY_STYLE == "object" else json.dumps(text)
    return "{" + ",".join(key(k) + ":" + json.dumps(v, separators=(",", ":"), sort_keys=True)
                          for k, v in entries) + "}"


class Stub:
    def __init__(self, env, version):
        self.env = env
        self.version = version
        self.subgroups = {}      # groupName -> SubscriptionGroupConfig (as sent)
        self.reset_pending = {}  # (group, topic, queueId) -> offset set by 222, until the next pull

        self.handlers = {206: self.topic_list, 202: self.topic_stats, 28: self.runtime_info,
                         17: self.create_topic, 215: self.delete_topic_broker, 216: self.delete_topic_namesrv,
                         208: self.consume_stats, 307: self.running_info, 200: self.create_subgroup,
                         201: self.all_subgroups, 207: self.delete_subgroup, 222: self.reset_offset,
                         351: self.topic_config, 102: self.delete_kv}

    # ------------------------------------------------------------ helpers
    def http(self, method, path, body=None):
        req = urllib.request.Request("http://%s%s" % (self.env.http_addr, path), method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read() or b"null")

    def topic(self, name):
        try:
            return self.http("GET", "/api/topics/" + urllib.parse.quote(name, safe=""))
        except urllib.error.HTTPError:
            return None

    def call(self, code, ext):
        c = wire.Client(self.env.remoting)
        try:
            return c.request(code, ext)
        finally:
            c.close()

    def offset(self, code, ext):
        h, _ = self.call(code, ext)
        return int(h["extFields"]["offset"]) if h["code"] == 0 else -1

    def queues(self, t):
        """[(brokerName, readQueueNums, writeQueueNums)] of a topic."""
        return [(b["brokerName"], b.get("readQueueNums", 0), b.get("writeQueueNums", 0)) for b in t.get("brokers", [])]

    def __call__(self, proxy, conn, h, body):
        ext = h.get("extFields") or {}
        code = h.get("code")
        if code in (11, 15) and self.reset_pending:
            key = (ext.get("consumerGroup"), ext.get("topic"), int(ext.get("queueId", -1)))
            if key in self.reset_pending:
                if code == 15:   # a client's stale commit after a reset is acknowledged and dropped
                    return SUCCESS, {}, None, "Offset has been previously reset"
                off = self.reset_pending.pop(key)   # the next pull learns the new offset
                mx = max(self.offset(30, {"topic": key[1], "queueId": key[2]}), 0)
                return (21, {"nextBeginOffset": str(off), "minOffset": "0", "maxOffset": str(mx),
                             "suggestWhichBrokerId": "0"}, None, "offset reset by the admin")
        fn = self.handlers.get(h.get("code"))
        if fn is None:
            return None
        ext = h.get("extFields") or {}
        try:
            return fn(proxy, ext, body)
        except Exception as e:  # the reply says what went wrong
            return SYSTEM_ERROR, {}, None, "stub: %r" % e

    # ------------------------------------------------------------ name server
    def topic_list(self, proxy, ext, body):                               # 206
        return SUCCESS, {}, json.dumps({"topicList": self.env.topics()}).encode(), None

    def delete_topic_namesrv(self, proxy, ext, body):                     # 216
        t = self.topic(ext["topic"])
        if t is not None:
            self.http("DELETE", "/api/topics/" + urllib.parse.quote(ext["topic"], safe=""))
        return SUCCESS, {}, None, None

    def delete_kv(self, proxy, ext, body):                                # 102
        return SUCCESS, {}, None, None

    # ------------------------------------------------------------ broker: topics
    def topic_config(self, proxy, ext, body):                             # 351 (5.x)
        t = self.topic(ext["topic"])
        if t is None:
            return TOPIC_NOT_EXIST, {}, None, "No topic in this broker. topic: %s" % ext["topic"]
        _, r, w = self.queues(t)[0]
        perm = (t.get("brokers") or [{}])[0].get("perm", 6)
        cfg = {"attributes": {}, "order": False, "perm": perm, "readQueueNums": r, "topicFilterType": "SINGLE_TAG",
               "topicName": ext["topic"], "topicSysFlag": 0, "writeQueueNums": w}
        return SUCCESS, {}, json.dumps(cfg).encode(), None

    def topic_stats(self, proxy, ext, body):                              # 202
        t = self.topic(ext["topic"])
        if t is None:
            return TOPIC_NOT_EXIST, {}, None, "topic[%s] not exist" % ext["topic"]
        entries = []
        for broker, r, w in self.queues(t):
            for q in range(max(r, w)):
                mx = max(self.offset(30, {"topic": ext["topic"], "queueId": q}), 0)
                entries.append(((ext["topic"], broker, q), {"lastUpdateTimestamp": 0, "maxOffset": mx, "minOffset": 0}))
        text = '{"offsetTable":%s,"topicPutTps":0.0}' % mq_map(entries)
        return SUCCESS, {}, text.encode(), None

    def runtime_info(self, proxy, ext, body):                             # 28
        table = {"brokerVersionDesc": "V4_9_8" if self.version.startswith("4") else "V5_3_3",
                 "brokerVersion": "409" if self.version.startswith("4") else "479",
                 "putTps": "0.0 0.0 0.0", "getTransferedTps": "0.0 0.0 0.0", "getTransferredTps": "0.0 0.0 0.0",
                 "sendThreadPoolQueueSize": "0", "pullThreadPoolQueueSize": "0",
                 "sendThreadPoolQueueHeadWaitTimeMills": "0", "pullThreadPoolQueueHeadWaitTimeMills": "0",
                 "pageCacheLockTimeMills": "0", "commitLogDiskRatio": "0.0",
                 "brokerActive": "true", "bootTimestamp": str(int(time.time() * 1000))}
        return SUCCESS, {}, json.dumps({"table": table}).encode(), None

    def create_topic(self, proxy, ext, body):                             # 17
        r, w = int(ext["readQueueNums"]), int(ext["writeQueueNums"])
        self.http("PUT", "/api/topics/" + urllib.parse.quote(ext["topic"], safe=""),
                  {"readQueueNums": r, "writeQueueNums": w})
        return SUCCESS, {}, None, None

    def delete_topic_broker(self, proxy, ext, body):                      # 215
        return self.delete_topic_namesrv(proxy, ext, body)

    # ------------------------------------------------------------ broker: groups and offsets
    def consume_stats(self, proxy, ext, body):                            # 208
        group = ext["consumerGroup"]
        g = self.env.group(group) or {}
        topics = [s["topic"] for s in g.get("subscriptions", [])]
        if ext.get("topic"):
            topics = [ext["topic"]]
        entries = []
        for name in topics:
            t = self.topic(name)
            if t is None:
                continue
            for broker, r, w in self.queues(t):
                for q in range(r):
                    mx = max(self.offset(30, {"topic": name, "queueId": q}), 0)
                    co = max(self.offset(14, {"consumerGroup": group, "topic": name, "queueId": q,
                                              "setZeroIfNotFound": "false"}), 0)
                    entries.append(((name, broker, q), {"brokerOffset": mx, "consumerOffset": co,
                                                        "lastTimestamp": 0, "pullOffset": co}))
        text = '{"consumeTps":0.0,"offsetTable":%s}' % mq_map(entries)
        return SUCCESS, {}, text.encode(), None

    def running_info(self, proxy, ext, body):                             # 307, forwarded
        group, cid = ext.get("consumerGroup"), ext.get("clientId")
        try:
            h, rbody = proxy.call_client(cid, 307, ext, body or b"", timeout=10)
        except LookupError:
            return SYSTEM_ERROR, {}, None, "The Consumer <%s> <%s> not online" % (group, cid)
        except TimeoutError:
            return CONSUME_MSG_TIMEOUT, {}, None, "consumer <%s> <%s> Timeout" % (group, cid)
        return h["code"], h.get("extFields") or {}, rbody, h.get("remark")

    def create_subgroup(self, proxy, ext, body):                          # 200
        cfg = json.loads(body)
        self.subgroups[cfg["groupName"]] = cfg
        return SUCCESS, {}, None, None

    def default_subgroup(self, name):
        # what a broker creates for a group on its first heartbeat (autoCreateSubscriptionGroup)
        cfg = {"groupName": name, "consumeEnable": True, "consumeFromMinEnable": True, "consumeBroadcastEnable": True,
               "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
               "notifyConsumerIdsChangedEnable": True}
        if not self.version.startswith("4"):
            cfg.update({"consumeMessageOrderly": False, "groupSysFlag": 0, "consumeTimeoutMinute": 15,
                        "attributes": {}, "groupRetryPolicy": {"type": "CUSTOMIZED"}})
        return cfg

    def all_subgroups(self, proxy, ext, body):                            # 201
        table = {}
        for g in self.http("GET", "/api/groups?limit=500").get("groups", []):
            name = g["group"] if isinstance(g, dict) else g
            table[name] = self.default_subgroup(name)
        table.update(self.subgroups)
        wrapper = {"subscriptionGroupTable": table,
                   "dataVersion": {"counter": len(table), "stateVersion": 0, "timestamp": int(time.time() * 1000)}}
        return SUCCESS, {}, json.dumps(wrapper).encode(), None

    def delete_subgroup(self, proxy, ext, body):                          # 207
        self.subgroups.pop(ext["groupName"], None)
        return SUCCESS, {}, None, None

    def reset_offset(self, proxy, ext, body):                             # 222
        topic, group = ext["topic"], ext["group"]
        ts = int(ext["timestamp"])
        force = ext.get("isForce", "true") == "true"
        t = self.topic(topic)
        if t is None:
            return TOPIC_NOT_EXIST, {}, None, "[reset-offset] reset offset failed, no topic in this broker. topic=" + topic
        g = self.env.group(group) or {}
        ids = [c["clientId"] for c in g.get("consumers", [])]
        if not ids:
            return (CONSUMER_NOT_ONLINE, {}, None,
                    "Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d" % (group, topic, ts))
        entries, commits = [], {}
        for broker, r, w in self.queues(t):
            for q in range(w):
                co = self.offset(14, {"consumerGroup": group, "topic": topic, "queueId": q, "setZeroIfNotFound": "false"})
                if ts == -1:
                    to = self.offset(30, {"topic": topic, "queueId": q})
                else:
                    to = self.offset(29, {"topic": topic, "queueId": q, "timestamp": ts})
                to = max(to, 0)
                new = to if (force or to < co) else co
                entries.append(((topic, broker, q), new))
                commits[q] = new
        # server-side reset (the 5.x broker's default): store the offsets, drop the
        # clients' stale commits for those queues until their next pull, which
        # answers PULL_OFFSET_MOVED with the new offset (see __call__)
        c = wire.Client(self.env.remoting)
        try:
            for q, off in commits.items():
                c.request(15, {"consumerGroup": group, "topic": topic, "queueId": q, "commitOffset": off})
                self.reset_pending[(group, topic, q)] = off
        finally:
            c.close()
        text = '{"offsetTable":%s}' % mq_map(entries)
        return SUCCESS, {}, text.encode(), None
