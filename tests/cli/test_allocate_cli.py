#!/usr/bin/env python3
"""test_allocate_cli.py — `rmqcoord allocate` end to end, without a shell.

Pipes every vector of tests/data/allocation.jsonl, interleaved with blank
lines and bad lines, through the binary ($RMQCOORD_BIN) and checks that each
good line gives {"allocation": expected} (key order included), each bad line
an {"error": ...} line, and that the process exits 0. Then the line-length
cap, --help and bad flags. Stdlib only; exit status 0 = pass.
"""
import json
import os
import subprocess
import sys

BIN = os.environ.get("RMQCOORD_BIN", "build/rmqcoord")
DATA = os.environ.get("RMQ_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def run(args, data, timeout=120):
    return subprocess.run([BIN, "allocate"] + args, input=data, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def ordered(text):
    return json.loads(text, object_pairs_hook=lambda pairs: pairs)


BAD_LINES = [
    b"not json",
    b"{",
    b"[]",
    b"42",
    b'{"strategy":"NOPE","queues":[],"consumers":[]}',
    b'{"queues":[],"consumers":["a"]}',
    b'{"strategy":"AVG","queues":"x","consumers":["a"]}',
    b'{"strategy":"AVG","queues":[{"topic":"T","brokerName":"b","queueId":"1"}],"consumers":["a"]}',
    b'{"strategy":"AVG","queues":[{"topic":"T","brokerName":"b","queueId":0}],"consumers":[]}',
    b'{"strategy":"CONSISTENT_HASH","queues":[{"topic":"T","brokerName":"b","queueId":0}],'
    b'"consumers":["a"],"options":{"virtualNodes":-3}}',
    b'{"strategy":"AVG","queues":[],"consumers":["\xff\xfe"]}',  # invalid UTF-8
    b'{"strategy":"AVG"} trailing',
    b'{"strategy":"AVG","a":"\x00"}',  # raw NUL inside the line
    b"[" * 100000,  # nesting far past jansson's depth limit
]


def test_vectors_and_bad_lines():
    with open(os.path.join(DATA, "allocation.jsonl"), "rb") as f:
        vectors = [l for l in f.read().split(b"\n") if l.strip()]
    lines, kinds = [], []
    for i, v in enumerate(vectors):
        if i % 25 == 0:
            lines.append(b"")  # blank: skipped, no output
            lines.append(b"  \t\r")
        if i % 30 == 7:
            lines.append(BAD_LINES[(i // 30) % len(BAD_LINES)])
            kinds.append("bad")
        lines.append(v + (b"\r" if i % 50 == 3 else b""))  # CRLF endings are accepted
        kinds.append(i)
    for b in BAD_LINES:
        lines.append(b)
        kinds.append("bad")
    lines.append(vectors[0])  # the last line has no newline
    kinds.append(0)
    p = run([], b"\n".join(lines))
    check(p.returncode == 0, "exit status %d, stderr %r" % (p.returncode, p.stderr[:300]))
    out = p.stdout.decode("utf-8").split("\n")
    check(out[-1] == "", "output ends with a newline")
    out = out[:-1]
    check(len(out) == len(kinds), "%d output lines for %d non-blank input lines" % (len(out), len(kinds)))
    for n, (kind, line) in enumerate(zip(kinds, out)):
        got = ordered(line)
        if kind == "bad":
            check(len(got) == 1 and got[0][0] == "error" and isinstance(got[0][1], str) and got[0][1],
                  "output line %d: expected an error, got %.200s" % (n + 1, line))
        else:
            case = ordered(vectors[kind])
            expected = dict(case)["expected"]
            check(got == [("allocation", expected)],
                  "vector case %d (output line %d) differs: %.200s" % (kind, n + 1, line))


def test_line_cap():
    good = b'{"strategy":"AVG","queues":[{"topic":"T","brokerName":"b","queueId":0}],"consumers":["a"]}'
    long_line = b'{"strategy":"AVG","pad":"' + b"x" * 5000 + b'"}'
    p = run(["--max-line-bytes=1000"], long_line + b"\n" + good + b"\n" + long_line)
    out = p.stdout.decode().splitlines()
    check(p.returncode == 0 and len(out) == 3, "cap: 3 lines, got %r" % out[:3])
    if len(out) == 3:
        check("longer than 1000 bytes" in out[0], "cap: first line is an error: " + out[0])
        check(out[1].startswith('{"allocation":'), "cap: the next line still works: " + out[1])
        check("longer than" in out[2], "cap: unterminated long last line: " + out[2][:100])
    # The default cap is 64 MiB: a line just over it is refused, not parsed.
    huge = b'{"pad":"' + b"y" * (64 << 20) + b'"}'
    p = run([], huge + b"\n" + good + b"\n", timeout=300)
    out = p.stdout.decode().splitlines()
    check(len(out) == 2 and "longer than 67108864 bytes" in out[0] and out[1].startswith('{"allocation":'),
          "default cap: %r" % [l[:80] for l in out])


def test_flags():
    p = run(["--help"], b"")
    text = p.stdout.decode()
    check(p.returncode == 0, "--help exits 0")
    for word in ["AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH", "virtualNodes",
                 "consumerIdcs", "brokerRooms", "consumerRooms", "inner", '"error"', "allocation"]:
        check(word in text, "--help mentions " + word)
    for bad in (["--bogus"], ["-x"], ["extra"], ["--max-line-bytes=0"], ["--max-line-bytes=abc"],
                ["--max-line-bytes=-5"]):
        p = run(bad, b"")
        check(p.returncode == 2, "%s exits 2 (got %d)" % (bad, p.returncode))
        check(p.stdout == b"", "%s writes nothing on stdout" % bad)
    p = run([], b"")
    check(p.returncode == 0 and p.stdout == b"", "empty input: no output, exit 0")


def main():
    if not os.path.exists(BIN):
        print("rmqcoord binary not found at %s" % BIN, file=sys.stderr)
        return 1
    test_vectors_and_bad_lines()
    test_line_cap()
    test_flags()
    print("%s" % ("FAILED (%d)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
