"""Comparison for the conformance harness: normalizing frames, diffing two
transcripts, and classifying the differences against known_differences.json
(and the README rows it names). Used by harness.py; stdlib only."""
import fnmatch
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)

# --------------------------------------------------------------------------- normalization

ADDR_RE = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d{1,5}\b")
BARE_KEY_RE = re.compile(r'([{,])(-?\d+):')
TS_KEYS = {"timestamp", "storeTimestamp", "lastUpdateTimestamp", "bornTimestamp", "stateVersion"}
SORT_LISTS = {"consumerIdList", "lockOKMQSet", "connectionSet", "mqSet", "brokerDatas", "queueDatas",
              "messageQueueAssignments"}
# header extFields whose value is a server-side clock or counter
TS_EXT = {"timestamp"}


def norm_str(s):
    s = ADDR_RE.sub("<addr>", s)
    return s


def norm_remark(r):
    if r is None:
        return None
    r = norm_str(r)
    r = re.sub(r"\s*\n?See (https?://\S+) for further details\.?", "", r)
    r = re.sub(r"https?://rocketmq\.apache\.org/\S*", "<faq-url>", r)
    return r.strip()


def norm_value(v, key=None):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k == "dataVersion":
                out[k] = "<dataVersion>"
            elif k in TS_KEYS and isinstance(x, (int, float)) and x > 0:
                out[k] = "<ts>"
            else:
                out[norm_str(k)] = norm_value(x, k)
        return out
    if isinstance(v, list):
        items = [norm_value(x, key) for x in v]
        if key in SORT_LISTS:
            items.sort(key=lambda x: json.dumps(x, sort_keys=True))
        return items
    if isinstance(v, str):
        return norm_str(v)
    return v


def parse_body(body):
    """(parsed JSON or None, notes) with fastjson's bare numeric map keys accepted."""
    if not body:
        return None, {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"<binary>": len(body)}, {}
    notes = {}
    try:
        return json.loads(text), notes
    except ValueError:
        pass
    fixed = BARE_KEY_RE.sub(r'\1"\2":', text)
    try:
        v = json.loads(fixed)
        notes["bareNumericKeys"] = True
        return v, notes
    except ValueError:
        pass
    if "=" in text and "\n" in text:  # java.util.Properties text (e.g. a config reply)
        return {"<properties>": len(text.splitlines())}, notes
    return {"<unparsed>": norm_str(text[:300])}, notes


def norm_frame(f, include_version=False):
    """The comparable view of a reply or a server-initiated request."""
    if f is None:
        return None
    if "undecodable" in f.header:
        return {"undecodable": f.header["undecodable"]}
    d = {"code": f.code, "flag": f.flag, "serialize": "JSON" if f.serialize == 0 else "ROCKETMQ"}
    if f.remark is not None and f.remark != "":
        d["remark"] = norm_remark(f.remark)
    if f.ext:
        ext = {}
        for k, v in f.ext.items():
            v = v if isinstance(v, str) else json.dumps(v)
            if k in TS_EXT and v.lstrip("-").isdigit() and int(v) > 0:
                v = "<ts>"
            ext[k] = norm_str(v)
        d["extFields"] = ext
    body, notes = parse_body(f.body)
    if body is not None:
        d["body"] = norm_value(body)
    d.update(notes)
    if f.body and len(f.body) < 4096 and (b'"brokerDatas"' in f.body or b'"brokerAddrTable"' in f.body):
        # the Go client hand-parses routes: byte layout (key order, spacing, quoting) matters too.
        # 5.x's enableActingMaster is reported by the parsed body and taken out here.
        text = ADDR_RE.sub("<addr>", f.body.decode("utf-8", "replace"))
        text = re.sub(r',?"enableActingMaster":false', "", text)
        text = re.sub(r'"dataVersion":\{[^}]*\}', '"dataVersion":<dv>', text)
        d["bodyText"] = text
    return d



# --------------------------------------------------------------------------- diff

def diff_values(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append((path + "/" + str(k), "<absent>", b[k]))
            elif k not in b:
                out.append((path + "/" + str(k), a[k], "<absent>"))
            else:
                diff_values(a[k], b[k], path + "/" + str(k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff_values(x, y, "%s[%d]" % (path, i), out)
    elif a != b:
        out.append((path, a, b))


def diff_transcripts(real, coord, remarks=None):
    """Differences step by step. Remark texts that differ while both sides
    sent one (Java exception messages, wording) go to `remarks`, not to the
    differences: codes and fields are what clients act on."""
    out = []
    for i in range(max(len(real), len(coord))):
        ra = real[i] if i < len(real) else {"step": "<missing>"}
        ca = coord[i] if i < len(coord) else {"step": "<missing>"}
        step = ra.get("step") if ra.get("step") != "<missing>" else ca.get("step")
        d = []
        diff_values({k: v for k, v in ra.items() if k != "step"}, {k: v for k, v in ca.items() if k != "step"}, "", d)
        for p, x, y in d:
            e = {"step": step, "path": p.lstrip("/"), "real": x, "rmqcoord": y}
            if p.endswith("/remark") and isinstance(x, str) and isinstance(y, str) and x != "<absent>" \
                    and y != "<absent>" and remarks is not None:
                remarks.append(e)
            else:
                out.append(e)
    return out


MODES = ("default", "compat")


def compat_flags(version):
    """--compat for a version: a 4.x broker's answers against 4.x, the newest broker's otherwise."""
    return ["--compat", "broker-4.9" if version.startswith("4.") else "broker"]


def readme_rows():
    """First cells of the README's difference tables ("Where rmqcoord differs" and "Not emulated")."""
    rows = set()
    try:
        with open(os.path.join(REPO, "README.md")) as f:
            for line in f:
                if line.startswith("| ") and not line.startswith("|---"):
                    rows.add(line.split("|")[1].strip())
    except OSError:
        pass
    return rows


def load_known():
    """The known differences; readme=true is honoured only when the README has the row it names
    (readme_row), so a row removed from the README makes the run fail again."""
    with open(os.path.join(HERE, "known_differences.json")) as f:
        known = json.load(f)["differences"]
    rows = readme_rows()
    for k in known:
        if k.get("readme") and k.get("readme_row") not in rows:
            log("known difference %s: readme=true but README.md has no row %r; counted as not documented"
                % (k["id"], k.get("readme_row")))
            k["readme"] = False
            k["readme_missing"] = True
    return known


def globs(name, pats):
    pats = [pats] if isinstance(pats, str) else pats
    return any(fnmatch.fnmatchcase(name, p) for p in pats)


def classify(scenario, version, diffs, known, mode="default"):
    """identical | documented | recorded | differs, and which diffs each known entry explains.
    An entry explains differences only in the modes it lists (default: ["default"]); under
    --compat only the entries rmqcoord cannot emulate ("modes": [..., "compat"]) apply."""
    if not diffs:
        return "identical", [], []
    explained, unexplained = [], []
    for d in diffs:
        hit = None
        for k in known:
            if mode not in k.get("modes", ["default"]):
                continue
            if not globs(scenario, k["scenario"]):
                continue
            if k.get("versions", "*") != "*" and version not in k["versions"]:
                continue
            if not globs(d["step"], k.get("step", "*")):
                continue
            if not any(fnmatch.fnmatchcase(d["path"], p) for p in k.get("paths", ["*"])):
                continue
            hit = k
            break
        if hit is None:
            unexplained.append(d)
        else:
            d["known"] = hit["id"]
            explained.append(d)
    ids = sorted({d["known"] for d in explained})
    if unexplained:
        return "differs", ids, unexplained
    by_id = {k["id"]: k for k in known}
    if all(by_id[i].get("readme") for i in ids):
        return "documented", ids, []
    return "recorded", ids, []
