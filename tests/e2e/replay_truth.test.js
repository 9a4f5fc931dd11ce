'use strict';
// Scenario 11: a mixed fleet recorded with --record-holdings-ms. The real
// ali-ons client ignores NOTIFY_CONSUMER_IDS_CHANGED and rebalances on its own
// timer (here every 5 s); `rmqcoord sim` clients act on NOTIFY. When the sims
// join, they take their queues at once while ali-ons keeps all of its until
// its next timer round: a real double consumption. The default
// `rmqcoord replay` (no flag) must find that overlap, with an interval that
// matches what the clients really held, and name ali-ons as the cause.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const { scenario, waitFor, sleep, coverageProblem, BIN } = require('./lib/harness');

const Q = 8;
const PERIOD = 5000;   // ali-ons rebalanceInterval
const SAMPLE = 250;    // --record-holdings-ms

function replayJson(trace) {
  return new Promise((resolve, reject) => {
    execFile(BIN, ['replay', trace, '--format', 'json'], { maxBuffer: 64 << 20, timeout: 60000 }, (err, out, errOut) => {
      if (err) return reject(new Error(`replay failed: ${err.message}\n${errOut}`));
      resolve(out.split('\n').filter(Boolean).map(l => JSON.parse(l)));
    });
  });
}

test('11. ali-ons (ignores NOTIFY) beside NOTIFY-acting sims: default replay finds the real overlap and its cause', async () => {
  await scenario('s11-truth', async env => {
    const d = await env.daemon(['--topic', `T_S11:${Q}`, '--record-holdings-ms', String(SAMPLE)]);
    const sims = [];
    const startSim = id => {
      const cp = spawn(BIN, ['sim', '--namesrv', d.nameSrv, '--group', 'G_S11', '--topic', 'T_S11', '--quiet',
        '--heartbeat-ms', '1000', '--client-id', id], { stdio: 'ignore' });
      sims.push(cp);
      return cp;
    };
    const stopSim = cp => new Promise(resolve => {
      if (cp.exitCode !== null || cp.signalCode !== null) return resolve();
      cp.once('exit', resolve);
      cp.kill('SIGTERM');
    });
    // What ali-ons itself holds, sampled (its own report every 200 ms).
    const seen = [];
    let sampling = true;
    try {
      const a = env.startConsumer(d, { name: 's11a', consumerGroup: 'G_S11', topic: 'T_S11', instanceName: 's11a',
        options: { rebalanceInterval: PERIOD } });
      await waitFor('ali-ons alone holds 0..7', () => a.state && a.state.ready && !coverageProblem([a], Q),
        { timeoutMs: 15000 });
      const sampler = (async () => {
        while (sampling) {
          seen.push({ t: Date.now(), q: [...a.queues] });
          await sleep(100);
        }
      })();
      startSim('127.0.0.1@sim-0');
      // ali-ons gives queues up only on its timer: that moment is one of its rounds.
      await waitFor('ali-ons drops queues on its timer', () => a.queues.length < Q, { timeoutMs: PERIOD + 3000 });
      const tick = Date.now();
      // The next changes come well between two of its rounds, so none looks like a reaction.
      await sleep(2000);
      const s1 = startSim('127.0.0.1@sim-1');
      await sleep(PERIOD);
      await stopSim(s1);
      await sleep(Math.max(0, tick + 2 * PERIOD + 2500 - Date.now()));
      sampling = false;
      await sampler;
      await Promise.all(sims.map(stopSim));
    } finally {
      sampling = false;
      for (const cp of sims) try { cp.kill('SIGKILL'); } catch (_) { /* gone */ }
    }
    await sleep(1500); // the daemon writes its trace once a second
    const a = env.consumers[0];
    const trace = d.trace;
    const aliId = a.clientId;
    assert.ok(aliId, 'ali-ons reported its client id');

    // The holdings the daemon recorded: the sims answer GET_CONSUMER_RUNNING_INFO; ali-ons does not.
    const holdings = fs.readFileSync(trace, 'utf8').split('\n').filter(l => l.includes('"event":"holdings"'))
      .map(l => JSON.parse(l));
    assert.ok(holdings.some(h => h.clientId.startsWith('127.0.0.1@sim-') && Array.isArray(h.queues)),
      'the sims\' answers are recorded');
    const ali = holdings.filter(h => h.clientId === aliId);
    assert.ok(ali.length > 0, 'ali-ons was asked');
    const aliAnswered = ali.filter(h => Array.isArray(h.queues));

    const recs = await replayJson(trace);
    const labels = Object.fromEntries(recs.filter(r => r.type === 'client').map(r => [r.label, r.clientId]));
    const beh = recs.filter(r => r.type === 'behaviour').find(r => r.client === aliId);
    assert.ok(beh, 'ali-ons is modeled');
    assert.equal(beh.notify, false, `ali-ons inferred to ignore NOTIFY: ${JSON.stringify(beh)}`);
    assert.equal(beh.notifySource, 'inferred');
    assert.equal(beh.periodSource, 'inferred', JSON.stringify(beh));
    assert.ok(Math.abs(beh.rebalanceMs - PERIOD) <= 300, `period ${beh.rebalanceMs}`);

    const start = recs.find(r => r.type === 'meta').start;
    const ov = recs.filter(r => r.type === 'overlap');
    assert.ok(ov.length > 0, 'default replay finds no overlap');
    let confirmed = 0;
    for (const r of ov) {
      assert.ok(r.owners.split(',').map(l => labels[l]).includes(aliId), `ali-ons owns ${JSON.stringify(r)}`);
      assert.equal(r.cause && r.cause.client, aliId, `the cause named: ${JSON.stringify(r)}`);
      assert.ok(r.ms > 0 && r.ms <= PERIOD + 500, `interval under one period: ${JSON.stringify(r)}`);
      // Really so: ali-ons held the queue (its own report) inside the interval while a sim held it
      // (the sim's recorded answer).
      const from = start + r.from, to = start + r.to;
      const aliHeld = seen.some(s => s.t >= from && s.t < to && s.q.includes(r.queueId));
      const simHeld = holdings.some(h => h.ts >= from && h.ts < to && h.clientId.startsWith('127.0.0.1@sim-') &&
        Array.isArray(h.queues) && h.queues.some(q => q.topic === 'T_S11' && q.queueId === r.queueId));
      if (aliHeld && simHeld) confirmed++;
    }
    assert.ok(confirmed > 0, `no modeled overlap confirmed by the clients' own holdings: ${JSON.stringify(ov)}`);
    const tot = recs.find(r => r.type === 'totals');
    assert.equal(tot.inferredIgnoreNotify, 1);
    assert.ok(tot.holdingsSamples > 0);
    if (aliAnswered.length === 0) {
      // ali-ons never answers: every ask of it is recorded as unanswered, and
      // no real overlap can be seen with only the sims' answers.
      assert.equal(tot.holdingsUnanswered, ali.length);
    } else {
      assert.ok(recs.some(r => r.type === 'realOverlap'), 'ali-ons answered, so the holdings show the overlap');
    }
  });
});
