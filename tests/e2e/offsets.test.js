'use strict';
// Scenario 8: committed consumer offsets survive a consumer restart and a
// daemon restart (SIGTERM, same --store). rmqcoord stores no messages, so the
// check goes through the offset API the real client uses: the consumer's own
// RemoteBrokerOffsetStore commits (updateOffset + persist -> UPDATE_CONSUMER_OFFSET),
// and a new consumer of the same group must start each queue exactly there
// (computePullFromWhere -> QUERY_CONSUMER_OFFSET).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { scenario, waitFor, sleep, coverageProblem, range } = require('./lib/harness');

const Q = 8;
const TOPIC = 'T_S8';
const GROUP = 'G_S8';
const committed = Object.fromEntries(range(Q).map(q => [String(q), 1000 + 111 * q]));

function spec(name, extra = {}) {
  return Object.assign({
    name, consumerGroup: GROUP, topic: TOPIC, instanceName: name,
    options: { persistConsumerOffsetInterval: 500 },
  }, extra);
}

async function holdsAll(env, c, what) {
  await waitFor(what, () => c.state && c.state.ready && !coverageProblem([c], Q) && c.retry.length === 1,
    { timeoutMs: 15000, holdMs: 1000, describe: () => env.describe([c]) });
}

function startOffsets(c) {
  const out = {};
  for (const v of Object.values(c.state.firstOffsets)) if (v.topic === TOPIC) out[String(v.queueId)] = v.offset;
  return out;
}

test('8. committed offsets are where a restarted consumer resumes, across a daemon restart', async () => {
  await scenario('s8-offsets', async env => {
    const d = await env.daemon(['--topic', `${TOPIC}:${Q}`]);

    // Run 1: a consumer runs (its timer commits every 500 ms), then commits known offsets.
    const a = env.startConsumer(d, spec('s8a'));
    await holdsAll(env, a, 'a holds 0..7 and the retry queue');
    await sleep(1200); // let a few persistConsumerOffset rounds go out
    const done = await a.commitOffsets(committed);
    assert.deepEqual(done, committed, 'commit went out for every queue');
    let seen = null;
    await waitFor('daemon returns the committed offsets (same daemon)', async () => {
      seen = await a.queryOffsets();
      return JSON.stringify(seen) === JSON.stringify(committed);
    }, { timeoutMs: 5000, intervalMs: 250, describe: () => `QUERY_CONSUMER_OFFSET returned ${JSON.stringify(seen)}` });
    await sleep(1200); // the 500 ms persist timer re-commits the same values; they must not change
    seen = await a.queryOffsets();
    assert.deepEqual(seen, committed, 'timer commits keep the committed offsets');
    await a.close();
    await waitFor('daemon forgets a after close', async () => (await d.groupClientIds(GROUP)).length === 0,
      { timeoutMs: 10000, intervalMs: 200 });
    await a.proc.exit();

    // Run 2: a new consumer of the same group on the same daemon resumes there.
    const b = env.startConsumer(d, spec('s8b'));
    await holdsAll(env, b, 'b holds 0..7');
    assert.deepEqual(startOffsets(b), committed, 'b starts every queue at the committed offset');
    await b.close();
    await b.proc.exit();

    // Daemon restart (SIGTERM, same store).
    const ex = await d.restart();
    assert.deepEqual({ code: ex.code, signal: ex.signal, forced: !!ex.forced }, { code: 0, signal: null, forced: false },
      'daemon exits 0 on SIGTERM');

    // Run 3: after the restart a new consumer resumes at the same offsets.
    const c = env.startConsumer(d, spec('s8c'));
    await holdsAll(env, c, 'c holds 0..7 after the daemon restart');
    assert.deepEqual(startOffsets(c), committed, 'c starts every queue at the committed offset after restart');
    seen = await c.queryOffsets();
    assert.deepEqual(seen, committed, 'QUERY_CONSUMER_OFFSET after restart');
  });
});
