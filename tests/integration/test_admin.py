"""Admin surface against the real daemon: every HTTP route asserted on its
body, the OpenAPI document checked against the served routes in both
directions, the bearer token, eviction, reset, the virtual clock, the event
stream and /metrics. Standard library only; clients are driven with
rmqclient's Conn + heartbeat_body."""
import json
import os
import re
import socket
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from rmqclient import Daemon, DaemonCase, heartbeat_body  # noqa: E402

HB, UNREG, NOTIFY = 34, 35, 40
ROUTES_C = os.path.join(os.path.dirname(__file__), "..", "..", "server", "http", "api_routes.c")


def http(d, method, path, body=None, headers=None, raw=False, timeout=10):
    """One request over a fresh connection: (status, headers dict, parsed body)."""
    data = b""
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", d.http_port), timeout=timeout)
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: %d\r\n" % (
        method, path, len(data))
    if method in ("POST", "PUT", "DELETE") and "Content-Type" not in (headers or {}):
        head += "Content-Type: application/json\r\n"  # mutations need it (or the token)
    for k, v in (headers or {}).items():
        head += "%s: %s\r\n" % (k, v)
    s.sendall(head.encode() + b"\r\n" + data)
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    hdr, _, payload = buf.partition(b"\r\n\r\n")
    lines = hdr.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hd = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hd[k.strip().lower()] = v.strip()
    if hd.get("transfer-encoding") == "chunked":
        out, rest = b"", payload
        while rest:
            size_s, _, rest = rest.partition(b"\r\n")
            n = int(size_s, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        payload = out
    if raw or not payload:
        return status, hd, payload
    if hd.get("content-type", "").startswith("application/json"):
        return status, hd, json.loads(payload)
    return status, hd, payload


def enc(name):
    return urllib.parse.quote(name, safe="")


class AdminTest(DaemonCase):
    extra = ("--expiry-scan-ms", "100")

    def get(self, path, status=200, **kw):
        st, _, body = http(self.d, "GET", path, **kw)
        self.assertEqual(st, status, "%s -> %s %r" % (path, st, body))
        return body

    def error(self, method, path, status, body=None, headers=None):
        st, hd, b = http(self.d, method, path, body, headers)
        self.assertEqual(st, status, "%s %s -> %s %r" % (method, path, st, b))
        self.assertEqual(sorted(b), ["detail", "error"], b)
        self.assertTrue(b["error"] and b["detail"], b)
        return hd, b

    def join(self, cid, groups, conn=None, **kw):
        c = conn or self.d.connect()
        if conn is None:
            self.conns.append(c)
        r = c.request(HB, body=heartbeat_body(cid, groups, **kw))
        self.assertIsNotNone(r, "no heartbeat reply")
        self.assertEqual(r.code, 0, r)
        return c

    def put_topic(self, name, queues=4, headers=None):
        st, _, b = http(self.d, "PUT", "/api/topics/" + enc(name), {"readQueueNums": queues, "writeQueueNums": queues},
                        headers)
        self.assertEqual(st, 200, b)
        return b

    def wait_for(self, fn, what, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.05)
        self.fail("timed out waiting for " + what)


def served_routes():
    """(path template, methods) of every route in api_routes.c's table."""
    text = open(ROUTES_C).read()
    out = {}
    for m in re.finditer(r'\{API_ROUTE_\w+, "([^"]+)", ([A-Z_ |]+),', text):
        methods = {b.strip().replace("API_", "").lower() for b in m.group(2).split("|")}
        out[m.group(1)] = methods
    return out


SAMPLE = {"group": "G", "clientId": "c1", "topic": "T", "asset": "app.js"}


class OpenApi(AdminTest):
    def test_document_and_routes_agree_both_ways(self):
        doc = self.get("/api/openapi.json")
        self.assertEqual(doc["openapi"], "3.0.3")
        self.assertIn("bearer", doc["components"]["securitySchemes"])
        table = served_routes()
        self.assertGreaterEqual(len(table), 24, table)
        documented = {p: set(ops) for p, ops in doc["paths"].items()}
        # every route the server's table serves is in the document, with its methods
        self.assertEqual(documented, table)
        for path, ops in doc["paths"].items():
            for method, op in ops.items():
                self.assertTrue(op["summary"], (path, method))
                for p in re.findall(r"\{(\w+)\}", path):
                    self.assertIn(p, [x["name"] for x in op["parameters"] if x["in"] == "path"])
                if method != "get":
                    self.assertEqual(op["security"], [{"bearer": []}])
        # every documented route is served: probing it never gives "no route"/405
        for path, ops in doc["paths"].items():
            url = re.sub(r"\{(\w+)\}", lambda m: SAMPLE[m.group(1)], path)
            for method in ops:
                if path in ("/api/reset", "/api/events/stream"):
                    continue  # probed in their own tests (reset wipes; the stream never ends)
                body = {} if method in ("put", "post") else None
                st, hd, b = http(self.d, method.upper(), url, body)
                self.assertNotEqual(st, 405, (method, url, b))
                if st == 404:
                    self.assertNotIn("no route", b["detail"], (method, url))
        # and nothing else is: undocumented paths are 404 with a JSON error
        for bad in ("/api", "/api/nope", "/api/groups/G/nope", "/ui", "/metrics/x", "/api/clients/a/b"):
            self.error("GET", bad, 404)

    def test_static_dashboard(self):
        st, hd, html = http(self.d, "GET", "/")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("text/html"))
        self.assertIn(b'<script src="/ui/app.js">', html)
        st, hd, js = http(self.d, "GET", "/ui/app.js")
        self.assertEqual((st, hd["content-type"]), (200, "text/javascript; charset=utf-8"))
        self.assertIn(b"EventSource", js)
        st, hd, css = http(self.d, "GET", "/ui/app.css")
        self.assertTrue(hd["content-type"].startswith("text/css"))
        self.assertNotIn(b"http://", html + js + css, "no CDN: everything is served by the daemon")
        self.error("GET", "/ui/nope.js", 404)


class Routes(AdminTest):
    def test_errors_are_json_with_status(self):
        hd, _ = self.error("POST", "/api/groups", 405)
        self.assertEqual(hd["allow"], "GET, HEAD")
        self.error("GET", "/api/reset", 405)
        self.error("GET", "/api/groups/%ZZ", 400)
        self.error("GET", "/api/groups/" + "g" * 256, 400)
        self.error("GET", "/api/groups/a%01b", 400)
        self.error("GET", "/api/groups?limit=0", 400)
        self.error("GET", "/api/groups?limit=1001", 400)
        self.error("GET", "/api/groups?cursor=!!", 400)
        self.error("GET", "/api/events?since=-1", 400)
        self.error("GET", "/api/groups/G/at", 400)
        self.error("GET", "/api/groups/G/at?t=x", 400)
        self.error("GET", "/api/groups/G/history?from=5&to=1", 400)
        self.error("POST", "/api/clock/advance", 400, b"{nope")
        self.error("POST", "/api/clock/advance", 400, {"ms": -1})
        self.error("POST", "/api/clock/advance", 400, {"ms": "1"})
        self.error("POST", "/api/clock/advance", 409, {"ms": 10})  # real clock
        self.error("POST", "/api/reset", 400, b"[1]")
        self.error("GET", "/api/groups/G/consistency?timeout_ms=60001", 400)

    def test_topic_names_follow_rocketmq(self):
        self.put_topic("T_ok-1|x")
        self.put_topic("%RETRY%G1")  # encoded %25RETRY%25G1
        self.assertEqual(self.get("/api/topics/" + enc("%RETRY%G1"))["topic"], "%RETRY%G1")
        self.put_topic("t" * 127)
        for bad in ("t" * 128, "a.b", "a b", "a/b", "ü"):
            self.error("PUT", "/api/topics/" + enc(bad), 400, {"readQueueNums": 1})
        self.error("PUT", "/api/topics/T", 400, b"{nope")
        self.error("PUT", "/api/topics/T", 400, {"readQueueNums": "x"})

    def test_groups_topics_pagination(self):
        names = ["G%d" % i for i in range(5)]
        for i, g in enumerate(names):
            self.join("c%d" % i, {g: ["T"]})
        self.assertEqual([g["group"] for g in self.get("/api/groups")["groups"]], names)
        seen, cursor, pages = [], None, 0
        while True:
            page = self.get("/api/groups?limit=2" + ("&cursor=" + enc(cursor) if cursor else ""))
            pages += 1
            seen += [g["group"] for g in page["groups"]]
            for g in page["groups"]:
                self.assertEqual(g["members"], 1)
            cursor = page["next"]
            if cursor is None:
                break
            self.assertIsInstance(cursor, str)
        self.assertEqual((seen, pages), (names, 3))
        for t in ("A", "B", "C"):
            self.put_topic("Tp" + t)
        page = self.get("/api/topics?limit=2")
        self.assertEqual([t["topic"] for t in page["topics"]], ["%RETRY%G0", "%RETRY%G1"])
        rest = self.get("/api/topics?limit=1000&cursor=" + enc(page["next"]))
        self.assertIn("TpC", [t["topic"] for t in rest["topics"]])
        self.assertIsNone(rest["next"])
        # a cursor of another list is refused, not misread
        ev = self.get("/api/events?limit=1")
        self.error("GET", "/api/groups?cursor=" + enc(ev["next"]), 400)

    def test_events_cursor(self):
        a = self.join("cA", {"G": ["T"]})
        self.join("cB", {"G": ["T"]})
        a.close()
        self.wait_for(lambda: len(self.get("/api/events?group=G")["events"]) == 3, "3 events")
        kinds, cursor = [], None
        for _ in range(10):
            page = self.get("/api/events?group=G&limit=1" + ("&cursor=" + enc(cursor) if cursor else ""))
            kinds += [e["kind"] for e in page["events"]]
            cursor = page["next"]
            if not page["events"]:
                break
        self.assertEqual(kinds, ["join", "join", "close"])
        everything = self.get("/api/events?group=G")
        self.assertEqual(everything["lastId"], everything["events"][-1]["id"])
        self.assertIsNone(everything["next"])
        since = self.get("/api/events?group=G&since=%d" % everything["events"][0]["id"])
        self.assertEqual([e["kind"] for e in since["events"]], ["join", "close"])
        self.assertEqual(since["events"][1]["before"], ["cA", "cB"])
        self.assertEqual(since["events"][1]["after"], ["cB"])

    def test_clients(self):
        a = self.join("cA", {"G1": ["T"], "G2": ["T"]}, producers=["P1"])
        self.join("cB", {"G1": ["T"]})
        lst = self.get("/api/clients")
        self.assertEqual([c["clientId"] for c in lst["clients"]], ["cA", "cB"])
        self.assertIsNone(lst["next"])
        ca = self.get("/api/clients/cA")
        self.assertEqual(ca["groups"], ["G1", "G2"])
        self.assertEqual(ca["producerGroups"], ["P1"])
        self.assertEqual(ca["language"], "JAVA")
        self.assertEqual(ca["version"], 409)
        self.assertTrue(ca["live"])
        self.assertEqual(len(ca["channels"]), 1)
        self.assertRegex(ca["channels"][0]["remoteAddr"], r"^127\.0\.0\.1:\d+$")
        self.assertEqual(ca["remoteAddrs"], [ca["channels"][0]["remoteAddr"]])
        self.assertGreater(ca["firstSeenMs"], 0)
        self.assertGreaterEqual(ca["lastHeartbeatMs"], ca["firstSeenMs"])
        self.assertEqual(self.get("/api/clients?limit=1")["clients"][0]["clientId"], "cA")
        self.assertEqual(self.get("/api/clients?limit=1&cursor=" + enc(self.get("/api/clients?limit=1")["next"]))
                         ["clients"][0]["clientId"], "cB")
        self.error("GET", "/api/clients/nobody", 404)
        a.close()
        gone = self.wait_for(lambda: (lambda b: b if not b.get("live", True) else None)(
            http(self.d, "GET", "/api/clients/cA")[2]), "cA offline")
        self.assertEqual(gone["channels"], [])
        self.assertEqual(gone["firstSeenMs"], ca["firstSeenMs"])
        self.assertEqual([c["clientId"] for c in self.get("/api/clients")["clients"]], ["cB"])

    def test_history_and_at(self):
        self.put_topic("T", 4)
        a = self.join("cA", {"G": ["T"]})
        time.sleep(0.05)
        self.join("cB", {"G": ["T"]})
        time.sleep(0.05)
        a.close()
        self.wait_for(lambda: len(self.get("/api/groups/G/history")["changes"]) == 3, "3 changes")
        # times from the daemon's own clock (the events' ts), not this process's
        ts = [c["ts"] for c in self.get("/api/groups/G/history")["changes"]]
        self.assertLess(ts[0], ts[1])
        self.assertLess(ts[1], ts[2])
        t_between, t_both = ts[0] + 1, ts[1]
        h = self.get("/api/groups/G/history")
        self.assertEqual([(c["kind"], c["after"]) for c in h["changes"]],
                         [("join", ["cA"]), ("join", ["cA", "cB"]), ("close", ["cB"])])
        self.assertEqual(h["membersAtFrom"], [])
        h2 = self.get("/api/groups/G/history?from=%d" % t_between)
        self.assertEqual([c["kind"] for c in h2["changes"]], ["join", "close"])
        self.assertEqual(h2["membersAtFrom"], ["cA"])
        h3 = self.get("/api/groups/G/history?from=0&to=%d" % t_between)
        self.assertEqual(len(h3["changes"]), 1)
        self.assertEqual(h3["to"], t_between)
        p1 = self.get("/api/groups/G/history?limit=2")
        self.assertEqual(len(p1["changes"]), 2)
        p2 = self.get("/api/groups/G/history?limit=2&cursor=" + enc(p1["next"]))
        self.assertEqual([c["kind"] for c in p2["changes"]], ["close"])
        at = self.get("/api/groups/G/at?t=%d" % t_between)
        self.assertEqual((at["group"], at["t"], at["members"], at["allocation"]), ("G", t_between, ["cA"], None))
        self.assertEqual(self.get("/api/groups/G/at?t=1")["members"], [])
        at = self.get("/api/groups/G/at?t=%d&topic=T&strategy=AVG" % t_both)
        self.assertEqual(at["members"], ["cA", "cB"])
        alloc = at["allocation"]
        self.assertEqual(alloc["strategy"], "AVG")
        self.assertEqual([q["queueId"] for q in alloc["allocation"]["cA"]], [0, 1])
        self.assertEqual([q["queueId"] for q in alloc["allocation"]["cB"]], [2, 3])
        self.assertEqual(len(alloc["owners"]), 4)
        self.assertEqual((alloc["unassigned"], alloc["overlaps"]), ([], []))
        self.error("GET", "/api/groups/G/at?t=%d&topic=Nope" % t_both, 404)
        self.error("GET", "/api/groups/G/at?t=%d&topic=T&strategy=CONFIG" % t_both, 400)

    def test_group_allocation_route(self):
        self.put_topic("T", 4)
        self.join("cA", {"G": ["T"]})
        self.join("cB", {"G": ["T"]})
        a = self.get("/api/groups/G/allocation?topic=T&strategy=AVG")
        self.assertEqual(sorted(a["allocation"]), ["cA", "cB"])
        self.assertEqual(len(a["owners"]), 4)
        for o in a["owners"]:
            self.assertEqual(len(o["owners"]), 1)

    def test_diagnostics(self):
        c1 = self.join("dup", {"G": ["T"]})
        self.join("dup", {"G": ["T"]})
        d = self.get("/api/groups/G/diagnostics")
        self.assertEqual(d["duplicateClientIds"], ["dup"])
        self.assertIn("duplicateClientIds", [i["kind"] for i in d["issues"]])
        self.assertEqual((d["live"], d["members"], d["broadcast"], d["notified"]), (True, 2, False, True))
        self.assertEqual(d["subscribedTopics"], ["T"])
        self.assertEqual(d["subscriptionChangesLast10Min"], 0)
        self.assertIn("consistency", d["strategies"])
        # two members that subscribe differently flip the group's one table
        x = self.join("x1", {"H": ["T1"]})
        y = self.join("y1", {"H": ["T2"]})
        for _ in range(2):
            self.join("x1", {"H": ["T1"]}, conn=x)
            self.join("y1", {"H": ["T2"]}, conn=y)
        d = self.get("/api/groups/H/diagnostics")
        self.assertGreaterEqual(d["subscriptionChangesLast10Min"], 3)
        self.assertIn("subscriptionsDisagree", [i["kind"] for i in d["issues"]])
        b = self.join("b1", {"B": ["T"]}, model="BROADCASTING")
        d = self.get("/api/groups/B/diagnostics")
        self.assertEqual((d["broadcast"], d["notified"], d["messageModel"]), (True, False, "BROADCASTING"))
        self.assertEqual([f for f in b.drain(0.3) if f.code == NOTIFY], [], "broadcast groups are not notified")
        self.error("GET", "/api/groups/nobody/diagnostics", 404)
        c1.close()

    def test_evict_notifies_the_rest(self):
        a = self.join("cA", {"G": ["T"]})
        b = self.join("cB", {"G": ["T"]})
        a.drain(0.2)
        b.drain(0.2)
        st, _, r = http(self.d, "DELETE", "/api/groups/G/clients/cA")
        self.assertEqual(st, 200, r)
        self.assertEqual((r["group"], r["clientId"]), ("G", "cA"))
        self.assertEqual(len(r["evicted"]), 1)
        self.assertIsNotNone(b.wait_notify("G", timeout=2.0), "remaining member not notified")
        self.assertTrue(a.is_closed_by_peer(3.0), "evicted channel not closed")
        g = self.get("/api/groups/G")
        self.assertEqual([c["clientId"] for c in g["consumers"]], ["cB"])
        self.assertEqual(self.get("/api/events?group=G")["events"][-1]["kind"], "close")
        self.error("DELETE", "/api/groups/G/clients/cA", 404)
        self.error("DELETE", "/api/groups/nope/clients/cA", 404)
        self.error("GET", "/api/groups/G/clients/cB", 405)

    def test_reset(self):
        self.put_topic("T")
        a = self.join("cA", {"G": ["T"]})
        self.assertTrue(self.get("/api/events")["events"])
        st, _, r = http(self.d, "POST", "/api/reset")
        self.assertEqual((st, r["reset"], r["closedConnections"]), (200, True, 1), r)
        self.assertTrue(a.is_closed_by_peer(3.0))
        self.assertEqual(self.get("/api/groups")["groups"], [])
        self.assertEqual(self.get("/api/topics")["topics"], [])
        self.assertEqual(self.get("/api/clients")["clients"], [])
        self.assertEqual(self.get("/api/events")["events"], [])
        self.error("GET", "/api/clients/cA", 404)
        # and the daemon works on afterwards; event ids keep growing
        self.join("cC", {"G2": ["T"]})
        ev = self.get("/api/events")["events"]
        self.assertEqual([e["kind"] for e in ev], ["join"])

    def test_loop_routes_of_the_holdings_module_are_routed(self):
        self.put_topic("T", 2)
        self.join("cA", {"G": ["T"]})
        for path in ("/api/groups/G/clients/cA/running-info?timeout_ms=200",
                     "/api/groups/G/consistency?topic=T&timeout_ms=200",
                     "/api/groups/G/converged?topic=T&timeout_ms=200"):
            st, hd, b = http(self.d, "GET", path, timeout=70)
            self.assertTrue(hd["content-type"].startswith("application/json"), path)
            self.assertIsInstance(b, dict, path)
            self.assertNotIn("no route for", json.dumps(b), path)
            self.assertNotEqual(st, 405, path)
            if "running-info" in path and "clientId" in b:
                self.assertEqual(b["clientId"], "cA", "the decoded client id reaches the loop in the query")

    def test_clock_real(self):
        c = self.get("/api/clock")
        self.assertEqual(c["virtual"], False)
        self.assertLess(abs(c["nowMs"] - time.time() * 1000), 5000)

    def test_metrics_after_traffic(self):
        a = self.join("cA", {"G": ["T"]})
        self.join("cB", {"G": ["T"]})
        self.join("cA", {"G": ["T"]}, conn=a)
        self.get("/api/groups")
        self.error("GET", "/api/nope", 404)
        st, hd, text = http(self.d, "GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertEqual(hd["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        text = text.decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                samples[k] = float(v)
        self.assertEqual(samples["rmqcoord_connections"], 2)
        self.assertEqual(samples["rmqcoord_clients"], 2)
        self.assertEqual(samples["rmqcoord_groups"], 1)
        self.assertEqual(samples['rmqcoord_group_members{group="G"}'], 2)
        self.assertEqual(samples["rmqcoord_heartbeats_total"], 3)
        self.assertGreaterEqual(samples["rmqcoord_notifications_sent_total"], 2)
        self.assertEqual(samples['rmqcoord_membership_changes_total{kind="join"}'], 2)
        self.assertEqual(samples['rmqcoord_membership_changes_total{kind="expire"}'], 0)
        self.assertEqual(samples["rmqcoord_expirations_total"], 0)
        self.assertEqual(samples["rmqcoord_bad_frames_total"], 0)
        # histogram: cumulative buckets, +Inf == count
        pre = 'rmqcoord_request_duration_seconds_bucket{code="34",request="HEART_BEAT",le='
        buckets = [(k, v) for k, v in samples.items() if k.startswith(pre)]
        self.assertEqual(len(buckets), 12, buckets)
        counts = [v for _, v in buckets]
        self.assertEqual(counts, sorted(counts))
        self.assertEqual(samples[pre + '"+Inf"}'], 3)
        self.assertEqual(samples['rmqcoord_request_duration_seconds_count{code="34",request="HEART_BEAT"}'], 3)
        self.assertIn("rmqcoord_store_commit_duration_seconds_count", samples)
        self.assertGreater(samples["rmqcoord_store_commit_duration_seconds_count"], 0)
        self.assertGreaterEqual(samples['rmqcoord_http_requests_total{route="/api/groups",method="GET",status="200"}'], 1)
        self.assertGreaterEqual(samples['rmqcoord_http_requests_total{route="unmatched",method="GET",status="404"}'], 1)
        self.assertEqual(samples["rmqcoord_event_streams"], 0)
        for name in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
            self.assertIn(name[1], ("counter", "gauge", "histogram"))
        self.assertIn("rmqcoord_notify_fanout_duration_seconds_count", samples)
        self.assertIn("rmqcoord_expiry_scan_duration_seconds_count", samples)
        self.assertGreaterEqual(samples["rmqcoord_store_checkpoint_failures_total"], 0)

    def test_metrics_with_many_groups(self):
        # one series per group: 250 groups are far more than a fixed 8 KB reply held
        self.join("cMany", {"MG%03d" % i: ["T"] for i in range(250)})
        st, _, text = http(self.d, "GET", "/metrics")
        self.assertEqual(st, 200, text)
        lines = [ln for ln in text.decode().splitlines() if ln.startswith("rmqcoord_group_members{")]
        self.assertEqual(len(lines), 250)


def sse_open(d, query=""):
    s = socket.create_connection(("127.0.0.1", d.http_port), timeout=5)
    s.sendall(("GET /api/events/stream%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n" % query).encode())
    return s


def sse_read_until(s, pred, timeout=5.0):
    """Reads the (chunked) stream until pred(text so far) holds; returns the text."""
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        buf += chunk
        if pred(buf.decode(errors="replace")):
            return buf.decode(errors="replace")
    return buf.decode(errors="replace")


def sse_events(text):
    out = []
    for block in text.split("\n\n"):
        data = [ln[6:] for ln in block.split("\n") if ln.startswith("data: ")]
        if "event: membership" in block and data:
            out.append(json.loads(data[0]))
    return out


class BigGroupEvents(AdminTest):
    """Events of a group over 64 members store only where the member went in
    or out (schema/0002_event_deltas.sql); every read path must rebuild the
    same before/after lists a full row would have held."""

    def all_events(self, group, limit):
        out, cursor = [], ""
        for _ in range(1000):
            page = self.get("/api/events?group=%s&limit=%d%s" % (group, limit, "&cursor=" + enc(cursor) if cursor else ""))
            out += page["events"]
            if not page["next"]:
                return out
            cursor = page["next"]
        self.fail("events did not end")

    def test_lists_rebuilt_from_deltas(self):
        self.put_topic("T", 4)
        conns = {}
        for i in range(150):
            cid = "c%03d" % ((i * 37) % 150)  # joins out of id order
            conns[cid] = self.join(cid, {"BG": ["T"]})
        for i, cid in enumerate(sorted(conns)[::4]):
            if i % 5 == 0:
                r = conns[cid].request(UNREG, ext={"clientID": cid, "producerGroup": "", "consumerGroup": "BG"})
                self.assertEqual(r.code, 0, r)
            conns[cid].close()
        live = sorted(c for i, c in enumerate(sorted(conns)) if i % 4 != 0)
        self.wait_for(lambda: sorted(c["clientId"] for c in self.get("/api/groups/BG")["consumers"]) == live,
                      "membership after the leaves")
        want = len(conns) + (len(conns) - len(live))
        evs = self.wait_for(lambda: (lambda e: e if len(e) >= want else None)(self.all_events("BG", 1000)),
                            "all events")
        self.assertEqual(len(evs), want)
        # each event's lists are consistent with its change and with its neighbours
        for prev, ev in zip([{"after": []}] + evs[:-1], evs):
            self.assertEqual(ev["before"], prev["after"], ev["id"])
            if ev["kind"] == "join":
                self.assertEqual(sorted(ev["after"]), sorted(ev["before"] + [ev["clientId"]]), ev["id"])
            else:
                self.assertIn(ev["kind"], ("close", "unregister"))
                before = list(ev["before"])
                before.remove(ev["clientId"])
                self.assertEqual(ev["after"], before, ev["id"])
        self.assertEqual(sorted(evs[-1]["after"]), live)
        self.assertEqual(evs[-1]["after"], [c["clientId"] for c in self.get("/api/groups/BG")["consumers"]])
        # deltas were used, and they made the stored lists small
        import sqlite3
        db = sqlite3.connect("file:%s?mode=ro" % self.d.store, uri=True)
        deltas, stored = db.execute("SELECT count(list_delta), sum(length(before_json) + length(after_json)) "
                                    "FROM events WHERE group_name = 'BG'").fetchone()
        db.close()
        full = sum(len(json.dumps(e["before"])) + len(json.dumps(e["after"])) for e in evs)
        self.assertGreater(deltas, len(evs) // 2)
        self.assertLess(stored * 4, full)
        # small pages (the rebuild starts again on every page) read the same lists
        self.assertEqual(self.all_events("BG", 7), evs)
        # history pages and a window starting in the middle
        hist, cursor = [], ""
        for _ in range(100):
            h = self.get("/api/groups/BG/history?limit=11" + ("&cursor=" + enc(cursor) if cursor else ""))
            hist += h["changes"]
            if not h.get("next"):
                break
            cursor = h["next"]
        self.assertEqual([(c["kind"], c["before"], c["after"]) for c in hist],
                         [(e["kind"], e["before"], e["after"]) for e in evs])
        mid = evs[len(evs) * 2 // 3]
        h = self.get("/api/groups/BG/history?from=%d" % mid["ts"])
        first = next(e for e in evs if e["ts"] >= mid["ts"])
        self.assertEqual(h["changes"][0]["before"], first["before"])
        at = self.get("/api/groups/BG/at?t=%d" % mid["ts"])
        last_at = [e for e in evs if e["ts"] <= mid["ts"]][-1]
        self.assertEqual(at["members"], last_at["after"])


class Stream(AdminTest):
    def test_sse_receives_a_join(self):
        s = sse_open(self.d, "?group=G")
        head = sse_read_until(s, lambda t: "stream open" in t)
        self.assertIn("200 OK", head)
        self.assertIn("text/event-stream", head)
        self.join("other", {"OTHER": ["T"]})
        self.join("cA", {"G": ["T"]})
        text = sse_read_until(s, lambda t: '"kind":"join"' in t)
        evs = sse_events(text.replace("\r\n", "\n"))
        self.assertTrue(evs, text)
        self.assertEqual((evs[0]["group"], evs[0]["kind"], evs[0]["clientId"], evs[0]["after"]),
                         ("G", "join", "cA", ["cA"]))
        self.assertEqual([e["group"] for e in evs], ["G"], "the group filter lets OTHER through")
        self.assertEqual(self.get("/api/events?group=G")["events"][0]["id"], evs[0]["id"])
        s.close()

    def test_sse_replay_keepalive_and_limit(self):
        self.join("cA", {"G": ["T"]})
        first = self.get("/api/events")["events"][0]["id"]
        s = sse_open(self.d, "?since=%d&heartbeatMs=200" % (first - 1))
        text = sse_read_until(s, lambda t: ": keepalive" in t)
        self.assertIn("id: %d" % first, text)
        self.assertIn(": keepalive", text)
        s.close()
        self.error("GET", "/api/events/stream?heartbeatMs=5", 400)
        self.error("GET", "/api/events/stream?since=x", 400)
        # a client that goes away gives its slot back within a poll tick
        self.wait_for(lambda: "rmqcoord_event_streams 0" in http(self.d, "GET", "/metrics")[2].decode(),
                      "the closed stream's slot")
        streams = [sse_open(self.d) for _ in range(32)]
        for st in streams:
            sse_read_until(st, lambda t: "stream open" in t)
        self.error("GET", "/api/events/stream", 503)
        text = http(self.d, "GET", "/metrics")[2].decode()
        self.assertIn("rmqcoord_event_streams 32", text)
        for st in streams:
            st.close()
        # closed streams give their slots back (noticed at the next poll tick)
        self.wait_for(lambda: "rmqcoord_event_streams 0" in http(self.d, "GET", "/metrics")[2].decode(),
                      "streams released")


class Token(AdminTest):
    extra = ("--admin-token", "s3cret")

    def test_mutating_routes_need_the_token(self):
        body = {"readQueueNums": 2}
        hd, b = self.error("PUT", "/api/topics/T", 401, body)
        self.assertIn("Bearer", hd["www-authenticate"])
        self.error("PUT", "/api/topics/T", 401, body, {"Authorization": "Bearer wrong"})
        self.error("PUT", "/api/topics/T", 401, body, {"Authorization": "Bearer s3cre"})
        self.error("PUT", "/api/topics/T", 401, body, {"Authorization": "Basic s3cret"})
        self.error("POST", "/api/reset", 401)
        self.error("DELETE", "/api/groups/G/clients/c", 401)
        self.error("POST", "/api/clock/advance", 401, {"ms": 1})
        ok = {"Authorization": "Bearer s3cret"}
        self.put_topic("T", 2, headers=ok)
        st, _, b = http(self.d, "DELETE", "/api/topics/T", headers=ok)
        self.assertEqual((st, b), (200, {"deleted": "T"}))
        st, _, b = http(self.d, "POST", "/api/reset", headers=ok)
        self.assertEqual(st, 200, b)
        # reads stay open
        self.get("/api/groups")
        self.get("/metrics")


class VirtualClock(AdminTest):
    extra = ("--clock", "virtual", "--channel-expiry-ms", "1000", "--expiry-scan-ms", "100")

    def test_advance_expires_a_silent_member(self):
        c0 = self.get("/api/clock")
        self.assertTrue(c0["virtual"])
        a = self.join("cA", {"G": ["T"]})
        b = self.join("cB", {"G": ["T"]})
        time.sleep(0.3)  # real time passes; the virtual clock does not
        self.assertEqual(len(self.get("/api/groups/G")["consumers"]), 2)
        st, _, r = http(self.d, "POST", "/api/clock/advance", {"ms": 600})
        self.assertEqual((st, r["virtual"], r["advancedMs"], r["nowMs"]), (200, True, 600, c0["nowMs"] + 600), r)
        self.join("cB", {"G": ["T"]}, conn=b)  # cB keeps beating, cA stays silent
        b.drain(0.2)
        st, _, r = http(self.d, "POST", "/api/clock/advance", {"ms": 5000})
        self.assertEqual(st, 200, r)
        self.assertEqual(self.get("/api/clock")["nowMs"], c0["nowMs"] + 5600)
        self.assertTrue(a.is_closed_by_peer(3.0), "expired channel not closed")
        ev = self.wait_for(lambda: [e for e in self.get("/api/events?group=G")["events"] if e["kind"] == "expire"],
                           "an expire event")
        self.assertEqual(ev[0]["clientId"], "cA")
        # cB's last beat is 5000 ms old too: both expired at the same scan
        self.assertEqual(self.get("/api/groups/G", status=200).get("consumers", []), [])
        text = http(self.d, "GET", "/metrics")[2].decode()
        self.assertIn("rmqcoord_expirations_total 2", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
