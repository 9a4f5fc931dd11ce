"""Integration tests of the consistency check (GET /api/groups/{g}/consistency,
/converged, /allocation, /diagnostics; no false alarms): the
daemon's verdict against clients that really run a strategy (`rmqcoord sim`
answers GET_CONSUMER_RUNNING_INFO with its holdings and strategy) and raw
remoting connections that never answer. Standard library only; loopback only."""
import json
import os
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import BIN, Daemon, heartbeat_body, run_tests, stop_process  # noqa: E402
HEART_BEAT = 34
FAST = ("--heartbeat-ms", "1000", "--rebalance-ms", "1000", "--route-ms", "1000")


def get(d, path, timeout=30):
    """(status, json) of GET path on daemon d (any status)."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (d.http_port, path))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class Sim:
    """`rmqcoord sim` clients (they answer running info)."""

    def __init__(self, port, group, topic, *extra):
        self.proc = subprocess.Popen([BIN, "sim", "--namesrv", "127.0.0.1:%d" % port, "--group", group, "--topic",
                                      topic, "--quiet"] + list(FAST) + list(extra),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        stop_process(self.proc)


class Case(unittest.TestCase):
    def setUp(self):
        self.daemons, self.sims, self.conns = [], [], []

    def tearDown(self):
        for s in self.sims:
            s.stop()
        for c in self.conns:
            c.close()
        for d in reversed(self.daemons):
            alive = d.alive()
            rc = d.stop()
            if not alive or rc != 0:
                print(d.logtext(), file=sys.stderr)
            self.assertTrue(alive, "daemon died during the test")
            self.assertEqual(rc, 0, "daemon did not shut down cleanly")

    def daemon(self, *extra):
        d = Daemon(*extra)
        self.daemons.append(d)
        return d

    def sim(self, d, group, topic, *extra):
        s = Sim(d.port, group, topic, *extra)
        self.sims.append(s)
        return s

    def members(self, d, group, n, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st, j = get(d, "/api/groups/%s" % group)
            if st == 200 and len(j.get("consumers", [])) == n:
                return [c["clientId"] for c in j["consumers"]]
            time.sleep(0.1)
        self.fail("group %s never had %d members" % (group, n))

    def converged(self, d, group, query, timeout_ms=15000):
        st, j = get(d, "/api/groups/%s/converged?%s&timeout_ms=%d" % (group, query, timeout_ms))
        self.assertEqual(st, 200, "not converged: %s" % json.dumps(j)[:1500])
        self.assertIs(j["consistent"], True)
        return j

    def put_topic(self, d, topic, brokers):
        st, j = d.http("PUT", "/api/topics/%s" % topic, {"brokers": [
            {"brokerName": b, "readQueueNums": n, "writeQueueNums": n} for b, n in brokers]})
        self.assertEqual(st, 200, j)

    def silent_member(self, d, client_id, group, topic, model="CLUSTERING"):
        """A raw remoting connection: heartbeats, never answers running info."""
        c = d.connect()
        self.conns.append(c)
        r = c.request(HEART_BEAT, body=heartbeat_body(client_id, {group: [topic]}, model=model))
        self.assertEqual(r.code, 0)
        return c


class BroadcastTest(Case):
    def test_every_member_holds_every_queue(self):
        d = self.daemon("--topic", "T:8")
        self.sim(d, "G_bc", "T", "--clients", "2", "--broadcast")
        self.members(d, "G_bc", 2)
        j = self.converged(d, "G_bc", "topic=T&strategy=AVG")
        self.assertEqual(j["messageModel"], "BROADCASTING")
        for c in j["clients"]:
            self.assertEqual(len(c["expected"]), 8, c)
            self.assertTrue(c["matches"], c)
        self.assertEqual((j["overlaps"], j["gaps"]), ([], []))
        st, a = get(d, "/api/groups/G_bc/allocation?topic=T&strategy=AVG")
        self.assertEqual(st, 200)
        self.assertEqual(sorted(len(v) for v in a["allocation"].values()), [8, 8])
        self.assertEqual(a["overlaps"], [])


class StrategyListsTest(Case):
    def test_config_overlap_is_intended_and_unconfigured_queues_are_no_gaps(self):
        d = self.daemon()
        self.put_topic(d, "TS", [("broker-a", 4), ("broker-b", 4)])
        self.sim(d, "G_cfg", "TS", "--clients", "3", "--strategy", "CONFIG",
                 "--config-queues", "TS:broker-a:0,TS:broker-b:1")
        self.members(d, "G_cfg", 3)
        j = self.converged(d, "G_cfg", "topic=TS&strategy=CONFIG&config=broker-a:0,broker-b:1")
        self.assertEqual((j["overlaps"], j["gaps"]), ([], []))
        self.assertEqual(len(j["unassigned"]), 6)
        self.assertTrue(all(c["matches"] for c in j["clients"]))

    def test_machine_room_other_rooms_are_no_gaps(self):
        d = self.daemon()
        self.put_topic(d, "TM", [("roomA@broker-a", 4), ("roomB@broker-b", 4)])
        self.sim(d, "G_mr", "TM", "--clients", "3", "--strategy", "MACHINE_ROOM", "--consumer-idcs", "roomA")
        self.members(d, "G_mr", 3)
        j = self.converged(d, "G_mr", "topic=TM&strategy=MACHINE_ROOM&consumerIdcs=roomA")
        self.assertEqual(j["gaps"], [])
        self.assertEqual(sorted(q["brokerName"] for q in j["unassigned"]), ["roomB@broker-b"] * 4)

    def test_a_real_gap_is_still_reported(self):
        # the strategy gives the silent member queues nobody else holds: not a gap (it may hold them), but
        # an answering member that holds nothing of what AVG gives it leaves real gaps
        d = self.daemon("--topic", "T:4")
        self.sim(d, "G_gap", "T", "--clients", "2", "--strategy", "AVG_BY_CIRCLE")
        self.members(d, "G_gap", 2)
        st, j = get(d, "/api/groups/G_gap/converged?topic=T&strategy=AVG&timeout_ms=1500")
        self.assertEqual(st, 408, json.dumps(j)[:800])
        self.assertIs(j["consistent"], False)
        self.assertTrue(j["gaps"] or j["overlaps"] or not all(c["matches"] for c in j["clients"]))


class ReportedStrategyTest(Case):
    def test_default_strategy_is_the_clients(self):
        d = self.daemon("--topic", "T:8")
        self.sim(d, "G_ch", "T", "--clients", "3", "--strategy", "CONSISTENT_HASH")
        self.members(d, "G_ch", 3)
        j = self.converged(d, "G_ch", "topic=T")
        self.assertEqual((j["strategy"], j["strategySource"]), ("CONSISTENT_HASH", "clients"))
        self.assertEqual(sorted(set(j["reportedStrategies"].values())), ["CONSISTENT_HASH"])
        st, a = get(d, "/api/groups/G_ch/allocation?topic=T")
        self.assertEqual(st, 200, a)
        self.assertEqual((a["strategy"], a["strategySource"]), ("CONSISTENT_HASH", "clients"))
        held = {c["clientId"]: sorted(q["queueId"] for q in c["queues"]) for c in j["clients"]}
        self.assertEqual({k: sorted(q["queueId"] for q in v) for k, v in a["allocation"].items()}, held)
        # an explicit strategy still wins
        st, j = get(d, "/api/groups/G_ch/consistency?topic=T&strategy=AVG")
        self.assertEqual((st, j["strategy"], j["strategySource"]), (200, "AVG", "query"))

    def test_allocation_falls_back_to_avg_when_nobody_reports(self):
        d = self.daemon("--topic", "T:4")
        self.silent_member(d, "c1", "G_q", "T")
        t0 = time.monotonic()
        st, a = get(d, "/api/groups/G_q/allocation?topic=T&timeout_ms=200")
        self.assertEqual(st, 200, a)
        self.assertLess(time.monotonic() - t0, 2.0)
        self.assertEqual((a["strategy"], a["strategySource"]), ("AVG", "default"))
        self.assertEqual(len(a["allocation"]["c1"]), 4)


class ClusterTest(Case):
    def test_broker_checks_against_the_whole_route(self):
        ns = self.daemon("--role", "namesrv")
        brokers = [self.daemon("--role", "broker", "--namesrv", "127.0.0.1:%d" % ns.port, "--broker-name", name,
                               "--topic", "TC:4", "--register-interval-ms", "300") for name in ("broker-a", "broker-b")]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            st, j = get(ns, "/api/cluster")
            if st == 200 and len(j.get("brokers", [])) == 2:
                break
            time.sleep(0.1)
        self.sim(ns, "G_cl", "TC", "--clients", "3")
        for b in brokers:
            self.members(b, "G_cl", 3)
        for b in brokers:
            j = self.converged(b, "G_cl", "topic=TC&strategy=AVG")
            self.assertEqual(sum(len(c["expected"]) for c in j["clients"]), 8, json.dumps(j)[:1500])
            self.assertEqual((j["overlaps"], j["gaps"]), ([], []))


class SilentClientTest(Case):
    def test_nobody_answered_is_null_not_consistent(self):
        d = self.daemon("--topic", "T:4")
        self.silent_member(d, "quiet", "G_s", "T")
        st, j = get(d, "/api/groups/G_s/consistency?topic=T&strategy=AVG&timeout_ms=300")
        self.assertEqual(st, 200)
        self.assertIsNone(j["consistent"])
        self.assertEqual(j["unresponsive"], ["quiet"])
        st, j = get(d, "/api/groups/G_s/converged?topic=T&strategy=AVG&timeout_ms=800")
        self.assertNotEqual(st, 200)
        self.assertIsNone(j["consistent"])
        self.assertIs(j["converged"], False)

    def test_timeout_ms_is_honoured(self):
        d = self.daemon("--topic", "T:4")
        self.silent_member(d, "quiet", "G_t", "T")
        t0 = time.monotonic()
        st, j = get(d, "/api/groups/G_t/consistency?topic=T&strategy=AVG&timeout_ms=200")
        took = time.monotonic() - t0
        self.assertEqual(st, 200)
        self.assertLess(took, 1.5, "timeout_ms=200 took %.2f s (a fixed 3 s per client before)" % took)
        t0 = time.monotonic()
        st, j = get(d, "/api/groups/G_t/consistency?topic=T&strategy=AVG&timeout_ms=1200")
        took = time.monotonic() - t0
        self.assertGreaterEqual(took, 1.0)
        self.assertLess(took, 2.8)
        self.assertEqual(get(d, "/api/groups/G_t/consistency?topic=T&timeout_ms=60001")[0], 400)

    def test_silent_member_next_to_answering_ones(self):
        d = self.daemon("--topic", "T:4")
        self.sim(d, "G_mix", "T", "--clients", "1", "--client-id", "sim-1")
        self.members(d, "G_mix", 1)
        self.silent_member(d, "zz-quiet", "G_mix", "T")
        self.members(d, "G_mix", 2)
        time.sleep(2.5)  # the sim rebalances (NOTIFY) to its half
        st, j = get(d, "/api/groups/G_mix/consistency?topic=T&strategy=AVG&timeout_ms=500")
        self.assertEqual(st, 200)
        self.assertEqual(j["unresponsive"], ["zz-quiet"])
        self.assertIs(j["consistent"], True, json.dumps(j)[:1200])
        self.assertEqual(j["gaps"], [])


class DiagnosticsTest(Case):
    def test_joins_that_settle_the_table_are_no_disagreement(self):
        # ali-ons joins with one heartbeat and adds its retry topic in the next: one subscription event
        # right after each join; three such joins used to raise subscriptionsDisagree
        d = self.daemon("--topic", "T:4")
        for i in range(3):
            c = d.connect()
            self.conns.append(c)
            cid = "127.0.0.1@c%d" % i
            self.assertEqual(c.request(HEART_BEAT, body=heartbeat_body(cid, {"G_ons": ["T"]})).code, 0)
            self.assertEqual(c.request(HEART_BEAT, body=heartbeat_body(cid, {"G_ons": ["T", "%RETRY%G_ons"]})).code, 0)
        st, j = get(d, "/api/groups/G_ons/diagnostics")
        self.assertEqual(st, 200)
        self.assertGreaterEqual(j["subscriptionChangesLast10Min"], 3)
        self.assertNotIn("subscriptionsDisagree", [i["kind"] for i in j["issues"]], j)

    def test_members_that_disagree_are_reported(self):
        d = self.daemon("--topic", "T1:4", "--topic", "T2:4")
        x, y = d.connect(), d.connect()
        self.conns += [x, y]
        for _ in range(3):
            x.request(HEART_BEAT, body=heartbeat_body("x", {"G_dis": ["T1"]}))
            y.request(HEART_BEAT, body=heartbeat_body("y", {"G_dis": ["T2"]}))
        st, j = get(d, "/api/groups/G_dis/diagnostics")
        self.assertIn("subscriptionsDisagree", [i["kind"] for i in j["issues"]], j)


if __name__ == "__main__":
    run_tests("consistency")
