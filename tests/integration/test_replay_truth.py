"""Recorded holdings as ground truth. The daemon runs with
`--record-holdings-ms`, so every 250 ms it asks each consumer for its queues
(GET_CONSUMER_RUNNING_INFO, which `rmqcoord sim` answers) and records the
answers. The run: one client that ignores NOTIFY (`sim --no-notify`, a 4 s
timer), two that act on it, and a later join. Replay then reports the
overlaps the clients really had beside the modeled ones: by default the model
(with the inferred behaviour) and the truth agree; with a deliberately wrong
override for a NOTIFY-acting client the model keeps that client on its old
queues, and replay flags the disagreement and blames the model."""
import json
import os
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from mixed_run import record_mixed_run, records, replay  # noqa: E402

SLOW_MS = 4000
SAMPLE_MS = 250
WRONG = "10.0.0.3@fast-0:notify=off,rebalance-ms=60000"


def by_type(recs, t):
    return [r for r in recs if r["type"] == t]


class ReplayTruthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rmqcoord-truth-")

        def read_metrics(d):
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % d.http_port, timeout=5) as r:
                cls.metrics = r.read().decode()

        cls.trace = record_mixed_run(cls.tmp, SLOW_MS, 4.5, ("--record-holdings-ms", str(SAMPLE_MS)), read_metrics)
        cls.default = records(cls.trace)
        cls.wrong = records(cls.trace, "--client", WRONG)

    def test_holdings_recorded(self):
        rounds = {}
        with open(self.trace) as f:
            for line in f:
                r = json.loads(line)
                if r.get("event") != "holdings":
                    continue
                self.assertEqual(r["group"], "G")
                self.assertLessEqual(r["asked"], r["ts"])
                self.assertLess(r["ts"] - r["asked"], SAMPLE_MS, r)  # sims answer at once
                self.assertIsInstance(r["queues"], list, r)  # every sim answers
                for q in r["queues"]:
                    self.assertEqual(set(q), {"topic", "brokerName", "queueId"})
                rounds.setdefault(r["asked"], []).append(r["clientId"])
        self.assertGreaterEqual(len(rounds), 20, "about one round per %d ms expected" % SAMPLE_MS)
        for asked, ids in rounds.items():
            self.assertEqual(len(ids), len(set(ids)), "one ask per member a round: %s" % ids)
        # every member of the busiest moment was asked in one round
        self.assertEqual(max(len(ids) for ids in rounds.values()), 4)
        self.assertRegex(self.metrics, r"(?m)^rmqcoord_holdings_asks_total [1-9]")
        self.assertRegex(self.metrics, r"(?m)^rmqcoord_holdings_answers_total [1-9]")
        self.assertRegex(self.metrics, r"(?m)^rmqcoord_holdings_unanswered_total 0$")

    def test_model_and_truth_agree_by_default(self):
        recs = self.default
        labels = {r["label"]: r["clientId"] for r in by_type(recs, "client")}
        real = by_type(recs, "realOverlap")
        model = by_type(recs, "overlap")
        self.assertTrue(real, "the clients' answers show no overlap")
        self.assertTrue(model, "the model shows no overlap")
        for r in real:
            self.assertIn("10.0.0.2@slow-0", [labels.get(x, x) for x in r["holders"].split(",")], r)
            # beside a modeled overlap of the same queue that covers it (the model acts
            # at the event, the clients are sampled every SAMPLE_MS)
            same = [m for m in model if (m["topic"], m["broker"], m["queueId"]) ==
                    (r["topic"], r["broker"], r["queueId"]) and m["from"] <= r["from"] + SAMPLE_MS + 50
                    and m["to"] + SAMPLE_MS + 50 >= r["to"]]
            self.assertTrue(same, "real overlap %s has no modeled overlap beside it" % r)
        tot = by_type(recs, "totals")[0]
        self.assertEqual(tot["realOverlaps"], len(real))
        self.assertGreater(tot["holdingsSamples"], 0)
        self.assertEqual(tot["holdingsUnanswered"], 0)
        self.assertEqual(by_type(recs, "disagreement"), [], "model and truth should agree")
        self.assertEqual(tot["disagreements"], 0)
        text = replay(self.trace)
        self.assertIn("== truth", text)
        self.assertRegex(text, r"(?m)^real-overlap G T broker-a:\d \S+\.\.\S+ \(\+\d+\.\.\+\d+\) \d+ms holders=C")

    def test_wrong_override_disagrees(self):
        recs = self.wrong
        beh = {r["client"]: r for r in by_type(recs, "behaviour")}
        self.assertEqual(beh["10.0.0.3@fast-0"]["notifySource"], "override")
        dis = by_type(recs, "disagreement")
        self.assertTrue(dis, "a wrong override must disagree with the recorded holdings")
        label = beh["10.0.0.3@fast-0"]["label"]
        mine = [r for r in dis if r.get("label") == label]
        self.assertTrue(mine, "no disagreement for the overridden client: %s" % dis)
        for r in mine:
            self.assertEqual(r["blame"], "model", r)
            self.assertGreater(r["ms"], 0)
        # the model now has overlaps the clients did not have, blamed on the model
        self.assertTrue([r for r in dis if "queueId" in r and r["blame"] == "model"], dis)
        tot = by_type(recs, "totals")[0]
        self.assertEqual(tot["disagreements"], len(dis))
        self.assertGreater(tot["disagreementsModel"], 0)
        # the real overlaps are the same whatever the model says
        key = lambda r: (r["topic"], r["broker"], r["queueId"], r["from"], r["to"])  # noqa: E731
        self.assertEqual(sorted(map(key, by_type(recs, "realOverlap"))),
                         sorted(map(key, by_type(self.default, "realOverlap"))))
        text = replay(self.trace, "--client", WRONG)
        self.assertRegex(text, r"(?m)^disagree G %s .* model bug: %s had already rebalanced" % (label, label))

    def test_old_trace_without_holdings_replays(self):
        old = os.path.join(self.tmp, "old.jsonl")
        with open(self.trace) as f, open(old, "w") as out:
            out.writelines(line for line in f if '"event":"holdings"' not in line)
        recs = records(old)
        tot = by_type(recs, "totals")[0]
        self.assertEqual(tot["holdingsSamples"], 0)
        self.assertEqual(by_type(recs, "realOverlap"), [])
        self.assertEqual(len(by_type(recs, "overlap")), len(by_type(self.default, "overlap")))
        self.assertNotIn("== truth", replay(old))



class BigHoldingsLine(unittest.TestCase):
    """One holdings line of 65,536 queues (the most a line may carry): each
    queue is found by an index, so replay takes well under a second where a
    scan per queue took 3.3-6.7 s."""

    def test_65536_queues_in_one_line(self):
        import subprocess
        import time
        binary = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                "rmqcoord")
        path = os.path.join(tempfile.mkdtemp(prefix="rmqcoord-big-"), "big.jsonl")
        n = 65536
        hb = {"clientID": "cA", "consumerDataSet": [{"groupName": "G", "consumeType": "CONSUME_PASSIVELY",
                                                     "messageModel": "CLUSTERING",
                                                     "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                                                     "subscriptionDataSet": [{"topic": "T", "subString": "*",
                                                                              "subVersion": 1}]}],
              "producerDataSet": []}
        lines = [{"rmqcoordTrace": 1, "ts": 1000, "format": "docs/trace-format.md"},
                 {"ts": 1000, "event": "route", "topic": "T",
                  "brokers": [{"brokerName": "b%d" % k, "readQueueNums": 256, "writeQueueNums": 256, "perm": 6}
                              for k in range(n // 256)]},
                 {"ts": 1000, "conn": 1, "event": "connect"},
                 {"ts": 1000, "conn": 1, "event": "request", "code": 34, "ext": {}, "body": hb},
                 {"ts": 1500, "conn": 1, "event": "holdings", "group": "G", "clientId": "cA", "asked": 1500,
                  "queues": [{"topic": "T", "brokerName": "b%d" % (q // 256), "queueId": q % 256}
                             for q in range(n)]}]
        with open(path, "w") as f:
            for line in lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        t0 = time.monotonic()
        p = subprocess.run([binary, "replay", path, "--format", "json"], capture_output=True, timeout=120)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-500:])
        print("replay of one 65,536-queue holdings line: %.2f s" % took)
        scale = 4.0 if os.environ.get("RMQ_SANITIZE", "none") not in ("", "none") else 1.0
        self.assertLess(took, 2.0 * scale, "replay of one 65,536-queue holdings line took %.2f s" % took)


if __name__ == "__main__":
    unittest.main(verbosity=2)
