#!/usr/bin/env python3
"""Runs the real RocketMQ `mqadmin` (MQAdminStartup) against rmqcoord.

For each tool version: a fresh daemon behind a recording proxy (the daemon
advertises the proxy as its broker address, so name-server and broker
traffic both pass through it), committed offsets, a live consumer group of
simulated consumers (`rmqcoord sim`), then every command in one JVM
(MqadminBatch), each checked against what the daemon really has.

Output: TAP-like lines, then `# xfail N`, `# pass N`, `# fail N`. A check
listed in expected_failures.txt that fails counts as xfail (with the request
codes the tool sent and what rmqcoord answered); one that passes is reported
as XPASS and counts as a failure, so the entry gets removed.
Exit status 0 when `fail` is 0.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import daemon  # noqa: E402
import procs  # noqa: E402
import wire  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

GROUP = "GID_MQA"            # the live group (simulated consumers)
TOPIC = "TopicMqa"           # its topic, 4 queues, offsets committed before the sim starts
TOPIC2 = "TopicMqaTwo"       # a second topic, 2 queues
TOPIC_DEL = "TopicMqaDel"    # deleted by deleteTopic
TOPIC_NEW = "TopicMqaNew"    # created by updateTopic (3/3 queues)
SUB_NEW = "GID_MQA_NEW"      # created by updateSubGroup, read by getConsumerConfig, deleted by deleteSubGroup
CLONE_DST = "GID_MQA_CLONE"  # cloneGroupOffset destination
CLIENTS = 2
CLIENT_PREFIX = "127.0.0.1@mqa"
OFFSETS = {0: 100, 1: 101, 2: 102, 3: 103}   # committed per queue of TOPIC before the sim starts
HIGH_GROUP = "GID_MQA_HIGH"                  # another group, further ahead: the queues' max offsets
HIGH_OFFSETS = {0: 200, 1: 201, 2: 202, 3: 203}
CLUSTER = "DefaultCluster"
BROKER = "broker-a"

# Request code names, for reports (RocketMQ RequestCode / ResponseCode).
REQ = {10: "SEND_MESSAGE", 11: "PULL_MESSAGE", 14: "QUERY_CONSUMER_OFFSET", 15: "UPDATE_CONSUMER_OFFSET",
       17: "UPDATE_AND_CREATE_TOPIC", 21: "GET_ALL_TOPIC_CONFIG", 25: "UPDATE_BROKER_CONFIG",
       26: "GET_BROKER_CONFIG", 28: "GET_BROKER_RUNTIME_INFO", 29: "SEARCH_OFFSET_BY_TIMESTAMP",
       30: "GET_MAX_OFFSET", 31: "GET_MIN_OFFSET", 32: "GET_EARLIEST_MSG_STORETIME", 34: "HEART_BEAT",
       35: "UNREGISTER_CLIENT", 38: "GET_CONSUMER_LIST_BY_GROUP", 40: "NOTIFY_CONSUMER_IDS_CHANGED",
       41: "LOCK_BATCH_MQ", 42: "UNLOCK_BATCH_MQ", 100: "PUT_KV_CONFIG", 101: "GET_KV_CONFIG",
       102: "DELETE_KV_CONFIG", 103: "REGISTER_BROKER", 105: "GET_ROUTEINFO_BY_TOPIC",
       106: "GET_BROKER_CLUSTER_INFO", 200: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
       201: "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", 202: "GET_TOPIC_STATS_INFO", 203: "GET_CONSUMER_CONNECTION_LIST",
       204: "GET_PRODUCER_CONNECTION_LIST", 206: "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
       207: "DELETE_SUBSCRIPTIONGROUP", 208: "GET_CONSUME_STATS", 215: "DELETE_TOPIC_IN_BROKER",
       216: "DELETE_TOPIC_IN_NAMESRV", 219: "GET_KVLIST_BY_NAMESPACE", 220: "RESET_CONSUMER_CLIENT_OFFSET",
       221: "GET_CONSUMER_STATUS_FROM_CLIENT", 222: "INVOKE_BROKER_TO_RESET_OFFSET",
       223: "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", 224: "GET_TOPICS_BY_CLUSTER",
       300: "QUERY_TOPIC_CONSUME_BY_WHO", 303: "QUERY_CONSUME_TIME_SPAN", 307: "GET_CONSUMER_RUNNING_INFO",
       308: "QUERY_CORRECTION_OFFSET", 314: "CLONE_GROUP_OFFSET", 351: "GET_TOPIC_CONFIG",
       352: "GET_SUBSCRIPTIONGROUP_CONFIG", 353: "UPDATE_AND_GET_GROUP_FORBIDDEN"}
# Where FINDINGS.md specifies each code rmqcoord lacked when this harness was written.
SPEC = {206: "3.1", 202: "3.2", 351: "3.3", 28: "3.4", 17: "3.5", 215: "3.6", 216: "3.6", 102: "3.7",
        208: "3.8", 307: "3.9", 200: "3.10", 201: "3.11", 207: "3.12", 222: "3.13"}
RESP = {0: "SUCCESS", 1: "SYSTEM_ERROR", 2: "SYSTEM_BUSY", 3: "REQUEST_CODE_NOT_SUPPORTED",
        17: "TOPIC_NOT_EXIST", 22: "QUERY_NOT_FOUND", 24: "SUBSCRIPTION_NOT_EXIST", 26: "SUBSCRIPTION_GROUP_NOT_EXIST",
        206: "CONSUMER_NOT_ONLINE", 207: "CONSUME_MSG_TIMEOUT"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- daemon

class Env:
    """One daemon + proxy + sim for one tool version."""

    def __init__(self, binary, workdir, debug_log):
        self.binary, self.workdir = binary, workdir
        self.proxy = wire.RecordingProxy()
        self.errlog = open(os.path.join(workdir, "rmqcoord.log"), "wb")
        args = [binary, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                "--store", os.path.join(workdir, "x.db"), "--advertise", self.proxy.addr,
                "--cluster", CLUSTER, "--broker-name", BROKER, "--topic", "%s:4" % TOPIC, "--topic", "%s:2" % TOPIC2,
                "--topic", "%s:2" % TOPIC_DEL]
        if debug_log:
            args += ["--log-level", "debug"]
        try:
            self.daemon, ready = daemon.start(args, stderr=self.errlog, timeout=10, stdin=subprocess.DEVNULL)
        except daemon.StartError as e:
            self.daemon = e.proc
            self.proxy.close()
            raise RuntimeError("daemon did not start: %r (see %s)" % (e.line, self.errlog.name))
        self.remoting, self.http_addr = ready.fields["remoting"], ready.fields["http"]
        self.proxy.start(self.remoting)
        self.sim = None


    def http(self, path):
        with urllib.request.urlopen("http://%s%s" % (self.http_addr, path), timeout=5) as r:
            return json.loads(r.read())

    def topics(self):
        names, cursor = [], None
        for _ in range(100):
            q = "/api/topics?limit=500" + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
            page = self.http(q)
            for t in page.get("topics", []):
                names.append(t["topic"] if isinstance(t, dict) else t)
            cursor = page.get("next")
            if not cursor:
                break
        return names

    def topic(self, name):
        try:
            return self.http("/api/topics/" + urllib.parse.quote(name, safe=""))
        except urllib.error.HTTPError:
            return None

    def group(self, name):
        try:
            return self.http("/api/groups/" + urllib.parse.quote(name, safe=""))
        except urllib.error.HTTPError:
            return None

    def offsets(self, group, topic, queues):
        c = wire.Client(self.remoting)
        try:
            out = {}
            for q in queues:
                h, _ = c.request(14, {"consumerGroup": group, "topic": topic, "queueId": q,
                                      "setZeroIfNotFound": "false"})
                out[q] = int(h["extFields"]["offset"]) if h["code"] == 0 else None
            return out
        finally:
            c.close()

    def max_offsets(self, topic, queues):
        c = wire.Client(self.remoting)
        try:
            out = {}
            for q in queues:
                h, _ = c.request(30, {"topic": topic, "queueId": q})
                out[q] = int(h["extFields"]["offset"]) if h["code"] == 0 else None
            return out
        finally:
            c.close()

    def commit(self, group, topic, offsets):
        c = wire.Client(self.remoting)
        try:
            for q, off in offsets.items():
                h, _ = c.request(15, {"consumerGroup": group, "topic": topic, "queueId": q, "commitOffset": off})
                if h["code"] != 0:
                    raise RuntimeError("commit failed: %r" % h)
        finally:
            c.close()

    def start_sim(self):
        self.simout = open(os.path.join(self.workdir, "sim.out"), "wb")
        self.simerr = open(os.path.join(self.workdir, "sim.err"), "wb")
        self.sim = subprocess.Popen(
            [self.binary, "sim", "--namesrv", self.proxy.addr, "--group", GROUP, "--topic", TOPIC,
             "--clients", str(CLIENTS), "--client-prefix", CLIENT_PREFIX, "--persist-ms", "1000",
             "--duration-ms", "600000"],
            stdout=self.simout, stderr=self.simerr, stdin=subprocess.DEVNULL)
        # wait until both members are in the group and hold all queues
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            g = self.group(GROUP)
            if g and len(g.get("consumers", [])) == CLIENTS:
                held = self.holdings()
                if len(held) == CLIENTS and sum(len(qs) for qs in held.values()) == 4:
                    return
            time.sleep(0.2)
        raise RuntimeError("simulated consumers did not settle (see %s)" % self.simerr.name)

    def holdings(self):
        """clientId -> sorted queue ids of TOPIC it holds, from the sim's latest lines."""
        held = {}
        with open(self.simout.name) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("topic") == TOPIC and "clientId" in rec:
                    held[rec["clientId"]] = sorted(q["queueId"] for q in rec.get("queues", []))
        return held

    def close(self):
        if self.sim:
            procs.stop(self.sim)
        procs.stop(self.daemon)
        self.proxy.close()
        self.errlog.close()


# ---------------------------------------------------------------- checks

def client_ids():
    return ["%s-%d" % (CLIENT_PREFIX, i) for i in range(CLIENTS)]


def failed_text(res):
    """The tool's own failure signs: mqadmin returns normally after printing the exception."""
    bad = []
    if res["timeout"]:
        bad.append("timed out")
    m = re.search(r"^(\S*(?:Exception|Error)\b.*)$", res["err"], re.M)
    if m:
        bad.append("tool printed: " + m.group(1)[:300])
    m = re.search(r"CODE: *(-?\d+) +DESC: *([^\n]*)", res["err"] + res["out"])
    if m and not bad:
        bad.append("tool printed: CODE %s DESC %s" % (m.group(1), m.group(2)[:200]))
    return bad


def want(cond, msg, problems):
    if not cond:
        problems.append(msg)


def check_success(env, res, ctx):
    """updateSubGroup, deleteSubGroup: the tool says it worked."""
    p = []
    want("success" in res["out"], "no 'success' printed", p)
    return p


def printed_group_config(out, group):
    return re.search(r"^groupName\s+=\s+%s\s*$" % re.escape(group), out, re.M)


def check_topicList(env, res, ctx):
    p = []
    listed = set(res["out"].split())
    for t in ctx["topics_before"]:
        want(t in listed, "topic %s (known to the daemon) not listed" % t, p)
    return p


def check_topicRoute(env, res, ctx):
    p = []
    try:
        text = res["out"][res["out"].index("{"):]
        # the tool pretty-prints brokerAddrs with bare numeric keys ({0:"addr"})
        route = json.loads(re.sub(r'([{,]\s*)(-?\d+):', r'\1"\2":', text))
    except ValueError:
        return ["no route JSON printed"]
    qd = route.get("queueDatas") or []
    want(sum(q.get("readQueueNums", 0) for q in qd) == 4, "queueDatas do not hold 4 read queues: %r" % qd, p)
    addrs = [a for b in route.get("brokerDatas") or [] for a in (b.get("brokerAddrs") or {}).values()]
    want(env.proxy.addr in addrs, "broker address %s not in brokerDatas %r" % (env.proxy.addr, addrs), p)
    return p


def check_topicStatus(env, res, ctx):
    p = []
    rows = [r for r in (l.split() for l in res["out"].splitlines()) if len(r) >= 4 and r[1].isdigit()]
    want(sorted(int(r[1]) for r in rows) == [0, 1, 2, 3], "want one row per queue 0..3, got %r" % rows, p)
    for r in rows:
        q = int(r[1])
        want(r[2] == "0" and r[3] == str(ctx["max"][q]),
             "queue %d min/max offset %s/%s, the daemon answers GET_MAX_OFFSET %s" % (q, r[2], r[3], ctx["max"][q]), p)
    return p


def check_updateTopic(env, res, ctx):
    p = check_success(env, res, ctx)
    t = env.topic(TOPIC_NEW)
    want(t is not None, "topic %s not created in the daemon" % TOPIC_NEW, p)
    if t:
        b = (t.get("brokers") or [{}])[0]
        want(b.get("readQueueNums") == 3 and b.get("writeQueueNums") == 3,
             "topic %s has %r, want 3/3 queues" % (TOPIC_NEW, b), p)
    return p


def check_deleteTopic(env, res, ctx):
    p = []
    want("from NameServer success" in res["out"], "no 'delete topic ... from NameServer success' printed", p)
    want(TOPIC_DEL not in env.topics(), "topic %s still known to the daemon" % TOPIC_DEL, p)
    return p


def check_clusterList(env, res, ctx):
    p = []
    rows = [l.split() for l in res["out"].splitlines() if l.split()[:1] == [CLUSTER]]
    want(any(len(r) >= 4 and r[1] == BROKER and r[2] == "0" and r[3] == env.proxy.addr for r in rows),
         "no row '%s %s 0 %s' in %r" % (CLUSTER, BROKER, env.proxy.addr, rows), p)
    return p


def check_consumerConnection(env, res, ctx):
    p = []
    for cid in client_ids():
        want(cid in res["out"], "client id %s not listed" % cid, p)
    want(TOPIC in res["out"], "subscription topic %s not listed" % TOPIC, p)
    want("CLUSTERING" in res["out"], "message model not printed", p)
    return p


def progress_rows(out):
    rows = []
    for l in out.splitlines():
        f = l.split()
        if len(f) >= 5 and f[0] == TOPIC and f[2].isdigit():
            rows.append(f)
    return rows


def check_consumerProgress(env, res, ctx):
    p = []
    rows = progress_rows(res["out"])
    want(sorted(int(r[2]) for r in rows) == [0, 1, 2, 3], "want one row per queue 0..3 of %s, got %r" % (TOPIC, rows), p)
    for r in rows:
        q = int(r[2])
        want(r[3] == str(ctx["max"][q]) and r[4] == str(ctx["offsets"][q]),
             "queue %d broker/consumer offsets %s/%s, want max offset %s / committed %s"
             % (q, r[3], r[4], ctx["max"][q], ctx["offsets"][q]), p)
    return p


def check_consumerStatus(env, res, ctx):
    p = []
    for cid in client_ids():
        want(cid in res["out"], "client id %s not in the status table" % cid, p)
    # the tool's own analysis of the running infos it got from every client
    want("Same subscription in the same group of consumer" in res["out"],
         "no 'Same subscription in the same group of consumer' verdict", p)
    want("Rebalance OK" in res["out"], "no 'Rebalance OK' verdict (overlapping or missing queues?)", p)
    return p


def check_consumerStatusOne(env, res, ctx):
    """The client's own running info: its subscription, and in '#Consumer Offset#'
    exactly the queues the sim says it holds, at the committed offsets."""
    p = []
    cid = client_ids()[0]
    out = res["out"]
    want("#Consumer Subscription#" in out and re.search(r"Topic: %s\s" % re.escape(TOPIC), out),
         "no subscription of %s in the running info of %s" % (TOPIC, cid), p)
    rows = []
    if "#Consumer Offset#" in out:
        for line in out.split("#Consumer Offset#", 1)[1].splitlines()[2:]:
            f = line.split()
            if not f:
                break
            if len(f) == 4 and f[0] == TOPIC:
                rows.append((int(f[2]), int(f[3])))
    held = ctx["holdings"].get(cid)
    want(sorted(q for q, _ in rows) == held,
         "queues of %s in '#Consumer Offset#' %r, the sim holds %r" % (TOPIC, rows, held), p)
    for q, off in rows:
        want(off == ctx["offsets"].get(q), "queue %d consumer offset %d, committed %s" % (q, off, ctx["offsets"].get(q)), p)
    return p


def check_allocateMQ(env, res, ctx):
    p = []
    try:
        j = json.loads(res["out"][res["out"].index("{"):])
    except ValueError:
        return ["no allocation JSON printed"]
    result = j.get("result") or {}
    want(sorted(result) == ["10.0.0.1", "10.0.0.2"], "result keys %r" % sorted(result), p)
    got = sorted(q["queueId"] for v in result.values() for q in v)
    want(got == [0, 1, 2, 3], "allocated queues %r" % got, p)
    # the tool feeds AVG an unsorted set of queues, so only the shares are fixed
    want(all(len(v) == 2 for v in result.values()), "want 2 queues each: %r" % result, p)
    return p


def check_getConsumerConfig(env, res, ctx):
    p = []
    want(printed_group_config(res["out"], SUB_NEW), "no 'groupName = %s' printed" % SUB_NEW, p)
    # updateSubGroup sent consumeBroadcastEnable=false and consumeFromMinEnable=false (the tool's defaults)
    want(re.search(r"^consumeBroadcastEnable\s+=\s+false\s*$", res["out"], re.M),
         "the stored config does not keep consumeBroadcastEnable=false as sent by updateSubGroup", p)
    return p


def check_getConsumerConfigLive(env, res, ctx):
    """A group that only ever heartbeated has the config a broker creates for it."""
    p = []
    want(printed_group_config(res["out"], GROUP), "no 'groupName = %s' printed for the live group" % GROUP, p)
    return p


def check_getConsumerConfigDeleted(env, res, ctx):
    """After deleteSubGroup the broker has no config for the group: nothing is printed."""
    p = []
    want(res["out"].strip() == "", "config still printed after deleteSubGroup: %r" % res["out"][:200], p)
    return p


def check_resetOffsetByTime(env, res, ctx):
    p = []
    rows = [l.split() for l in res["out"].splitlines()
            if len(l.split()) == 3 and l.split()[0] == BROKER and l.split()[1].isdigit()]
    got = {int(r[1]): int(r[2]) for r in rows}
    want(sorted(got) == [0, 1, 2, 3], "want one '#brokerName #queueId #offset' row per queue 0..3, got %r" % rows, p)
    # "now": 4.9.8 sends timestamp -1 (the queue's max offset), 5.3.3 the current time
    # (the daemon stores no messages, so a search by time also answers the max offset)
    for q, off in got.items():
        want(off == ctx["max"].get(q), "queue %d reset to %d, the daemon's max offset is %s" % (q, off, ctx["max"].get(q)), p)
    # the sim persists its offsets every second: wait past that, so a stale
    # commit that overwrote the reset would show
    time.sleep(1.5)
    after = env.offsets(GROUP, TOPIC, range(4))
    for q in got:
        want(after.get(q) == got[q], "queue %d committed offset %s after the reset, want %s" % (q, after.get(q), got[q]), p)
    return p


def check_cloneGroupOffset(env, res, ctx):
    p = []
    want("success" in res["out"].lower(), "no 'success' printed", p)
    # compared with the source's offsets before the batch: resetOffsetByTime runs later and moves them
    got = env.offsets(CLONE_DST, TOPIC, range(4))
    src = ctx["offsets"]
    want(got == src, "%s offsets %r, source %s had %r" % (CLONE_DST, got, GROUP, src), p)
    return p


def commands(ns, env):
    """(id, args, check). Order matters: later commands see earlier effects."""
    n = ["-n", ns]
    cid = client_ids()[0]
    return [
        ("topicList", ["topicList"] + n, check_topicList),
        ("topicRoute", ["topicRoute", "-t", TOPIC] + n, check_topicRoute),
        ("topicStatus", ["topicStatus", "-t", TOPIC] + n, check_topicStatus),
        ("clusterList", ["clusterList"] + n, check_clusterList),
        ("updateTopic", ["updateTopic", "-c", CLUSTER, "-t", TOPIC_NEW, "-r", "3", "-w", "3"] + n, check_updateTopic),
        ("deleteTopic", ["deleteTopic", "-c", CLUSTER, "-t", TOPIC_DEL] + n, check_deleteTopic),
        ("consumerConnection", ["consumerConnection", "-g", GROUP] + n, check_consumerConnection),
        ("consumerProgress", ["consumerProgress", "-g", GROUP] + n, check_consumerProgress),
        ("consumerStatus", ["consumerStatus", "-g", GROUP] + n, check_consumerStatus),
        ("consumerStatus-i", ["consumerStatus", "-g", GROUP, "-i", cid] + n, check_consumerStatusOne),
        ("allocateMQ", ["allocateMQ", "-t", TOPIC, "-i", "10.0.0.1,10.0.0.2"] + n, check_allocateMQ),
        ("updateSubGroup", ["updateSubGroup", "-c", CLUSTER, "-g", SUB_NEW] + n, check_success),
        ("getConsumerConfig", ["getConsumerConfig", "-g", SUB_NEW] + n, check_getConsumerConfig),
        ("getConsumerConfig-live", ["getConsumerConfig", "-g", GROUP] + n, check_getConsumerConfigLive),
        ("deleteSubGroup", ["deleteSubGroup", "-c", CLUSTER, "-g", SUB_NEW] + n, check_success),
        ("getConsumerConfig-deleted", ["getConsumerConfig", "-g", SUB_NEW] + n, check_getConsumerConfigDeleted),
        ("cloneGroupOffset", ["cloneGroupOffset", "-s", GROUP, "-d", CLONE_DST, "-t", TOPIC] + n,
         check_cloneGroupOffset),
        ("resetOffsetByTime", ["resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "now"] + n,
         check_resetOffsetByTime),
    ]


# ---------------------------------------------------------------- run

def describe(ex):
    req, resp = ex["req"], ex["resp"]
    name = REQ.get(req["code"], "?")
    who = "tool->daemon" if req["dir"] == "c2s" else "daemon->client"
    s = "%s %d %s ext=%s" % (who, req["code"], name, json.dumps(req["extFields"], sort_keys=True))
    if req["bodyLen"]:
        s += " body=%s" % req["body"][:200]
    if resp is None:
        s += " -> (no reply)"
    else:
        s += " -> %d %s" % (resp["code"], RESP.get(resp["code"], ""))
        if resp.get("remark"):
            s += " remark=%r" % resp["remark"]
    return s


def run_version(version, args, expected, results):
    classpath = open(os.path.join(args.cache, "cp-%s.txt" % version)).read().strip()
    workdir = tempfile.mkdtemp(prefix="mqadmin-%s-" % version)
    home = os.path.join(workdir, "home")
    os.makedirs(os.path.join(home, "conf"))
    shutil.copy(os.path.join(HERE, "logback_tools.xml"), os.path.join(home, "conf", "logback_tools.xml"))
    env = None
    ok = False
    try:
        env = Env(args.bin, workdir, debug_log=True)
        if args.stub:
            import stub
            stub.KEY_STYLE = args.stub_keys
            env.proxy.intercept = stub.Stub(env, version)
        env.commit(GROUP, TOPIC, OFFSETS)
        env.commit(HIGH_GROUP, TOPIC, HIGH_OFFSETS)
        env.start_sim()
        ctx = {"topics_before": env.topics(), "offsets": env.offsets(GROUP, TOPIC, range(4)),
               "max": env.max_offsets(TOPIC, range(4)), "holdings": env.holdings()}
        cmds = commands(env.proxy.addr, env)
        if args.only:
            cmds = [c for c in cmds if c[0] in args.only]
        batch = "".join("\t".join([cid] + a) + "\n" for cid, a, _ in cmds)
        jvm = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:+UseSerialGC",
               "-Drocketmq.home.dir=" + home, "-Duser.home=" + home,
               "-Drocketmq.client.logRoot=" + os.path.join(home, "logs"),
               "-Dmqadmin.batch.timeoutMs=%d" % (args.command_timeout * 1000),
               "-cp", os.path.join(args.cache, "classes") + os.pathsep + classpath, "MqadminBatch"]
        jenv = dict(os.environ, ROCKETMQ_HOME=home, NAMESRV_ADDR=env.proxy.addr)
        t0 = time.monotonic()
        # consumerStatus writes one file per client under the working directory
        p = subprocess.run(jvm, input=batch, capture_output=True, text=True, env=jenv, cwd=workdir,
                           timeout=args.command_timeout * (len(cmds) + 2))
        log("# %s: %d commands in one JVM, %.1f s" % (version, len(cmds), time.monotonic() - t0))
        outs = {}
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                outs[r["id"]] = r
        if p.returncode != 0 or len(outs) != len(cmds):
            log(p.stderr[-3000:])
        # checks run after the whole batch: a check that reads the daemon's state sees
        # what later commands left too, so each command touches its own names, and
        # the one that moves GROUP's offsets (resetOffsetByTime) runs last
        records = env.proxy.snapshot()
        for cid, a, check in cmds:
            tid = "%s %s" % (version, cid)
            res = outs.get(cid)
            if res is None:
                problems = ["no result from the JVM"]
                exch = []
            else:
                problems = failed_text(res)
                try:
                    problems += check(env, res, ctx)
                except Exception as e:  # a check must not stop the run
                    problems.append("check raised %r" % e)
                exch = wire.exchanges(records, res["startMs"], res["endMs"] + 20)
            results.append({"id": tid, "version": version, "command": cid, "args": a, "problems": problems,
                            "expected": tid in expected, "exchanges": exch, "result": res})
        with open(os.path.join(workdir, "traffic.jsonl"), "w") as f:
            for r in env.proxy.snapshot():   # including what the checks' waits saw
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(workdir, "results.jsonl"), "w") as f:
            for r in outs.values():
                f.write(json.dumps(r) + "\n")
        ok = True
    finally:
        if env is not None:
            env.close()
        if args.keep or not ok:
            log("# %s: kept %s" % (version, workdir))
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def load_expected(path):
    out = set()
    if os.path.exists(path):
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if line:
                out.add(" ".join(line.split()[:2]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--cache", required=True, help="holds cp-VERSION.txt and classes/")
    ap.add_argument("--versions", default="4.9.8,5.3.3")
    ap.add_argument("--expected", default=os.path.join(HERE, "expected_failures.txt"))
    ap.add_argument("--only", nargs="*", help="command ids to run")
    ap.add_argument("--command-timeout", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="keep each version's work dir (logs, traffic.jsonl)")
    ap.add_argument("--report", help="write every result with its traffic as JSON here")
    ap.add_argument("--stub", action="store_true",
                    help="answer the codes rmqcoord lacks from stub.py (the spec of FINDINGS.md) in the proxy; "
                         "expected_failures.txt is ignored")
    ap.add_argument("--stub-keys", choices=("object", "string"), default="object",
                    help="with --stub: write MessageQueue map keys as fastjson does (object) or as quoted JSON text")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every exchange of every command")
    args = ap.parse_args()
    expected = set() if args.stub else load_expected(args.expected)
    results = []
    t0 = time.monotonic()
    for v in args.versions.split(","):
        try:
            run_version(v.strip(), args, expected, results)
        except Exception as e:  # a broken setup is a failure, not a crash
            results.append({"id": "%s setup" % v.strip(), "version": v.strip(), "command": "setup", "args": [],
                            "problems": ["setup failed: %r" % e], "expected": False, "exchanges": [], "result": None})
    npass = nfail = nxfail = 0
    for i, r in enumerate(results, 1):
        ok = not r["problems"]
        if ok and not r["expected"]:
            npass += 1
            print("ok %d - %s" % (i, r["id"]))
        elif not ok and r["expected"]:
            nxfail += 1
            print("not ok %d - %s # TODO expected failure" % (i, r["id"]))
        elif ok and r["expected"]:
            nfail += 1
            print("not ok %d - %s # XPASS: works now, remove it from expected_failures.txt" % (i, r["id"]))
        else:
            nfail += 1
            print("not ok %d - %s" % (i, r["id"]))
        if not ok or args.verbose:
            for prob in r["problems"]:
                print("#   problem: %s" % prob)
            unsupported = sorted({e["req"]["code"] for e in r["exchanges"]
                                  if e["resp"] and e["resp"]["code"] == 3})
            if unsupported:
                print("#   not supported by rmqcoord: %s" % ", ".join(
                    "%d %s" % (c, REQ.get(c, "?")) for c in unsupported))
                specs = ["%d: FINDINGS.md %s" % (c, SPEC[c]) for c in unsupported if c in SPEC]
                if specs:
                    print("#   reply the tool needs: %s" % ", ".join(specs))
            for e in r["exchanges"]:
                if args.verbose or e["req"]["code"] not in (105, 34, 35, 40):
                    print("#   %s" % describe(e))
    print("# run time %.1f s" % (time.monotonic() - t0))
    print("# xfail %d" % nxfail)
    print("# pass %d" % npass)
    print("# fail %d" % nfail)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
