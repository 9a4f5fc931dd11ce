"""A recorded mixed run — one client that ignores NOTIFY
(`rmqcoord sim --no-notify`, like ali-ons) with a short timer, and clients
that act on NOTIFY (`rmqcoord sim`) — replays with the double consumption
found by default: replay infers from the recorded GET_CONSUMER_LIST_BY_GROUP
queries who ignores NOTIFY and its timer period, reports the overlap with
its interval and names the cause. No replay flag is needed; --client
overrides still replace what was inferred."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from mixed_run import record_mixed_run, records, replay  # noqa: E402

SLOW_MS = 4000


class ReplayInferTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rmqcoord-infer-")
        cls.trace = record_mixed_run(cls.tmp, SLOW_MS, 5.5)

    def records(self, *flags):
        return records(self.trace, *flags)

    def test_trace_has_queries(self):
        codes = set()
        with open(self.trace) as f:
            for line in f:
                r = json.loads(line)
                if r.get("event") == "request":
                    codes.add(r["code"])
        self.assertIn(38, codes, "GET_CONSUMER_LIST_BY_GROUP was not recorded")

    def test_behaviour_inferred(self):
        beh = {r["client"]: r for r in self.records() if r["type"] == "behaviour"}
        slow = beh["10.0.0.2@slow-0"]
        self.assertFalse(slow["notify"], slow)
        self.assertEqual(slow["notifySource"], "inferred")
        # measured from the query spacing: a loaded machine fires timers late
        self.assertLessEqual(abs(slow["rebalanceMs"] - SLOW_MS), SLOW_MS // 10, slow)
        self.assertEqual(slow["periodSource"], "inferred")
        fast = [r for c, r in beh.items() if c.startswith("10.0.0.3@fast")]
        # re-queried right after the late join's NOTIFY
        self.assertGreaterEqual(fast[0]["reacted"], 1, fast)
        self.assertEqual(len(fast), 2, beh)
        for r in fast:
            self.assertTrue(r["notify"], r)
            self.assertEqual(r["notifySource"], "inferred")

    def test_default_replay_finds_the_overlap_and_its_cause(self):
        recs = self.records()
        labels = {r["label"]: r["clientId"] for r in recs if r["type"] == "client"}
        ov = [r for r in recs if r["type"] == "overlap"]
        self.assertTrue(ov, "no overlap found by default")
        for r in ov:
            self.assertIn("10.0.0.2@slow-0", [labels[x] for x in r["owners"].split(",")])
            self.assertEqual(r["cause"]["client"], "10.0.0.2@slow-0")
            # from a fast client's join to the slow client's next timer round: under one period
            self.assertGreater(r["ms"], 0)
            self.assertLessEqual(r["ms"], SLOW_MS + 500, r)
        tot = [r for r in recs if r["type"] == "totals"][0]
        self.assertEqual(tot["overlaps"], len(ov))
        self.assertEqual(tot["inferredIgnoreNotify"], 1)
        self.assertGreaterEqual(tot["consumerListQueries"], 3)
        text = replay(self.trace)
        self.assertIn("(10.0.0.2@slow-0) does not rebalance on NOTIFY (inferred)", text)
        self.assertIn("== behaviour", text)

    def test_override_replaces_inference(self):
        recs = self.records("--client", "10.0.0.2@slow-0:notify=on")
        self.assertEqual([r for r in recs if r["type"] == "overlap"], [])
        beh = {r["client"]: r for r in recs if r["type"] == "behaviour"}
        self.assertEqual(beh["10.0.0.2@slow-0"]["notifySource"], "override")
        # --infer off: the old default (everyone reacts) finds nothing either
        recs = self.records("--infer", "off")
        self.assertEqual([r for r in recs if r["type"] == "overlap"], [])
        # the old global flags still work and beat the inference
        recs = self.records("--infer", "off", "--ignore-notify", "10.0.0.2@slow-0", "--client-rebalance-ms",
                            str(SLOW_MS))
        self.assertTrue([r for r in recs if r["type"] == "overlap"])

    def test_unknown_explain_queue_warns(self):
        out = replay(self.trace, "--explain", "T:no-such-broker:3")
        self.assertIn("warning: no group of the trace consumes this queue", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
