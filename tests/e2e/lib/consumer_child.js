'use strict';
// One child process hosting one or more real ali-ons push consumers.
//
// Started by harness.js with child_process.fork(); the configuration comes in
// the environment variable E2E_CHILD_CONFIG (JSON):
//   { nameSrv: '127.0.0.1:PORT', logFile: '/tmp/.../x.log', reportMs: 200,
//     consumers: [{ name, consumerGroup, topic, instanceName, isBroadcast,
//                   options: {...extra Consumer options} }] }
//
// Every reportMs it sends {type:'state', pid, t, consumers:[...]} to the
// parent (what each client itself holds, read from consumer.processQueueTable),
// each 'error' event as {type:'error', name, errName, message}, and answers
// commands {cmd, id, name, ...} with {type:'reply', id, ok, result|error}.
//
// Commands:
//   close           - consumer.close() (UNREGISTER_CLIENT; the socket stays
//                     open when the MQClient is shared, e.g. with the inner
//                     producer of the process)
//   stopHeartbeat   - replace MQClient#sendHeartbeatToAllBroker with a no-op
//                     (the socket, the pulls and the rebalance timer go on)
//   commitOffsets   - {offsets: {queueId: offset}}: remote offset store
//                     updateOffset() + persist() (UPDATE_CONSUMER_OFFSET) for
//                     held queues of the consumer's topic
//   queryOffsets    - QUERY_CONSUMER_OFFSET for each held queue of the topic
//   exit            - process.exit(0)
//
// Everything talks to 127.0.0.1 only (nameSrv and clientIP).

const fs = require('fs');
const { Consumer } = require('ali-ons');

const cfg = JSON.parse(process.env.E2E_CHILD_CONFIG || '{}');
const RETRY_PREFIX = '%RETRY%';
const t0 = Date.now();

let logFd = null;
if (cfg.logFile) {
  try { logFd = fs.openSync(cfg.logFile, 'a'); } catch (_) { logFd = null; }
}
const verbose = !!process.env.E2E_VERBOSE;

function log(level, name, args) {
  if (logFd === null) return;
  let text;
  try {
    text = args.map(a => (a instanceof Error ? `${a.name}: ${a.message}` :
      typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
  } catch (_) {
    text = String(args[0]);
  }
  try {
    fs.writeSync(logFd, `[+${((Date.now() - t0) / 1000).toFixed(3)}s pid=${process.pid} ${name} ${level}] ${text}\n`);
  } catch (_) { /* ignore */ }
}

function makeLogger(name) {
  return {
    info: (...a) => { if (verbose) log('INFO', name, a); },
    debug: () => {},
    warn: (...a) => log('WARN', name, a),
    error: (...a) => log('ERROR', name, a),
  };
}

function send(msg) {
  if (process.connected) {
    try { process.send(msg); } catch (_) { /* parent gone */ }
  }
}

// The parent going away must never leave this process behind.
process.on('disconnect', () => process.exit(0));
process.on('unhandledRejection', err => {
  log('ERROR', '-', ['unhandledRejection', err]);
  send({ type: 'error', name: '-', errName: err && err.name, message: String(err && err.message) });
});

const entries = new Map(); // name -> {consumer, spec, ready, readyError, closed, hbStopped, firstOffsets}

for (const spec of cfg.consumers || []) {
  const options = Object.assign({
    httpclient: {},
    nameSrv: cfg.nameSrv,
    clientIP: '127.0.0.1',
    consumerGroup: spec.consumerGroup,
    instanceName: spec.instanceName,
    isBroadcast: !!spec.isBroadcast,
    rebalanceInterval: 1000,
    logger: makeLogger(spec.name),
  }, spec.options || {});
  if (options.instanceName === undefined) delete options.instanceName;

  const consumer = new Consumer(options);
  const entry = { consumer, spec, ready: false, readyError: null, closed: false, closing: false, hbStopped: false, firstOffsets: {} };
  entries.set(spec.name, entry);

  // Record where the client decided to start each queue (the offset it read
  // back from the broker via QUERY_CONSUMER_OFFSET, or GET_MAX_OFFSET when none).
  const origCompute = consumer.computePullFromWhere.bind(consumer);
  consumer.computePullFromWhere = async mq => {
    const r = await origCompute(mq);
    entry.firstOffsets[mq.key] = { topic: mq.topic, queueId: mq.queueId, offset: r };
    return r;
  };

  consumer.on('error', err => {
    log('ERROR-EVENT', spec.name, [err]);
    send({ type: 'error', name: spec.name, errName: err && err.name, message: String(err && err.message) });
  });
  consumer.subscribe(spec.topic, '*', async () => {});
  consumer.ready().then(() => {
    entry.ready = true;
    log('READY', spec.name, [consumer._mqClient.clientId]);
  }, err => {
    entry.readyError = `${err && err.name}: ${err && err.message}`;
    log('READY-FAILED', spec.name, [err]);
  });
}

function held(entry) {
  const main = [];
  const mqs = []; // main topic as 'brokerName:queueId' (a cluster has queue ids per broker)
  const retry = [];
  const other = [];
  const nextOffsets = {};
  if (!entry.closed) {
    for (const v of entry.consumer.processQueueTable.values()) {
      const mq = v.messageQueue;
      if (mq.topic === entry.spec.topic) {
        main.push(mq.queueId);
        mqs.push(`${mq.brokerName}:${mq.queueId}`);
        nextOffsets[mq.queueId] = v.nextOffset;
      } else if (mq.topic.startsWith(RETRY_PREFIX)) {
        retry.push(`${mq.topic}:${mq.queueId}`);
      } else {
        other.push(`${mq.topic}:${mq.queueId}`);
      }
    }
  }
  main.sort((a, b) => a - b);
  mqs.sort();
  retry.sort();
  return { main, mqs, retry, other, nextOffsets };
}

function snapshot() {
  const consumers = [];
  for (const [name, e] of entries) {
    const h = held(e);
    const mq = e.consumer._mqClient;
    consumers.push({
      name,
      clientId: mq.clientId,
      group: e.spec.consumerGroup,
      topic: e.spec.topic,
      ready: e.ready,
      readyError: e.readyError,
      closed: e.closed,
      hbStopped: e.hbStopped,
      queues: h.main,
      mqs: h.mqs,
      retry: h.retry,
      other: h.other,
      nextOffsets: h.nextOffsets,
      firstOffsets: e.firstOffsets,
      // sockets of the (possibly shared) MQClient that are still open
      channels: mq._channels ? mq._channels.size : -1,
      clientConsumers: mq._consumerTable ? mq._consumerTable.size : -1,
      clientProducers: mq._producerTable ? mq._producerTable.size : -1,
    });
  }
  return { type: 'state', pid: process.pid, t: Date.now(), consumers };
}

const reportTimer = setInterval(() => send(snapshot()), cfg.reportMs || 200);
send(snapshot());

function heldQueueObjects(entry) {
  const out = [];
  for (const v of entry.consumer.processQueueTable.values()) {
    if (v.messageQueue.topic === entry.spec.topic) out.push(v.messageQueue);
  }
  return out;
}

const commands = {
  async close(entry) {
    entry.closing = true;
    await entry.consumer.close();
    entry.closed = true;
    return { channelsAfterClose: entry.consumer._mqClient._channels.size };
  },
  async stopHeartbeat(entry) {
    // The real timer method (lib/mq_client.js startScheduledTask calls this[name]()).
    const c = entry.consumer._mqClient;
    if (typeof c.sendHeartbeatToAllBroker !== 'function') throw new Error('sendHeartbeatToAllBroker not found');
    c.sendHeartbeatToAllBroker = async () => {};
    entry.hbStopped = true;
    return { channels: c._channels.size };
  },
  async commitOffsets(entry, msg) {
    const store = entry.consumer._offsetStore;
    const done = {};
    for (const mq of heldQueueObjects(entry)) {
      const off = msg.offsets[String(mq.queueId)];
      if (off === undefined) continue;
      store.updateOffset(mq, off, false);
      await store.persist(mq); // UPDATE_CONSUMER_OFFSET (oneway)
      done[mq.queueId] = off;
    }
    return done;
  },
  async queryOffsets(entry) {
    const store = entry.consumer._offsetStore;
    const out = {};
    for (const mq of heldQueueObjects(entry)) {
      out[mq.queueId] = await store.fetchConsumeOffsetFromBroker(mq); // QUERY_CONSUMER_OFFSET
    }
    return out;
  },
};

process.on('message', async msg => {
  if (!msg || typeof msg !== 'object') return;
  if (msg.cmd === 'exit') {
    clearInterval(reportTimer);
    process.exit(0);
  }
  const reply = { type: 'reply', id: msg.id, ok: false };
  try {
    const entry = entries.get(msg.name);
    if (!entry) throw new Error(`no consumer named ${msg.name}`);
    const fn = commands[msg.cmd];
    if (!fn) throw new Error(`unknown command ${msg.cmd}`);
    reply.result = await fn(entry, msg);
    reply.ok = true;
  } catch (err) {
    reply.error = `${err && err.name}: ${err && err.message}`;
    log('CMD-FAILED', msg.name, [msg.cmd, err]);
  }
  send(reply);
  send(snapshot());
});
