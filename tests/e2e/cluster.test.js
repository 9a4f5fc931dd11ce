'use strict';
// Scenario 10: a three-process cluster (docs/cluster.md) on loopback — one
// `--role namesrv` and two `--role broker` processes (broker-a, broker-b, each
// with TopicTest:4) — and two real ali-ons consumers pointed at the name server
// only. The route lists both brokers, the consumers together hold all 8 queues
// (4 per broker), disjoint; after broker-b is SIGKILLed and the name server has
// dropped it, they rebalance onto broker-a's 4 queues.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { scenario, waitFor } = require('./lib/harness');

const TOPIC = 'TopicTest';
const GROUP = 'G_S10';
const WAIT = 15000;
const HOLD = 1500;
const FAST_REGISTER = ['--register-interval-ms', '300'];

function spec(name, extra = {}) {
  return Object.assign({ name, consumerGroup: GROUP, topic: TOPIC, instanceName: name }, extra);
}

const keys = (brokers, n) => brokers.flatMap(b => Array.from({ length: n }, (_, q) => `${b}:${q}`)).sort();

/** null when the handles hold exactly `want` ('broker:queue' keys) between them, disjoint; else what is wrong. */
function clusterCoverageProblem(handles, want) {
  const owner = new Map();
  const problems = [];
  for (const h of handles) {
    if (!h.state || !h.state.ready) { problems.push(`${h.name} not ready`); continue; }
    for (const k of h.mqs) {
      if (owner.has(k)) problems.push(`${k} held by ${owner.get(k)} and ${h.name}`);
      else owner.set(k, h.name);
    }
  }
  for (const k of want) if (!owner.has(k)) problems.push(`${k} unowned`);
  for (const k of owner.keys()) if (!want.includes(k)) problems.push(`unexpected ${k}`);
  return problems.length ? problems.join('; ') : null;
}

const describe = hs => hs.map(h => `${h.describe()} mqs=${JSON.stringify(h.mqs)}`).join('\n  ');

/** brokerName -> the TopicTest entry the name server routes (GET /api/cluster). */
async function routedBrokers(ns) {
  const r = await ns.http('GET', '/api/cluster');
  assert.equal(r.status, 200, `GET /api/cluster: ${r.status} ${r.text}`);
  const out = {};
  for (const b of r.json.brokers || []) {
    const t = (b.topics || []).find(x => x.topic === TOPIC);
    if (t) out[b.brokerName] = { brokerAddr: b.brokerAddr, readQueueNums: t.readQueueNums, writeQueueNums: t.writeQueueNums };
  }
  return out;
}

test('10. cluster: two brokers behind a name server, 8 queues split 4/4; broker-b SIGKILLed -> broker-a\'s 4', async () => {
  await scenario('s10-cluster', async env => {
    const ns = await env.daemon(['--role', 'namesrv', '--broker-expiry-ms', '1500'], { name: 'namesrv' });
    const broker = name => env.daemon(['--role', 'broker', '--namesrv', ns.nameSrv, '--broker-name', name,
      '--topic', `${TOPIC}:4`, ...FAST_REGISTER], { name });
    const a = await broker('broker-a');
    const b = await broker('broker-b');

    // the route lists both brokers, each at its own address with 4 queues
    let routed = null;
    await waitFor('name server routes TopicTest over broker-a and broker-b', async () => {
      routed = await routedBrokers(ns);
      return JSON.stringify(Object.keys(routed).sort()) === '["broker-a","broker-b"]';
    }, { timeoutMs: 5000, describe: () => JSON.stringify(routed) });
    assert.deepEqual(routed, {
      'broker-a': { brokerAddr: a.nameSrv, readQueueNums: 4, writeQueueNums: 4 },
      'broker-b': { brokerAddr: b.nameSrv, readQueueNums: 4, writeQueueNums: 4 },
    });

    // route polls every second so the client sees broker-b leave promptly
    const fast = { options: { pollNameServerInteval: 1000, heartbeatBrokerInterval: 1000 } };
    const cs = ['s10a', 's10b'].map(n => env.startConsumer(ns, spec(n, fast)));
    const all = keys(['broker-a', 'broker-b'], 4);
    await waitFor('two consumers hold all 8 queues of both brokers, 4 each, disjoint', () =>
      !clusterCoverageProblem(cs, all) && cs.every(c => c.mqs.length === 4),
    { timeoutMs: WAIT, holdMs: HOLD, describe: () => `${describe(cs)}\n  problem: ${clusterCoverageProblem(cs, all)}` });

    // each broker lists both consumers (each notifies only its own channels)
    const ids = cs.map(c => c.clientId).sort();
    for (const d of [a, b]) {
      let last = null;
      await waitFor(`${d.name} lists both consumers`, async () => {
        last = await d.groupClientIds(GROUP);
        return JSON.stringify(last) === JSON.stringify(ids);
      }, { timeoutMs: WAIT, describe: () => `${d.name} lists ${JSON.stringify(last)}, want ${JSON.stringify(ids)}` });
    }

    const ex = await b.kill();
    assert.equal(ex.signal, 'SIGKILL');
    await waitFor('name server dropped broker-b', async () => {
      routed = await routedBrokers(ns);
      return JSON.stringify(Object.keys(routed)) === '["broker-a"]';
    }, { timeoutMs: 5000, describe: () => JSON.stringify(routed) });

    const onlyA = keys(['broker-a'], 4);
    await waitFor('consumers rebalance onto broker-a\'s 4 queues (2 + 2, disjoint)', () =>
      !clusterCoverageProblem(cs, onlyA) && cs.every(c => c.mqs.length === 2),
    { timeoutMs: WAIT, holdMs: HOLD, describe: () => `${describe(cs)}\n  problem: ${clusterCoverageProblem(cs, onlyA)}` });
    assert.deepEqual(await a.groupClientIds(GROUP), ids, 'broker-a still lists both consumers');
  });
});
