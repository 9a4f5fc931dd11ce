#!/usr/bin/env python3
"""Writes the hand-picked seed inputs of tests/fuzz/corpus/<target>/.

Seeds come from the real captures (tests/data/captures/*.jsonl rawHex, their
headers and heartbeat bodies), small cases of tests/data/allocation.jsonl and
handwritten edge cases. Run from anywhere; it only (re)writes files named
seed-*, so minimised finds and crash-* reproducers are left alone.
"""
import glob
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'data')
CORPUS = os.path.join(HERE, 'corpus')


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(data)


def frame(header, body=b'', stype=0):
    return struct.pack('>II', 4 + len(header) + len(body), stype << 24 | len(header)) + header + body


def captures():
    out = []
    for path in sorted(glob.glob(os.path.join(DATA, 'captures', '*.jsonl'))):
        for line in open(path):
            out.append((os.path.basename(path)[:-6], json.loads(line)))
    return out


def main():
    caps = captures()
    seen_frame, seen_hdr, seen_rmq, hbs = set(), set(), set(), []
    raw = []
    for src, c in caps:
        key = (src, c['code'], c['flag'])
        if 'rawHex' in c and key not in seen_frame:
            seen_frame.add(key)
            b = bytes.fromhex(c['rawHex'])
            raw.append(b)
            put('frame', '%s-%d-%d' % (src, c['code'], c['flag']), b)
        h = c['header']
        if h.startswith('ROCKETMQ-binary:'):
            if (c['code'], c['flag']) not in seen_rmq:
                seen_rmq.add((c['code'], c['flag']))
                put('header_rmq', 'cap-%d-%d' % (c['code'], c['flag']), bytes.fromhex(h.split(':', 1)[1]))
        elif (src, c['code'], c['flag']) not in seen_hdr:
            seen_hdr.add((src, c['code'], c['flag']))
            put('header_json', '%s-%d-%d' % (src, c['code'], c['flag']), h)
        if c['code'] == 34 and 'rawHex' in c and len(hbs) < 12:
            b = bytes.fromhex(c['rawHex'])
            body = b[8 + (struct.unpack('>I', b[4:8])[0] & 0xFFFFFF):]
            if body and body not in hbs:
                hbs.append(body)
    # A stream of several frames, and frames split oddly or malformed.
    put('frame', 'stream3', b''.join(raw[:3]))
    put('frame', 'json-ext-number', frame(b'{"code":34,"extFields":{"n":5,"b":true,"r":1.5,"z":null},"flag":0,'
                                          b'"language":"CPP","opaque":7,"version":1}', b'{}'))
    put('frame', 'rmq-min', frame(bytes(13) + bytes(8), b'body', 1))
    put('frame', 'bad-type', struct.pack('>II', 8, 2 << 24 | 4) + b'abcd')
    put('frame', 'short-total', struct.pack('>I', 3))
    put('frame', 'huge', struct.pack('>II', 0x7fffffff, 0))
    put('frame', 'hlen-over', struct.pack('>II', 8, 100) + b'{}{}')
    for i, b in enumerate(hbs):
        put('heartbeat', 'cap%02d' % i, b)
    put('heartbeat', 'cpp-ordinals', '{"clientID":"10.0.0.1@1","consumerDataSet":[{"groupName":"G","consumeType":1,'
        '"messageModel":1,"consumeFromWhere":4,"unitMode":false,"subscriptionDataSet":[{"topic":"T",'
        '"subString":"a || b","tagsSet":["a","b"],"codeSet":[97,98],"subVersion":"1700000000000",'
        '"expressionType":"TAG","classFilterMode":false}]}],"producerDataSet":[{"groupName":"P"}],'
        '"heartbeatFingerprint":-5,"withoutSub":true}\n')
    put('heartbeat', 'minimal', '{"clientID":"c"}')
    put('heartbeat', 'nulls', '{"clientID":"c","consumerDataSet":null,"producerDataSet":[],"withoutSub":null}')
    # Header edge cases.
    put('header_json', 'ext-scalars', '{"code":11,"extFields":{"i":-9223372036854775808,"r":1e300,"t":true,'
        '"f":false,"n":null,"s":"\\u00e9\\ud83d\\ude00\\n"},"language":3,"remark":"\\"x\\"","opaque":-1}\n')
    put('header_json', 'empty-remark', '{"code":0,"remark":"","extFields":{}}')
    put('header_json', 'dup-keys', '{"code":1,"extFields":{"a":"1","a":"2"},"language":"NOPE"}')
    ext = struct.pack('>H', 1) + b'k' + struct.pack('>I', 1) + b'v'
    put('header_rmq', 'ext-dup', struct.pack('>hBhii', 34, 9, 409, 5, 0) + struct.pack('>I', 2) + b'hi' +
        struct.pack('>I', 2 * len(ext)) + ext + ext)
    put('header_rmq', 'min', bytes(21))
    put('header_rmq', 'neg-remark', bytes(13) + struct.pack('>i', -1) + bytes(4))
    # Lock bodies (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).
    put('lock_body', 'java', '{"clientId":"10.0.0.1@123","consumerGroup":"G1","mqSet":[{"brokerName":"broker-a",'
        '"queueId":0,"topic":"T1"},{"brokerName":"broker-a","queueId":1,"topic":"T1"}]}')
    put('lock_body', 'string-qid', '{"clientId":"c","consumerGroup":"g","mqSet":[{"brokerName":"b",'
        '"queueId":"2147483647","topic":"t"}],"onlyThisBroker":true}\n')
    put('lock_body', 'empty', '{"clientId":"c","consumerGroup":"g"}')
    put('lock_body', 'bad-qid', '{"clientId":"c","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":-1,'
        '"topic":"t"}]}')
    # Allocation cases: the smallest few of each strategy, minus "expected".
    by = {}
    for line in open(os.path.join(DATA, 'allocation.jsonl')):
        d = json.loads(line)
        by.setdefault(d['strategy'], []).append(d)
    for s, cases in by.items():
        for d in sorted(cases, key=lambda d: len(json.dumps(d)))[:3]:
            d.pop('expected', None)
            put('allocate', '%s-%d' % (s, d['case']), json.dumps(d, separators=(',', ':')))
    put('allocate', 'dup-ids', '{"strategy":"CONSISTENT_HASH","queues":[{"topic":"t","brokerName":"b","queueId":0},'
        '{"topic":"t","brokerName":"b","queueId":1}],"consumers":["a","a","b"],"options":{"virtualNodes":3}}')
    put('allocate', 'nearby-rule', '{"strategy":"MACHINE_ROOM_NEARBY","queues":[{"topic":"t","brokerName":"b-hz",'
        '"queueId":0},{"topic":"t","brokerName":"b-sh","queueId":1}],"consumers":["c1-hz","c2-bj"],'
        '"options":{"inner":"AVG_BY_CIRCLE"}}')
    put('allocate', 'room', '{"strategy":"MACHINE_ROOM","queues":[{"topic":"t","brokerName":"hz@b","queueId":0},'
        '{"topic":"t","brokerName":"sh@b@","queueId":1}],"consumers":["x","y"],"options":{"consumerIdcs":["hz",'
        '"sh"]}}')
    # HTTP paths: control byte (see fuzz_http_router.c) then the path.
    paths = ['/healthz', '/api/groups', '/api/groups/%25RETRY%25G1', '/api/groups/G1/allocation',
             '/api/topics', '/api/topics/T%2F1', '/api/events', '/api/groups/', '/api/groups/a/b',
             '/api/topics/%zz', '/api/groups/%00', '//api', '12345', '9223372036854775807', 'a+b%20c']
    for i, p in enumerate(paths):
        put('http_router', 'path%02d' % i, bytes([i * 37 % 256]) + p.encode())


if __name__ == '__main__':
    main()
