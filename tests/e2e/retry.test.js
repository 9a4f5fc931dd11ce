'use strict';
// Scenario 9: the retry topic %RETRY%<group>, which ali-ons subscribes by
// itself in CLUSTERING mode, gets a route from the daemon (no TOPIC_NOT_EXIST /
// "No topic route info" errors) and its single queue is held by exactly one
// consumer of the group (AVG: the lowest client id).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { scenario, waitFor, sleep, coverageProblem } = require('./lib/harness');

const Q = 8;
const WAIT = 15000;

function spec(name, group, topic, extra = {}) {
  return Object.assign({ name, consumerGroup: group, topic, instanceName: name }, extra);
}

const noRouteError = e => /TOPIC_NOT_EXIST|No topic route info|topic\[.*\] not exist/i.test(`${e.errName} ${e.message}`);

test('9. %RETRY% routes resolve: no route errors, the retry queue is held by exactly one consumer', async () => {
  await scenario('s9-retry', async env => {
    const d = await env.daemon(['--topic', `T_S9:${Q}`]);
    // poll routes every second so several route lookups of %RETRY%G_S9 happen
    const fast = { options: { pollNameServerInteval: 1000 } };
    const cs = ['s9a', 's9b'].map(n => env.startConsumer(d, spec(n, 'G_S9', 'T_S9', fast)));
    await waitFor('main topic split 4/4', () => cs.every(c => c.state && c.state.ready && c.queues.length === 4) &&
      !coverageProblem(cs, Q), { timeoutMs: WAIT, holdMs: 1500, describe: () => env.describe(cs) });
    await waitFor('exactly one consumer holds %RETRY%G_S9:0', () => {
      const holders = cs.filter(c => c.retry.includes('%RETRY%G_S9:0'));
      return holders.length === 1 && cs.every(c => c.retry.every(k => k === '%RETRY%G_S9:0'));
    }, { timeoutMs: WAIT, holdMs: 2000, describe: () => env.describe(cs) });
    await sleep(2500); // a few more route polls and rebalances
    const holders = cs.filter(c => c.retry.includes('%RETRY%G_S9:0'));
    assert.equal(holders.length, 1);
    const lowest = [...cs].sort((x, y) => (x.clientId < y.clientId ? -1 : 1))[0];
    assert.equal(holders[0].name, lowest.name, 'AVG gives the single retry queue to the lowest client id');
    const routeErrors = env.errors.filter(noRouteError);
    assert.deepEqual(routeErrors.map(e => `${e.proc}: ${e.errName}: ${e.message}`), [], 'no route errors');
  });
});
