"""Scripted request sequences run against both the real RocketMQ pair and rmqcoord.

A scenario is a function of a Recorder `t` (harness.py): `t.conn(name)` is a
logical client connection, `t.ns(...)` sends a name-server code, `t.br(...)`
a broker code, `t.close(c)` closes a connection, `t.wait(s)` listens. Group
and client names come from `t.g()` / `t.cid()` so scenarios sharing a server
never meet. Never branch on a reply: both sides must run the same steps.
"""
import time

# rmqcoord flag sets; each (version, profile) gets its own daemon
COORD_PROFILES = {
    "default": [],
    "noauto": ["--auto-create-queues", "0"],
    "expiry": ["--channel-expiry-ms", "3000"],
    "expiry-compat": ["--channel-expiry-ms", "3000", "--notify-on-expiry", "off", "--expiry-scan-ms", "10000"],
}
# extra broker.conf lines for real pairs other than the default one
REAL_PROFILES = {
    "expiry": ["channelExpiredTimeout=3000"],
}

SCENARIOS = []


class Scenario:
    def __init__(self, fn, name, doc, versions="*", real_profile="default", coord_profile="default", skip=None):
        self.fn, self.name, self.doc = fn, name, doc
        self.versions, self.real_profile, self.coord_profile, self.skip = versions, real_profile, coord_profile, skip

    def applies(self, v):
        return self.versions == "*" or any(v.startswith(p) for p in self.versions)

    def skip_reason(self, v):
        return self.skip or "not applicable to %s" % v


def scenario(name, versions="*", real="default", coord="default", skip=None):
    def deco(fn):
        SCENARIOS.append(Scenario(fn, name, (fn.__doc__ or "").strip(), versions, real, coord, skip))
        return fn
    return deco


def mq(topic, qid, broker="broker-a"):
    return {"brokerName": broker, "queueId": qid, "topic": topic}


def lock_body(t, client, group, mqs):
    b = {"clientId": client, "consumerGroup": group, "mqSet": mqs}
    if t.is_v5:
        b["onlyThisBroker"] = False
    return b


def offset_ext(t, group, topic, qid, **more):
    e = {"consumerGroup": group, "topic": topic, "queueId": qid, "bname": "broker-a"}
    e.update(more)
    return e


def pull_ext(t, group, topic, qid, offset=0, sysflag=0, suspend=1000, commit=0, subversion=1700000000000):
    e = {"consumerGroup": group, "topic": topic, "queueId": qid, "queueOffset": offset, "maxMsgNums": 32,
         "sysFlag": sysflag, "commitOffset": commit, "suspendTimeoutMillis": suspend, "subVersion": subversion,
         "expressionType": "TAG", "bname": "broker-a"}
    if t.is_v5:
        e["maxMsgBytes"] = 262144
    return e


def two_members(t, subs=("TopicA",), **kw):
    """Connections c1 and c2, and the group g both join with the subscriptions subs."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: list(subs)}, **kw)
    t.hb(c2, t.cid("c2"), {g: list(subs)}, **kw)
    return c1, c2, g


def subscription_change(doc, subs, changes):
    """A scenario: two members join with subs, then each (member, subscriptions, label) in changes
    heartbeats and c2 asks for the group's connection list (203)."""
    def run(t):
        c1, c2, g = two_members(t, subs)
        conns = {"c1": c1, "c2": c2}
        for who, new_subs, label in changes:
            t.hb(conns[who], t.cid(who), {g: new_subs}, label=label)
            t.br(c2, 203, {"consumerGroup": g})
    run.__doc__ = doc
    return run


def ns_request(doc, *args, **kw):
    """A scenario of one name-server request on c1: t.ns(c1, *args, **kw)."""
    def run(t):
        t.ns(t.conn("c1"), *args, **kw)
    run.__doc__ = doc
    return run


def retry_route(t):
    c = t.conn("c1")
    g = t.g()
    t.ns(c, 105, {"topic": "%RETRY%" + g}, label="retry route before heartbeat")
    t.hb(c, t.cid("c1"), {g: ["TopicA"]})
    t.wait(1.0, "let the broker register the retry topic")
    t.ns(c, 105, {"topic": "%RETRY%" + g}, label="retry route after heartbeat")


# --------------------------------------------------------------------------- name server: routes

scenario("route/json-v409")(ns_request(
    "GET_ROUTEINFO_BY_TOPIC (105), JSON header, client version 409 (>= 401: quoted brokerAddrs keys).",
    105, {"topic": "TopicA"}, version=409))


scenario("route/json-v317")(ns_request(
    "105 from a version-317 client (Go's version, < 401): bare brokerAddrs keys.",
    105, {"topic": "TopicA"}, version=317, language="GO"))


scenario("route/json-v479")(ns_request(
    "105 from a 5.3.3 client (version 479).",
    105, {"topic": "TopicB"}, version=479))


@scenario("route/json-v121-acceptStandardJsonOnly")
def _(t):
    """105 from version 121 (ali-ons) with and without acceptStandardJsonOnly=true."""
    c = t.conn("c1")
    t.ns(c, 105, {"topic": "TopicC"}, version=121)
    t.ns(c, 105, {"topic": "TopicC", "acceptStandardJsonOnly": "true"}, version=121)


@scenario("route/rocketmq-binary")
def _(t):
    """105 with a ROCKETMQ binary header, versions 409 and 317."""
    c = t.conn("c1")
    t.ns(c, 105, {"topic": "TopicA"}, serialize=1, version=409)
    t.ns(c, 105, {"topic": "TopicA"}, serialize=1, version=317)


@scenario("route/unknown-topic")
def _(t):
    """105 for a topic nobody created (rmqcoord default: auto-create 8 queues)."""
    c = t.conn("c1")
    t.ns(c, 105, {"topic": "Nope_" + t.tag})
    t.ns(c, 105, {"topic": "Nope_" + t.tag}, label="again")


@scenario("route/unknown-topic-noauto", coord="noauto")
def _(t):
    """105 for a topic nobody created, rmqcoord with --auto-create-queues 0."""
    c = t.conn("c1")
    t.ns(c, 105, {"topic": "Nope_" + t.tag})


@scenario("route/retry-topic")
def _(t):
    """%RETRY%<group> route before and after the group's first heartbeat."""
    retry_route(t)


scenario("route/default-topic-TBW102")(ns_request(
    "Route of TBW102, the default topic a broker with autoCreateTopicEnable registers (producers use it).",
    105, {"topic": "TBW102"}))


scenario("route/cluster-info")(ns_request(
    "GET_BROKER_CLUSTER_INFO (106) on the name server.",
    106))


# --------------------------------------------------------------------------- broker codes, both encodings

def _consumer_codes(t, ser):
    c = t.conn("c1")
    g, cid = t.g(), t.cid("c1")
    t.hb(c, cid, {g: ["TopicA", "%RETRY%" + g]}, serialize=ser)
    t.br(c, 38, {"consumerGroup": g}, serialize=ser)
    t.br(c, 203, {"consumerGroup": g}, serialize=ser)
    t.br(c, 15, offset_ext(t, g, "TopicA", 0, commitOffset=7), serialize=ser, label="commit offset q0=7 (sync)")
    t.br(c, 14, offset_ext(t, g, "TopicA", 0), serialize=ser, label="query q0")
    t.br(c, 14, offset_ext(t, g, "TopicA", 1), serialize=ser, label="query q1 never committed")
    t.br(c, 30, {"topic": "TopicA", "queueId": 0, "bname": "broker-a"}, serialize=ser)
    t.br(c, 31, {"topic": "TopicA", "queueId": 0, "bname": "broker-a"}, serialize=ser)
    t.br(c, 29, {"topic": "TopicA", "queueId": 0, "timestamp": 1700000000000, "bname": "broker-a"}, serialize=ser)
    t.br(c, 32, {"topic": "TopicA", "queueId": 0, "bname": "broker-a"}, serialize=ser)
    t.br(c, 11, pull_ext(t, g, "TopicA", 1, sysflag=0), serialize=ser, label="pull q1 no suspend", timeout=8)
    t.br(c, 41, None, lock_body(t, cid, g, [mq("TopicA", 0)]), serialize=ser)
    t.br(c, 42, None, lock_body(t, cid, g, [mq("TopicA", 0)]), serialize=ser)
    t.br(c, 46, None, {"clientId": cid, "group": g,
                       "subscriptionData": {"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                            "subString": "*", "subVersion": 1700000000000, "tagsSet": [],
                                            "topic": "TopicA"}}, serialize=ser)
    t.br(c, 35, {"clientID": cid, "consumerGroup": g}, serialize=ser)


@scenario("codes/json")
def _(t):
    """Every broker code a consumer sends, JSON headers: 34, 38, 203, 15, 14, 30, 31, 29, 32, 11, 41, 42, 46, 35."""
    _consumer_codes(t, 0)


@scenario("codes/rocketmq-binary")
def _(t):
    """The same sequence with ROCKETMQ binary headers."""
    _consumer_codes(t, 1)


@scenario("codes/old-client-v317")
def _(t):
    """Heartbeat, consumer list and offset query from a version-317 (Go-like) client."""
    c = t.conn("c1")
    g, cid = t.g(), t.cid("c1")
    t.hb(c, cid, {g: ["TopicA"]}, version=317, language="GO")
    t.br(c, 38, {"consumerGroup": g}, version=317, language="GO")
    t.br(c, 14, offset_ext(t, g, "TopicA", 2), version=317, language="GO")


@scenario("codes/send-back-lite-pull-assignment")
def _(t):
    """CONSUMER_SEND_MSG_BACK (36) of a message that does not exist; 5.x: LITE_PULL_MESSAGE (361), QUERY_ASSIGNMENT (400)."""
    c = t.conn("c1")
    g, cid = t.g(), t.cid("c1")
    t.hb(c, cid, {g: ["TopicA"]})
    t.br(c, 36, {"offset": 123456, "group": g, "delayLevel": 0, "originMsgId": "0A0000000000000000000000",
                 "originTopic": "TopicA", "unitMode": "false", "maxReconsumeTimes": 16, "bname": "broker-a"},
         label="send back a message that is not stored")
    if t.is_v5:
        t.br(c, 361, pull_ext(t, g, "TopicA", 3, sysflag=16), label="lite pull q3", timeout=8)
        t.br(c, 400, None, {"clientId": cid, "consumerGroup": g, "messageModel": "CLUSTERING",
                            "strategyName": "AVG", "topic": "TopicA"}, label="query assignment AVG")


# --------------------------------------------------------------------------- membership

@scenario("member/join-reheartbeat-unregister-close")
def _(t):
    """Join, second member, re-heartbeat, UNREGISTER with the socket open, close of the unregistered and of the last member."""
    c1, c2, c3 = t.conn("c1"), t.conn("c2"), t.conn("c3")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, label="c1 joins")
    t.hb(c2, t.cid("c2"), {g: ["TopicA"]}, label="c2 joins")
    t.br(c1, 38, {"consumerGroup": g})
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, label="c1 re-heartbeat")
    t.br(c2, 35, {"clientID": t.cid("c2"), "consumerGroup": g}, label="c2 unregisters, socket open")
    t.br(c1, 38, {"consumerGroup": g})
    t.close(c2, "c2 closes (already unregistered)")
    t.close(c1, "c1 closes (last member)")
    t.br(c3, 38, {"consumerGroup": g}, label="c3 asks for the empty group")
    t.br(c3, 203, {"consumerGroup": g}, label="c3 connection list of the empty group")


scenario("member/subscription-new-topic")(subscription_change(
    "A member adds a topic to the group's subscriptions.",
    ["TopicA"], [("c1", ["TopicA", "TopicB"], "c1 adds TopicB")]))
scenario("member/subscription-removed-topic")(subscription_change(
    "A member drops a topic from the group's subscriptions.",
    ["TopicA", "TopicB"], [("c1", ["TopicA"], "c1 drops TopicB"),
                           ("c2", ["TopicA", "TopicB"], "c2 still lists TopicB (flapping)")]))
scenario("member/subscription-newer-subversion")(subscription_change(
    "Same topic with a newer subVersion, then an older one.",
    [("TopicA", "*", 1700000000000)], [("c1", [("TopicA", "*", 1700000005000)], "newer subVersion"),
                                       ("c2", [("TopicA", "*", 1600000000000)], "older subVersion")]))
scenario("member/subscription-changed-expression")(subscription_change(
    "Expression changed with the same subVersion, then with a newer one.",
    [("TopicA", "*", 1700000000000)],
    [("c1", [("TopicA", "TagA || TagB", 1700000000000)], "new expression, same subVersion"),
     ("c1", [("TopicA", "TagA || TagB", 1700000009000)], "new expression, newer subVersion")]))


@scenario("member/broadcast")
def _(t):
    """Two BROADCASTING members join and one leaves."""
    c1, c2, g = two_members(t, model="BROADCASTING")
    t.br(c1, 38, {"consumerGroup": g})
    t.close(c2)


@scenario("member/unregister-not-in-group")
def _(t):
    """UNREGISTER_CLIENT from a channel that never joined the group."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]})
    t.br(c2, 35, {"clientID": t.cid("c2"), "consumerGroup": g}, label="c2 (not a member) unregisters")
    t.br(c2, 35, {"clientID": t.cid("c2"), "consumerGroup": "Unknown_" + t.tag}, label="unregister from an unknown group")
    t.br(c1, 38, {"consumerGroup": g})


@scenario("member/duplicate-client-ids")
def _(t):
    """Two channels heartbeat with the same client id."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g, cid = t.g(), t.cid("dup")
    t.hb(c1, cid, {g: ["TopicA"]})
    t.hb(c2, cid, {g: ["TopicA"]})
    t.br(c1, 38, {"consumerGroup": g})
    t.br(c1, 203, {"consumerGroup": g})
    t.br(c2, 35, {"clientID": cid, "consumerGroup": g}, label="c2 unregisters the shared id")
    t.br(c1, 38, {"consumerGroup": g})


@scenario("member/one-channel-two-groups")
def _(t):
    """One channel in two groups; its close notifies the members of both."""
    c1, c2, c3 = t.conn("c1"), t.conn("c2"), t.conn("c3")
    g1, g2 = t.g("G1"), t.g("G2")
    t.hb(c1, t.cid("c1"), {g1: ["TopicA"], g2: ["TopicB"]}, label="c1 joins G1 and G2")
    t.hb(c2, t.cid("c2"), {g1: ["TopicA"]}, label="c2 joins G1")
    t.hb(c3, t.cid("c3"), {g2: ["TopicB"]}, label="c3 joins G2")
    t.close(c1)
    t.br(c2, 38, {"consumerGroup": g1})
    t.br(c3, 38, {"consumerGroup": g2})


@scenario("member/client-id-changes-on-channel")
def _(t):
    """The same channel heartbeats with a different client id."""
    c1, c2, g = two_members(t)
    t.hb(c1, t.cid("c1new"), {g: ["TopicA"]}, label="c1 heartbeats as another id")
    t.br(c2, 38, {"consumerGroup": g})


@scenario("member/oneway-heartbeat")
def _(t):
    """A heartbeat flagged oneway: no reply, still a join."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]})
    t.hb(c2, t.cid("c2"), {g: ["TopicA"]}, flag=2, label="c2 oneway heartbeat")
    t.br(c1, 38, {"consumerGroup": g})


@scenario("member/heartbeat-v2", versions=("5.",))
def _(t):
    """Heartbeat v2: fingerprint, withoutSub, IS_SUB_CHANGE."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, v2=(1111, False), label="c1 full heartbeat, fingerprint 1111")
    t.hb(c1, t.cid("c1"), {g: []}, v2=(1111, True), label="c1 withoutSub, same fingerprint")
    t.br(c1, 203, {"consumerGroup": g})
    t.hb(c2, t.cid("c2"), {g: []}, v2=(1111, True), label="c2 first heartbeat is withoutSub")
    t.br(c1, 38, {"consumerGroup": g})
    t.hb(c1, t.cid("c1"), {g: []}, v2=(2222, True), label="c1 withoutSub, new fingerprint")
    t.hb(c1, t.cid("c1"), {g: ["TopicA", "TopicB"]}, v2=(2222, False), label="c1 full heartbeat, fingerprint 2222, adds TopicB")
    t.br(c1, 203, {"consumerGroup": g})
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, v2=(0, False), label="c1 v1 heartbeat (fingerprint 0)")


@scenario("member/heartbeat-v2-fields-on-4.9", versions=("4.",))
def _(t):
    """A 5.x-style heartbeat (fingerprint, withoutSub) sent to a 4.9 broker."""
    c1 = t.conn("c1")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, v2=(1111, False))
    t.hb(c1, t.cid("c1"), {g: []}, v2=(1111, True), label="withoutSub with an empty set")
    t.br(c1, 203, {"consumerGroup": g})


@scenario("member/pull-consumer-and-producer")
def _(t):
    """A CONSUME_ACTIVELY (pull) member and a heartbeat that carries only a producer group."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, consume_type="CONSUME_ACTIVELY")
    t.hb(c2, t.cid("c2"), {}, producers=["P_" + t.tag])
    t.br(c1, 38, {"consumerGroup": g})
    t.br(c1, 38, {"consumerGroup": "P_" + t.tag}, label="consumer list of a producer group")


@scenario("member/unregister-then-rejoin")
def _(t):
    """UNREGISTER with the socket open, then a heartbeat on the same socket: a new join."""
    c1, c2, g = two_members(t)
    t.br(c2, 35, {"clientID": t.cid("c2"), "consumerGroup": g}, label="c2 unregisters")
    t.hb(c2, t.cid("c2"), {g: ["TopicA"]}, label="c2 heartbeats again on the same socket")
    t.br(c1, 38, {"consumerGroup": g})
    t.br(c2, 35, {"clientID": t.cid("c2"), "producerGroup": "P_" + t.tag}, label="unregister a producer group only")
    t.br(c1, 38, {"consumerGroup": g})


@scenario("member/group-dropped-from-heartbeat")
def _(t):
    """A channel in G1 and G2 heartbeats with G1 only: does it leave G2?"""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g1, g2 = t.g("G1"), t.g("G2")
    t.hb(c1, t.cid("c1"), {g1: ["TopicA"], g2: ["TopicB"]}, label="c1 joins G1 and G2")
    t.hb(c2, t.cid("c2"), {g2: ["TopicB"]}, label="c2 joins G2")
    t.hb(c1, t.cid("c1"), {g1: ["TopicA"]}, label="c1 heartbeats with G1 only")
    t.br(c2, 38, {"consumerGroup": g2})
    t.br(c2, 203, {"consumerGroup": g2})


scenario("member/empty-subscription-v1")(subscription_change(
    "A v1 heartbeat (no fingerprint) with an empty subscription set: the group's topics are removed.",
    ["TopicA"], [("c1", [], "c1 heartbeats with no subscriptions")]))


# --------------------------------------------------------------------------- expiry (5.x: channelExpiredTimeout is settable)

def _expiry(t):
    c1, c2, g = two_members(t)
    # c1 heartbeats 13 times, about every 1.3 s (≈17 s: longer than expiry 3 s + the broker's 10 s scan),
    # c2 stays silent; one summarized step. Count-bounded so both sides send the same number; 40 s cap.
    t.begin_summary()
    deadline = time.monotonic() + 40
    n = 0
    while n < 13 and time.monotonic() < deadline:
        n += 1
        t.hb(c1, t.cid("c1"), {g: ["TopicA"]})
        t.wait(1.0)
    t.end_summary("13 heartbeats of c1 over about 17 s, c2 silent")
    t.br(c1, 38, {"consumerGroup": g})


@scenario("expiry/silent-member", versions=("5.",), real="expiry", coord="expiry",
          skip="4.9 brokers have a fixed 120 s channel expiry")
def _(t):
    """A silent member expires (real: channelExpiredTimeout=3000; rmqcoord: --channel-expiry-ms 3000)."""
    _expiry(t)


@scenario("expiry/silent-member-compat", versions=("5.",), real="expiry", coord="expiry-compat",
          skip="4.9 brokers have a fixed 120 s channel expiry")
def _(t):
    """The same with rmqcoord --notify-on-expiry off --expiry-scan-ms 10000."""
    _expiry(t)


# --------------------------------------------------------------------------- offsets

@scenario("offsets/commit-query")
def _(t):
    """Commit (sync and oneway), query with and without setZeroIfNotFound, a queue never committed, min/max, search."""
    c = t.conn("c1")
    g = t.g()
    t.hb(c, t.cid("c1"), {g: ["TopicA"]})
    t.br(c, 14, offset_ext(t, g, "TopicA", 0), label="query q0 before any commit")
    t.br(c, 14, offset_ext(t, g, "TopicA", 0, setZeroIfNotFound="false"), label="query q0 setZeroIfNotFound=false")
    t.br(c, 14, offset_ext(t, g, "TopicA", 0, setZeroIfNotFound="true"), label="query q0 setZeroIfNotFound=true")
    t.br(c, 15, offset_ext(t, g, "TopicA", 0, commitOffset=12), label="commit q0=12 sync")
    t.br(c, 15, offset_ext(t, g, "TopicA", 1, commitOffset=3), flag=2, label="commit q1=3 oneway")
    t.br(c, 14, offset_ext(t, g, "TopicA", 0), label="query q0")
    t.br(c, 14, offset_ext(t, g, "TopicA", 1), label="query q1")
    t.br(c, 15, offset_ext(t, g, "TopicA", 0, commitOffset=4), label="commit q0=4 (backwards)")
    t.br(c, 14, offset_ext(t, g, "TopicA", 0), label="query q0 after backwards commit")
    t.br(c, 30, {"topic": "TopicA", "queueId": 0, "bname": "broker-a"}, label="max offset q0")
    t.br(c, 31, {"topic": "TopicA", "queueId": 0, "bname": "broker-a"}, label="min offset q0")
    t.br(c, 29, {"topic": "TopicA", "queueId": 0, "timestamp": int(time.time() * 1000) - 60000, "bname": "broker-a"},
         label="search q0 by timestamp (a minute ago)")
    t.br(c, 32, {"topic": "TopicA", "queueId": 0, "bname": "broker-a"}, label="earliest store time q0")
    t.br(c, 30, {"topic": "TopicA", "queueId": 99, "bname": "broker-a"}, label="max offset of queue 99")
    t.br(c, 14, offset_ext(t, g, "TopicA", 99), label="query queue 99")
    t.br(c, 14, offset_ext(t, "Other_" + t.tag, "TopicA", 0), label="query for a group never seen")


@scenario("offsets/unknown-topic")
def _(t):
    """Offset codes on a topic that does not exist."""
    c = t.conn("c1")
    g, topic = t.g(), "Nope_" + t.tag
    t.br(c, 15, offset_ext(t, g, topic, 0, commitOffset=5), label="commit on an unknown topic")
    t.br(c, 14, offset_ext(t, g, topic, 0), label="query on an unknown topic")
    t.br(c, 30, {"topic": topic, "queueId": 0}, label="max offset on an unknown topic")
    t.br(c, 31, {"topic": topic, "queueId": 0}, label="min offset on an unknown topic")
    t.br(c, 32, {"topic": topic, "queueId": 0}, label="earliest time on an unknown topic")


# --------------------------------------------------------------------------- pulls

@scenario("pull/no-messages")
def _(t):
    """PULL_MESSAGE on empty queues: no suspend, suspend 1 s, offset beyond the end, commit through a pull."""
    c = t.conn("c1")
    g = t.g()
    t.hb(c, t.cid("c1"), {g: ["TopicA"]})
    t.br(c, 11, pull_ext(t, g, "TopicA", 0, sysflag=0), label="pull q0 offset 0, no suspend", timeout=8)
    t.br(c, 11, pull_ext(t, g, "TopicA", 0, sysflag=2, suspend=1000), label="pull q0 offset 0, suspend 1 s", timeout=8)
    t.br(c, 11, pull_ext(t, g, "TopicA", 1, offset=5, sysflag=0), label="pull q1 offset 5 (beyond the end)", timeout=8)
    t.br(c, 11, pull_ext(t, g, "TopicA", 2, sysflag=1, commit=6), label="pull q2 with COMMIT_OFFSET 6", timeout=8)
    t.br(c, 14, offset_ext(t, g, "TopicA", 2), label="query q2 after the pull commit")
    t.br(c, 11, pull_ext(t, g, "TopicA", 9, sysflag=0), label="pull queue 9 (beyond the topic)", timeout=8)


@scenario("pull/errors")
def _(t):
    """Pulls that a broker refuses: no subscription, unknown topic, newer subVersion, missing fields."""
    c = t.conn("c1")
    g = t.g()
    t.br(c, 11, pull_ext(t, g, "TopicA", 0), label="pull before any heartbeat", timeout=8)
    t.hb(c, t.cid("c1"), {g: [("TopicA", "*", 1700000000000)]})
    t.br(c, 11, pull_ext(t, g, "TopicB", 0), label="pull a topic the group does not subscribe", timeout=8)
    t.br(c, 11, pull_ext(t, g, "Nope_" + t.tag, 0), label="pull an unknown topic", timeout=8)
    t.br(c, 11, pull_ext(t, g, "TopicA", 0, subversion=1800000000000), label="pull with a newer subVersion", timeout=8)
    t.br(c, 11, {"consumerGroup": g, "topic": "TopicA"}, label="pull without queueId etc.", timeout=8)


@scenario("pull/held-pull-and-membership-change")
def _(t):
    """A held pull (suspend 3 s) while a second member joins: released early or held?"""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    t.hb(c1, t.cid("c1"), {g: ["TopicA"]})
    h = t.send_async("broker", c1, 11, pull_ext(t, g, "TopicA", 0, sysflag=2, suspend=3000), label="c1 pull, suspend 3 s")
    t.hb(c2, t.cid("c2"), {g: ["TopicA"]}, label="c2 joins while c1's pull is held")
    t.await_async(h, timeout=8, buckets=(1.0,))


# --------------------------------------------------------------------------- locks

@scenario("locks/lock-relock-unlock-expiry")
def _(t):
    """LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: lock, relock by another client, unlock, oneway unlock, lease expiry (4 s both sides)."""
    c1, c2, g = two_members(t)
    a, b = t.cid("c1"), t.cid("c2")
    t.br(c1, 41, None, lock_body(t, a, g, [mq("TopicA", 0), mq("TopicA", 1)]), label="c1 locks q0 q1")
    t.br(c1, 41, None, lock_body(t, a, g, [mq("TopicA", 0)]), label="c1 relocks q0")
    t.br(c2, 41, None, lock_body(t, b, g, [mq("TopicA", 1), mq("TopicA", 2)]), label="c2 locks q1 q2")
    t.br(c2, 42, None, lock_body(t, b, g, [mq("TopicA", 0)]), label="c2 unlocks q0 (held by c1)")
    t.br(c2, 41, None, lock_body(t, b, g, [mq("TopicA", 0)]), label="c2 locks q0 (still c1's)")
    t.br(c1, 42, None, lock_body(t, a, g, [mq("TopicA", 0)]), label="c1 unlocks q0")
    t.br(c2, 41, None, lock_body(t, b, g, [mq("TopicA", 0)]), label="c2 locks q0")
    t.br(c2, 42, None, lock_body(t, b, g, [mq("TopicA", 2)]), flag=2, label="c2 unlocks q2 oneway")
    t.br(c1, 41, None, lock_body(t, a, g, [mq("TopicA", 2)]), label="c1 locks q2")
    t.wait(4.6, "lease expiry (4 s)")
    t.br(c2, 41, None, lock_body(t, b, g, [mq("TopicA", 1)]), label="c2 locks q1 after c1's lease expired")
    t.br(c1, 41, None, lock_body(t, a, g, [mq("TopicA", 1), mq("TopicA", 3)]), label="c1 locks q1 q3")


@scenario("locks/other-brokers-and-groups")
def _(t):
    """Locks with a queue of another broker name, an empty set and a group that never heartbeated."""
    c1 = t.conn("c1")
    g, a = t.g(), t.cid("c1")
    t.br(c1, 41, None, lock_body(t, a, g, [mq("TopicA", 0)]), label="lock without any heartbeat")
    t.br(c1, 41, None, lock_body(t, a, g, [mq("TopicA", 0, "broker-zz")]), label="lock a queue of broker-zz")
    t.br(c1, 41, None, lock_body(t, a, g, []), label="lock an empty set")


# --------------------------------------------------------------------------- errors

@scenario("errors/missing-fields")
def _(t):
    """Required header fields missing."""
    c = t.conn("c1")
    g = t.g()
    t.ns(c, 105, {}, label="105 without topic")
    t.br(c, 38, {}, label="38 without consumerGroup")
    t.br(c, 14, {"consumerGroup": g, "topic": "TopicA"}, label="14 without queueId")
    t.br(c, 15, {"consumerGroup": g, "topic": "TopicA", "queueId": "0"}, label="15 without commitOffset")
    t.br(c, 35, {"consumerGroup": g}, label="35 without clientID")
    t.br(c, 30, {"topic": "TopicA"}, label="30 without queueId")
    t.br(c, 203, {}, label="203 without consumerGroup")
    t.br(c, 14, {"consumerGroup": g, "topic": "TopicA", "queueId": "x"}, label="14 with a non-numeric queueId")


@scenario("errors/malformed-bodies")
def _(t):
    """Heartbeat and lock bodies that are not what the broker expects."""
    c, c2 = t.conn("c1"), t.conn("c2")
    t.br(c, 34, {} if t.is_v5 else None, b"not json", label="heartbeat body not JSON")
    t.br(c, 34, {} if t.is_v5 else None, b"", label="heartbeat without body")
    t.br(c, 34, {} if t.is_v5 else None, {"consumerDataSet": [{"groupName": t.g()}]}, label="heartbeat without clientID")
    t.br(c, 41, None, b"{bad", label="lock body not JSON")
    t.br(c, 41, None, b"", label="lock without body")
    t.br(c2, 42, None, {"consumerGroup": t.g()}, label="unlock without clientId and mqSet")
    t.br(c2, 38, {"consumerGroup": t.g()}, label="still connected?")


@scenario("errors/unknown-codes")
def _(t):
    """Unknown request codes on the name server and the broker, normal and oneway."""
    c = t.conn("c1")
    t.ns(c, 9999, {}, label="unknown code to the name server", timeout=2.0)
    t.br(c, 9999, {}, label="unknown code to the broker", timeout=2.0)
    t.br(c, 9999, {}, flag=2, label="unknown code to the broker, oneway")
    t.ns(c, 9999, {}, flag=2, label="unknown code to the name server, oneway")
    t.ns(c, 101, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"}, label="GET_KV_CONFIG", timeout=2.0)
    t.br(c, 38, {"consumerGroup": t.g()}, label="connection still usable")


@scenario("errors/connection-list-and-check-config")
def _(t):
    """203 for an unknown group; 46 for SQL92; 307 for a client not online."""
    c = t.conn("c1")
    g, cid = t.g(), t.cid("c1")
    t.br(c, 203, {"consumerGroup": "Unknown_" + t.tag}, label="203 unknown group")
    t.br(c, 46, None, {"clientId": cid, "group": g,
                       "subscriptionData": {"classFilterMode": False, "codeSet": [], "expressionType": "SQL92",
                                            "subString": "a > 1", "subVersion": 1700000000000, "tagsSet": [],
                                            "topic": "TopicA"}}, label="46 SQL92")
    t.br(c, 307, {"consumerGroup": g, "clientId": cid, "jstackEnable": "false"}, label="307 for a client not online")


# --------------------------------------------------------------------------- other clients' header and body shapes

def _hdr(code, ext, style):
    import json as _j
    if style == "cpp":  # jsoncpp FastWriter: sorted keys, CPP, 333, empty remark, ACL keys, trailing newline
        e = {"AccessKey": "", "OnsChannel": "", "Signature": ""}
        e.update(ext)
        return _j.dumps({"code": code, "extFields": e, "flag": 0, "language": "CPP", "opaque": 0, "remark": "",
                         "serializeTypeCurrentRPC": "JSON", "version": 333}, sort_keys=True,
                        separators=(",", ":")).replace('"opaque":0', '"opaque":$OPAQUE') + "\n"
    if style == "go":  # struct order, extFields always present
        return ('{"code":%d,"language":"GO","version":317,"opaque":$OPAQUE,"flag":0,"remark":"","extFields":%s}'
                % (code, _j.dumps(ext, separators=(",", ":"))))
    # ali-ons: JS types kept in extFields
    return ('{"code":%d,"language":"JAVA","opaque":$OPAQUE,"flag":0,"version":121,"extFields":%s}'
            % (code, _j.dumps(ext, separators=(",", ":"))))


def keyed_heartbeat(t, g, sub):
    """c1's heartbeat body in the key order ali-ons and Go clients write, with one subscription sub."""
    return {"clientID": t.cid("c1"), "producerDataSet": [], "consumerDataSet": [
        {"groupName": g, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False, "subscriptionDataSet": [sub]}]}


@scenario("clients/cpp-shapes")
def _(t):
    """C++ 2.x shapes: numeric enums, string subVersion, no tagsSet/codeSet, ACL keys, trailing newline."""
    c1, c2 = t.conn("c1"), t.conn("c2")
    g = t.g()
    body = ('{"clientID":"%s","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"%s",'
            '"messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1700000000000","topic":"TopicA"}]}]}\n'
            % (t.cid("c1"), g)).encode()
    t.br(c1, 34, raw_header=_hdr(34, {}, "cpp"), body=body, label="C++ heartbeat")
    t.br(c2, 38, raw_header=_hdr(38, {"consumerGroup": g}, "cpp"), label="C++ consumer list")
    t.br(c2, 203, {"consumerGroup": g}, label="connection list (stored enums)")
    t.br(c1, 15, raw_header=_hdr(15, {"consumerGroup": g, "topic": "TopicA", "queueId": "1", "commitOffset": "9"}, "cpp"),
         label="C++ commit (flag 0)")
    t.br(c1, 14, raw_header=_hdr(14, {"consumerGroup": g, "topic": "TopicA", "queueId": "1"}, "cpp"), label="C++ query")


@scenario("clients/ali-ons-shapes")
def _(t):
    """ali-ons shapes: numbers in extFields, version 121, commit of -1."""
    c1 = t.conn("c1")
    g = t.g()
    body = keyed_heartbeat(t, g, {"topic": "TopicA", "subString": "*", "classFilterMode": False, "tagsSet": [],
                                  "codeSet": [], "subVersion": 1700000000000})
    t.br(c1, 34, raw_header=_hdr(34, {}, "ons"), body=body, label="ali-ons heartbeat")
    t.br(c1, 38, raw_header=_hdr(38, {"consumerGroup": g}, "ons"), label="ali-ons consumer list")
    t.br(c1, 15, raw_header=_hdr(15, {"consumerGroup": g, "topic": "TopicA", "queueId": 2, "commitOffset": 11}, "ons"),
         label="commit with numeric extFields")
    t.br(c1, 14, raw_header=_hdr(14, {"consumerGroup": g, "topic": "TopicA", "queueId": 2}, "ons"), label="query with numeric queueId")
    t.br(c1, 15, raw_header=_hdr(15, {"consumerGroup": g, "topic": "TopicA", "queueId": 3, "commitOffset": -1}, "ons"),
         label="commit -1")
    t.br(c1, 14, raw_header=_hdr(14, {"consumerGroup": g, "topic": "TopicA", "queueId": 3}, "ons"), label="query after -1")


@scenario("clients/go-shapes")
def _(t):
    """Go shapes: struct key order, GO language, nanosecond subVersion, upper-case model."""
    c1 = t.conn("c1")
    g = t.g()
    body = keyed_heartbeat(t, g, {"classFilterMode": False, "topic": "TopicA", "subString": "*", "tagsSet": [],
                                  "codeSet": [], "subVersion": 1700000000000000000, "expressionType": "TAG"})
    t.br(c1, 34, raw_header=_hdr(34, {}, "go"), body=body, label="Go heartbeat")
    t.br(c1, 38, raw_header=_hdr(38, {"consumerGroup": g}, "go"), label="Go consumer list")
    t.br(c1, 203, {"consumerGroup": g}, label="connection list")
    t.ns(c1, 105, raw_header=_hdr(105, {"topic": "TopicA"}, "go"), label="Go route")


# --------------------------------------------------------------------------- more membership edge cases

@scenario("member/close-with-held-pull")
def _(t):
    """A member closes while its pull is held; the other member is notified."""
    c1, c2, g = two_members(t)
    t.send_async("broker", c2, 11, pull_ext(t, g, "TopicA", 1, sysflag=2, suspend=3000), label="c2 pull, suspend 3 s")
    t.close(c2, "c2 closes with its pull held")
    t.br(c1, 38, {"consumerGroup": g})


@scenario("route/retry-topic-noauto", coord="noauto")
def _(t):
    """%RETRY%<group> route before and after the first heartbeat, rmqcoord --auto-create-queues 0."""
    retry_route(t)


# --------------------------------------------------------------------------- auto-create off (runs last: it flips the real broker's config)

@scenario("autocreate/off", coord="noauto")
def _(t):
    """Real broker switched to autoCreateTopicEnable=false, autoCreateSubscriptionGroup=false at run time
    (UPDATE_BROKER_CONFIG, not recorded); rmqcoord with --auto-create-queues 0. A new group heartbeats,
    lists, pulls, commits; routes of an unknown topic and of the group's retry topic."""
    t.real_only(25, None, b"autoCreateTopicEnable=false\nautoCreateSubscriptionGroup=false\n")
    try:
        c1, c2 = t.conn("c1"), t.conn("c2")
        g = t.g()
        t.ns(c1, 105, {"topic": "Nope_" + t.tag}, label="route of an unknown topic")
        t.hb(c1, t.cid("c1"), {g: ["TopicA"]}, label="c1 joins a group with no config")
        t.hb(c2, t.cid("c2"), {g: ["TopicA"]}, label="c2 joins")
        t.br(c1, 38, {"consumerGroup": g})
        t.wait(1.0)
        t.ns(c1, 105, {"topic": "%RETRY%" + g}, label="retry route")
        t.br(c1, 11, pull_ext(t, g, "TopicA", 0, sysflag=0), label="pull", timeout=8)
        t.br(c1, 15, offset_ext(t, g, "TopicA", 0, commitOffset=3), label="commit")
        t.br(c1, 14, offset_ext(t, g, "TopicA", 0), label="query")
        t.br(c1, 41, None, lock_body(t, t.cid("c1"), g, [mq("TopicA", 0)]), label="lock")
    finally:
        t.real_only(25, None, b"autoCreateTopicEnable=true\nautoCreateSubscriptionGroup=true\n")
