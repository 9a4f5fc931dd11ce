'use strict';
// End-to-end consumer-group scenarios with the real ali-ons client
// (tests/e2e/README.md). Every assertion is about what the clients themselves
// hold (consumer.processQueueTable, reported by lib/consumer_child.js), plus
// the daemon's own view over GET /api/groups/{group}.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { scenario, waitFor, coverageProblem, range } = require('./lib/harness');

const Q = 8;            // queues per topic
const WAIT = 15000;     // max wait for one convergence
const HOLD = 1500;      // a converged state must hold this long (> one rebalanceInterval)

function spec(name, group, topic, extra = {}) {
  return Object.assign({ name, consumerGroup: group, topic, instanceName: name }, extra);
}

function expectCoverage(env, handles, what, { n = Q, sizes, holdMs = HOLD, timeoutMs = WAIT } = {}) {
  return waitFor(what, () => {
    if (!handles.every(h => h.state && h.state.ready)) return false;
    if (coverageProblem(handles, n)) return false;
    if (sizes) {
      const got = handles.map(h => h.queues.length).sort((a, b) => a - b);
      const want = [...sizes].sort((a, b) => a - b);
      if (JSON.stringify(got) !== JSON.stringify(want)) return false;
    }
    return true;
  }, { timeoutMs, holdMs, describe: () => `${env.describe(handles)}\n  problem: ${coverageProblem(handles, n)}` });
}

function expectGroupMembers(env, daemon, group, clientIds, what, { holdMs = 0, timeoutMs = WAIT } = {}) {
  const want = [...clientIds].sort();
  let last = null;
  return waitFor(what, async () => {
    last = await daemon.groupClientIds(group);
    return JSON.stringify(last) === JSON.stringify(want);
  }, { timeoutMs, holdMs, describe: () => `daemon lists ${JSON.stringify(last)}, want ${JSON.stringify(want)}\n  ${env.describe()}` });
}



test('1. one consumer on an (auto-created) 8-queue topic gets all 8 queues', async () => {
  await scenario('s1-single', async env => {
    const d = await env.daemon(['--auto-create-queues', String(Q)]);
    const a = env.startConsumer(d, spec('s1a', 'G_S1', 'T_S1'));
    await expectCoverage(env, [a], 'a holds 0..7');
    assert.deepEqual(a.queues, range(Q));
    await expectGroupMembers(env, d, 'G_S1', [a.clientId], 'daemon lists a');
  });
});

test('2. a second consumer joins: 4 + 4 disjoint, lower client id gets 0-3 (AVG)', async () => {
  await scenario('s2-join', async env => {
    const d = await env.daemon(['--topic', `T_S2:${Q}`]);
    const a = env.startConsumer(d, spec('s2a', 'G_S2', 'T_S2'));
    await expectCoverage(env, [a], 'a alone holds 0..7');
    const b = env.startConsumer(d, spec('s2b', 'G_S2', 'T_S2'));
    await expectCoverage(env, [a, b], 'a and b split 4/4', { sizes: [4, 4] });
    const [low, high] = [a, b].sort((x, y) => (x.clientId < y.clientId ? -1 : x.clientId > y.clientId ? 1 : 0));
    assert.notEqual(low.clientId, high.clientId);
    assert.deepEqual(low.queues, [0, 1, 2, 3], `lower client id ${low.clientId} holds 0-3`);
    assert.deepEqual(high.queues, [4, 5, 6, 7], `higher client id ${high.clientId} holds 4-7`);
    await expectGroupMembers(env, d, 'G_S2', [a.clientId, b.clientId], 'daemon lists a and b');
  });
});

test('3. three consumers, one SIGKILLed: the other two cover all 8 again', async () => {
  await scenario('s3-kill', async env => {
    const d = await env.daemon(['--topic', `T_S3:${Q}`]);
    const cs = ['s3a', 's3b', 's3c'].map(n => env.startConsumer(d, spec(n, 'G_S3', 'T_S3')));
    await expectCoverage(env, cs, 'three consumers split 3/3/2', { sizes: [2, 3, 3] });
    const [a, b, c] = cs;
    const killedId = b.clientId;
    const ex = await b.kill('SIGKILL');
    assert.equal(ex.signal, 'SIGKILL');
    await expectCoverage(env, [a, c], 'survivors split 4/4', { sizes: [4, 4] });
    await expectGroupMembers(env, d, 'G_S3', [a.clientId, c.clientId], `daemon dropped ${killedId}`);
  });
});

test('4. clean close while the socket stays open (shared MQClient): others take over, daemon forgets it', async () => {
  await scenario('s4-close', async env => {
    const d = await env.daemon(['--topic', `T_S4:${Q}`]);
    // c1 is the first consumer of its process, so the process' inner producer
    // (CLIENT_INNER_PRODUCER) shares c1's MQClient: close() sends
    // UNREGISTER_CLIENT but keeps the connection, and producer-only heartbeats
    // continue on it (every 1 s here).
    const fast = { options: { heartbeatBrokerInterval: 1000 } };
    const [c1, c2] = env.startProcess(d, [spec('s4c1', 'G_S4', 'T_S4', fast), spec('s4c2', 'G_S4', 'T_S4', fast)], 's4p1');
    const c3 = env.startConsumer(d, spec('s4c3', 'G_S4', 'T_S4', fast));
    await expectCoverage(env, [c1, c2, c3], 'three consumers split 3/3/2', { sizes: [2, 3, 3] });
    const closedId = c1.clientId;
    const r = await c1.close();
    assert.ok(r.channelsAfterClose > 0, `precondition: c1's socket stays open after close() (open channels: ${r.channelsAfterClose})`);
    await expectCoverage(env, [c2, c3], 'c2 and c3 split 4/4 after c1 closed', { sizes: [4, 4] });
    // must stay gone while c1's client keeps heartbeating (producer only) on the same socket
    await expectGroupMembers(env, d, 'G_S4', [c2.clientId, c3.clientId], `daemon no longer lists ${closedId}`, { holdMs: 2500 });
    assert.ok(c1.state.channels > 0, 'c1 client socket still open at the end');
    assert.ok(c1.proc.alive, 'process of c1 still alive');
  });
});

test('5. a consumer that stops heartbeating (socket open) is expired', async () => {
  await scenario('s5-expiry', async env => {
    const d = await env.daemon(['--topic', `T_S5:${Q}`, '--channel-expiry-ms', '3000', '--expiry-scan-ms', '500']);
    const fast = { options: { heartbeatBrokerInterval: 1000 } };
    const cs = ['s5a', 's5b', 's5c'].map(n => env.startConsumer(d, spec(n, 'G_S5', 'T_S5', fast)));
    await expectCoverage(env, cs, 'three consumers split 3/3/2', { sizes: [2, 3, 3] });
    // the live ones heartbeat every 1 s, so nothing may expire while all heartbeat
    await expectGroupMembers(env, d, 'G_S5', cs.map(c => c.clientId), 'daemon lists all three for 4 s (> expiry)', { holdMs: 4000 });
    const [a, b, c] = cs;
    const silentId = b.clientId;
    const t0 = Date.now();
    await b.stopHeartbeat();
    await expectGroupMembers(env, d, 'G_S5', [a.clientId, c.clientId], `daemon expired ${silentId}`, { timeoutMs: 10000 });
    const expiredAfter = Date.now() - t0;
    // the last heartbeat went out at most ~1 s before t0, so expiry is due 2-3.5 s after t0
    assert.ok(expiredAfter >= 1500, `expired ${expiredAfter} ms after the heartbeats stopped: too early for --channel-expiry-ms 3000`);
    await expectCoverage(env, [a, c], 'a and c split 4/4', { sizes: [4, 4] });
    // the silent client itself sees it is no longer in the group and holds nothing
    await waitFor('silent consumer holds no queue', () => b.alive && b.queues.length === 0,
      { timeoutMs: WAIT, holdMs: HOLD, describe: () => env.describe() });
    await expectGroupMembers(env, d, 'G_S5', [a.clientId, c.clientId], 'silent consumer stays expired', { holdMs: 1500 });
  });
});

test('6. two groups on the same topic are independent', async () => {
  await scenario('s6-groups', async env => {
    const d = await env.daemon([]);
    const put = await d.http('PUT', '/api/topics/T_S6', { readQueueNums: Q, writeQueueNums: Q });
    assert.ok(put.status >= 200 && put.status < 300, `PUT /api/topics/T_S6 -> ${put.status} ${put.text}`);
    const g1 = ['s6x1', 's6x2'].map(n => env.startConsumer(d, spec(n, 'G_S6_X', 'T_S6')));
    const g2 = [env.startConsumer(d, spec('s6y1', 'G_S6_Y', 'T_S6'))];
    await expectCoverage(env, g1, 'group X covers 8 (4/4)', { sizes: [4, 4] });
    await expectCoverage(env, g2, 'group Y covers 8 alone', { sizes: [8] });
    const g2b = env.startConsumer(d, spec('s6y2', 'G_S6_Y', 'T_S6'));
    g2.push(g2b);
    await expectCoverage(env, g2, 'group Y covers 8 (4/4)', { sizes: [4, 4] });
    await expectCoverage(env, g1, 'group X unaffected', { sizes: [4, 4], holdMs: 0 });
    await expectGroupMembers(env, d, 'G_S6_X', g1.map(c => c.clientId), 'daemon: group X members');
    await expectGroupMembers(env, d, 'G_S6_Y', g2.map(c => c.clientId), 'daemon: group Y members');
  });
});

test('7. broadcast consumers each hold every queue', async () => {
  await scenario('s7-broadcast', async env => {
    const d = await env.daemon(['--topic', `T_S7:${Q}`]);
    const cs = ['s7a', 's7b', 's7c'].map(n => env.startConsumer(d, spec(n, 'G_S7', 'T_S7', { isBroadcast: true })));
    await waitFor('every broadcast consumer holds 0..7', () =>
      cs.every(c => c.state && c.state.ready && JSON.stringify(c.queues) === JSON.stringify(range(Q))),
    { timeoutMs: WAIT, holdMs: HOLD, describe: () => env.describe(cs) });
    for (const c of cs) assert.deepEqual(c.retry, [], `${c.name}: broadcast consumers have no retry queue`);
  });
});
