"""RocketMQ remoting frames for the project's Python test harnesses (standard
library only): the integration client (tests/integration/rmqclient.py), the
conformance harness (tests/conformance/rq.py) and the mqadmin recorder
(tests/mqadmin/wire.py) all encode and decode through this one module.

Frame: 4-byte big-endian length of what follows, 4-byte header word (top byte
= serialize type, 0 JSON / 1 ROCKETMQ, low 24 bits = header length), header,
body.
"""
import json
import socket
import struct

SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1

LANG_BYTES = {"JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6, "OTHER": 7,
              "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13}
LANG_NAMES = {v: k for k, v in LANG_BYTES.items()}


def encode_header_json(h):
    return json.dumps(h, separators=(",", ":")).encode()


def encode_header_rmq(h):
    remark = (h.get("remark") or "").encode()
    ext = b""
    for k, v in (h.get("extFields") or {}).items():
        kb, vb = k.encode(), str(v).encode()
        ext += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    return (struct.pack(">hBhii", h["code"], LANG_BYTES.get(h.get("language", "JAVA"), 0), h.get("version", 0),
                        h["opaque"], h.get("flag", 0))
            + struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext)


def decode_header_rmq(b, errors="replace"):
    """A ROCKETMQ binary header as the dict its JSON form would be (language
    by name); `errors="strict"` makes text that is not UTF-8 raise."""
    code, lang, version, opaque, flag = struct.unpack(">hBhii", b[:13])
    pos = 13
    (rlen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    remark = b[pos:pos + rlen].decode("utf-8", errors) if rlen > 0 else None
    pos += max(rlen, 0)
    (elen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    end = pos + elen
    ext = {}
    while pos < end:
        (kl,) = struct.unpack(">h", b[pos:pos + 2])
        pos += 2
        k = b[pos:pos + kl].decode("utf-8", errors)
        pos += kl
        (vl,) = struct.unpack(">i", b[pos:pos + 4])
        pos += 4
        ext[k] = b[pos:pos + vl].decode("utf-8", errors)
        pos += vl
    h = {"code": code, "language": LANG_NAMES.get(lang, lang), "version": version, "opaque": opaque, "flag": flag,
         "extFields": ext}
    if remark is not None:
        h["remark"] = remark
    return h


def decode_header(serialize, raw, errors="replace"):
    if serialize == SERIALIZE_JSON:
        return json.loads(raw.decode("utf-8"))
    return decode_header_rmq(raw, errors)


def ext_text(v):
    """An extFields value as a Java client writes it (booleans lower-case)."""
    return v if isinstance(v, str) else json.dumps(v) if isinstance(v, bool) else str(v)


def request_header(code, opaque, ext=None, flag=0, serialize=SERIALIZE_JSON, version=409, language="JAVA",
                   remark=None):
    h = {"code": code, "flag": flag, "language": language, "opaque": opaque,
         "serializeTypeCurrentRPC": "JSON" if serialize == SERIALIZE_JSON else "ROCKETMQ", "version": version}
    if ext is not None:
        h["extFields"] = {k: ext_text(v) for k, v in ext.items()}
    if remark is not None:
        h["remark"] = remark
    return h


def body_bytes(body):
    """A body given as JSON (dict, list), text or bytes, as bytes."""
    if isinstance(body, (dict, list)):
        return json.dumps(body, separators=(",", ":")).encode()
    if isinstance(body, str):
        return body.encode()
    return body or b""


def frame(header_bytes, body=b"", serialize=SERIALIZE_JSON):
    return struct.pack(">ii", 4 + len(header_bytes) + len(body), (serialize << 24) | len(header_bytes)) + header_bytes + body


def encode_frame(h, body=b"", serialize=SERIALIZE_JSON):
    hb = encode_header_json(h) if serialize == SERIALIZE_JSON else encode_header_rmq(h)
    return frame(hb, body_bytes(body), serialize)


def next_frame(buf, pos=0, max_total=None):
    """The first whole frame in buf at pos as (serialize, header bytes, body,
    its length), or None while it is incomplete. With max_total, a length
    outside 4..max_total raises ValueError."""
    if len(buf) - pos < 8:
        return None
    total, word = struct.unpack_from(">iI", buf, pos)
    if max_total is not None and not 4 <= total <= max_total:
        raise ValueError("bad frame length %d" % total)
    if len(buf) - pos < 4 + total:
        return None
    hlen = word & 0xFFFFFF
    return word >> 24, buf[pos + 8:pos + 8 + hlen], buf[pos + 8 + hlen:pos + 4 + total], 4 + total


class Frame:
    """One decoded frame; `ext` is {} when the header has no extFields."""

    def __init__(self, header, body, serialize):
        self.header, self.body, self.serialize = header, body, serialize
        self.code = header.get("code")
        self.flag = header.get("flag", 0)
        self.opaque = header.get("opaque")
        self.ext = header.get("extFields") or {}
        self.remark = header.get("remark")

    @property
    def is_response(self):
        return bool(self.flag & 1)

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "Frame(code=%r flag=%r opaque=%r ext=%r remark=%r body=%r)" % (
            self.code, self.flag, self.opaque, self.ext, self.remark, self.body[:200])


def connect(addr, timeout=5.0):
    """A TCP connection to "host:port" with Nagle off, as the clients open theirs."""
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
