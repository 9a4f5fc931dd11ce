#!/usr/bin/env node
'use strict';
// Test peer for rmqcoord: K real ali-ons push consumers in one process, same
// command line and JSON Lines output as the Java and Go probes
// (tests/clients/README.md). Uses tests/e2e/node_modules (ali-ons 3.12.0).
// ali-ons ignores NOTIFY_CONSUMER_IDS_CHANGED and rebalances on its own timer
// (rebalanceInterval, default 10 s; --rebalance-ms sets it). It has only the
// AVG strategy, no orderly / lite pull / broadcast-free options beyond
// isBroadcast, JSON headers only and no heartbeat v2: those options exit 3
// with an "unsupported" line.

const path = require('path');
const { Consumer } = require(path.join(__dirname, '..', '..', 'e2e', 'node_modules', 'ali-ons'));

function out(obj) {
  obj.ts = Date.now();
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function unsupported(option) {
  out({ event: 'unsupported', option, client: 'ali-ons 3.12.0' });
  process.exit(3);
}

const opt = { alloc: 'AVG', count: 1 };
const flags = new Set(['--broadcast', '--orderly', '--lite-pull', '--heartbeat-v2']);
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const k = argv[i];
  if (flags.has(k)) { opt[k.slice(2)] = true; continue; }
  if (i + 1 >= argv.length) { process.stderr.write(`probe: missing value for ${k}\n`); process.exit(2); }
  opt[k.slice(2)] = argv[++i];
}
for (const need of ['namesrv', 'group', 'topic', 'instance']) {
  if (!opt[need]) { process.stderr.write(`probe: --${need} is required\n`); process.exit(2); }
}
if (opt.alloc !== 'AVG') unsupported(`--alloc ${opt.alloc}`);
if (opt.orderly) unsupported('--orderly');
if (opt['lite-pull']) unsupported('--lite-pull');
if (opt['heartbeat-v2']) unsupported('--heartbeat-v2');
if (opt.serialize && opt.serialize !== 'JSON') unsupported(`--serialize ${opt.serialize}`);

const count = parseInt(opt.count, 10) || 1;
const names = count === 1 ? [opt.instance] : Array.from({ length: count }, (_, i) => `${opt.instance}-${i}`);
const quiet = { info() {}, debug() {}, warn: (...a) => log('WARN', a), error: (...a) => log('ERROR', a) };
function log(level, args) {
  try {
    process.stderr.write(`[${level}] ${args.map(a => (a instanceof Error ? a.stack : typeof a === 'string' ? a : JSON.stringify(a))).join(' ')}\n`);
  } catch (_) { /* ignore */ }
}

const members = names.map(name => {
  const options = {
    httpclient: {},
    nameSrv: opt.namesrv,
    consumerGroup: opt.group,
    instanceName: name,
    isBroadcast: !!opt.broadcast,
    logger: quiet,
  };
  if (opt['client-ip']) options.clientIP = opt['client-ip'];
  if (opt['rebalance-ms']) options.rebalanceInterval = parseInt(opt['rebalance-ms'], 10);
  if (opt['heartbeat-ms']) options.heartbeatBrokerInterval = parseInt(opt['heartbeat-ms'], 10);
  if (opt['poll-nameserver-ms']) options.pollNameServerInteval = parseInt(opt['poll-nameserver-ms'], 10);
  const consumer = new Consumer(options);
  const m = { name, consumer, last: null, lastOff: null, firstOffsets: new Map(), stopped: false, started: false };
  // where the client decided to start each queue (QUERY_CONSUMER_OFFSET's answer)
  const orig = consumer.computePullFromWhere.bind(consumer);
  consumer.computePullFromWhere = async mq => {
    const r = await orig(mq);
    m.firstOffsets.set(mq.key, { topic: mq.topic, broker: mq.brokerName, queueId: mq.queueId, offset: Number(r) });
    return r;
  };
  consumer.on('error', err => log('ERROR', [err]));
  consumer.subscribe(opt.topic, '*', async () => {});
  consumer.ready().then(() => {
    m.started = true;
    out({ event: 'started', instance: name, clientId: consumer._mqClient.clientId });
  }, err => out({ event: 'start_error', instance: name, error: String(err && err.message) }));
  return m;
});

function poll() {
  for (const m of members) {
    if (m.stopped || !m.started) continue;
    const qs = [];
    for (const v of m.consumer.processQueueTable.values()) {
      const mq = v.messageQueue;
      qs.push({ topic: mq.topic, broker: mq.brokerName, queueId: mq.queueId });
    }
    qs.sort((a, b) => (a.topic + '\0' + a.broker).localeCompare(b.topic + '\0' + b.broker) || a.queueId - b.queueId);
    const sig = JSON.stringify(qs);
    if (sig !== m.last) {
      m.last = sig;
      out({ event: 'holdings', instance: m.name, clientId: m.consumer._mqClient.clientId, queues: qs });
    }
    const offs = [...m.firstOffsets.values()].sort((a, b) => a.queueId - b.queueId);
    const osig = JSON.stringify(offs);
    if (osig !== m.lastOff) {
      m.lastOff = osig;
      out({ event: 'offsets', instance: m.name, clientId: m.consumer._mqClient.clientId, offsets: offs });
    }
  }
}
const timer = setInterval(poll, 20);

if (opt.subscribe2) {
  setTimeout(() => {
    for (const m of members) {
      if (m.stopped) continue;
      m.consumer.subscribe(opt.subscribe2, '*', async () => {});
      out({ event: 'subscribed', instance: m.name, clientId: m.consumer._mqClient.clientId, topic: opt.subscribe2 });
    }
  }, parseInt(opt['subscribe2-after-ms'] || '0', 10));
}

let down = false;
async function shutdown() {
  if (down) return;
  down = true;
  clearInterval(timer);
  for (const m of members) {
    m.stopped = true;
    try {
      await Promise.race([m.consumer.close(), new Promise(r => setTimeout(r, 5000))]);
    } catch (err) { log('WARN', ['close', err]); }
    out({ event: 'shutdown', instance: m.name, clientId: m.consumer._mqClient.clientId });
  }
  out({ event: 'exit' });
  process.exit(0);
}

process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.stdin.setEncoding('utf8');
let buf = '';
process.stdin.on('data', d => {
  buf += d;
  if (buf.split('\n').some(l => l.trim() === 'stop')) shutdown();
});
process.stdin.on('end', shutdown);
