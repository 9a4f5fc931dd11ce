"""What a new user meets in the first minutes (the first-minute
stumbles), each against the real binary: sim says why when it cannot reach
the name server, sim ids are unique per process, host names and
NAMESRV_ADDR work, --version and the value forms of options behave."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon  # noqa: E402

BIN = os.environ.get("RMQCOORD_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "rmqcoord")


def wait_members(d, group, n, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st, body = d.http("GET", "/api/groups/%s" % group)
        if st == 200 and len(body.get("consumers", [])) >= n:
            return body["consumers"]
        time.sleep(0.1)
    return []


class Sim(unittest.TestCase):
    def test_unreachable_name_server_exits_non_zero_and_says_why(self):
        p = subprocess.run([BIN, "sim", "--namesrv", "127.0.0.1:1", "--group", "G", "--topic", "T",
                            "--connect-timeout-ms", "1000"], capture_output=True, timeout=20)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(b"cannot reach the name server 127.0.0.1:1", p.stderr)

    def test_two_processes_get_distinct_ids_host_names_and_namesrv_addr(self):
        d = Daemon()
        procs = []
        try:
            env = dict(os.environ, NAMESRV_ADDR="localhost:%d" % d.port)
            for _ in range(2):  # neither names --namesrv: it comes from the environment
                procs.append(subprocess.Popen([BIN, "sim", "--group", "G2", "--topic", "T2", "--quiet",
                                               "--duration-ms", "8000"], env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE))
            members = wait_members(d, "G2", 2)
            ids = [m["clientId"] for m in members]
            self.assertEqual(len(ids), 2, members)
            self.assertEqual(len(set(ids)), 2, "two sim processes share a client id: %s" % ids)
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)
                p.stdout.close()
                p.stderr.close()
            d.stop()

    def test_version_flags(self):
        p = subprocess.run([BIN, "sim", "--version"], capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout.decode(), r"^rmqcoord \d+\.\d+\.\d+")
        p = subprocess.run([BIN, "sim", "--help"], capture_output=True, timeout=10)
        self.assertIn(b"--client-version N", p.stdout)
        self.assertIn(b"Exit status", p.stdout)


class Allocate(unittest.TestCase):
    def test_max_line_bytes_both_spellings(self):
        case = json.dumps({"strategy": "AVG", "consumers": ["a"], "queues": [{"topic": "T", "brokerName": "b",
                                                                              "queueId": 0}], "currentCID": "a"})
        for args in (["--max-line-bytes", "4096"], ["--max-line-bytes=4096"]):
            p = subprocess.run([BIN, "allocate"] + args, input=(case + "\n").encode(), capture_output=True,
                               timeout=10)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
        p = subprocess.run([BIN, "allocate", "--max-line-bytes", "lots"], capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"whole number", p.stderr)


class TerminalView(unittest.TestCase):
    """rmqcoord groups / describe / events against a live group of two sim
    clients, through the daemon's admin API (--http, or RMQCOORD_HTTP)."""

    def test_groups_describe_events(self):
        d = Daemon()
        sims = []
        try:
            for i in range(2):
                sims.append(subprocess.Popen([BIN, "sim", "--namesrv", "127.0.0.1:%d" % d.port, "--group", "GV",
                                              "--topic", "TV", "--client-id", "10.0.0.%d@view" % i, "--quiet",
                                              "--duration-ms", "15000"], stdout=subprocess.DEVNULL))
            self.assertEqual(len(wait_members(d, "GV", 2)), 2)
            time.sleep(1.5)  # both have rebalanced after the second join
            http = "127.0.0.1:%d" % d.http_port
            p = subprocess.run([BIN, "groups", "--http", http], capture_output=True, timeout=20)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout.decode(), r"GV\s+2\s+CLUSTERING\s+yes")
            env = dict(os.environ, RMQCOORD_HTTP=http)
            p = subprocess.run([BIN, "describe", "GV"], capture_output=True, timeout=30, env=env)
            out = p.stdout.decode()
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("10.0.0.0@view", out)
            self.assertIn("10.0.0.1@view", out)
            rows = [ln for ln in out.splitlines() if ln.startswith("broker-a ")]
            self.assertEqual(len(rows), 8, out)  # 8 queues of the auto-created topic
            self.assertNotIn("OVERLAP", out)
            self.assertNotIn("GAP", out)
            p = subprocess.run([BIN, "describe", "GV", "--json"], capture_output=True, timeout=30, env=env)
            j = json.loads(p.stdout)
            self.assertEqual(len(j["group"]["consumers"]), 2)
            self.assertIn("TV", j["topics"])
            p = subprocess.run([BIN, "events", "GV", "--http", http], capture_output=True, timeout=20)
            joins = [ln for ln in p.stdout.decode().splitlines() if " join " in ln]
            self.assertEqual(len(joins), 2, p.stdout)
            p = subprocess.run([BIN, "describe", "NOPE", "--http", http], capture_output=True, timeout=20)
            self.assertEqual(p.returncode, 1)
            p = subprocess.run([BIN, "groups", "--http", "127.0.0.1:1"], capture_output=True, timeout=20)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"cannot connect", p.stderr)
        finally:
            for p in sims:
                p.terminate()
                p.wait(10)
            d.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
