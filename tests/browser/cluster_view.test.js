// The dashboard of a name server (serve --role namesrv, docs/cluster.md):
// no consumer group lives there, so instead of "No consumer group yet" it
// shows the cluster — the registered brokers (address, registrations, expiry,
// topics) and, for a group typed in, each broker's member list and whether
// the brokers agree (GET /api/cluster?group=G). A broker registers with the
// name server and a consumer heartbeats to the broker. Screenshots:
// namesrv.png (1280 px) and namesrv-800.png.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startDaemon, stopDaemon, launchBrowser, screenshot } = require('./lib/browser');
const { Consumer } = require('./lib/remoting');

const GROUP = 'GID_CLUSTER';
const TOPIC = 'TopicCluster';

const daemons = [];
let tmp, ns, broker, consumer, context, page;

async function start(name, extra) {
  const d = await startDaemon(tmp, name, extra);
  daemons.push(d.proc);
  return d;
}

async function getJson(port, p) {
  const r = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: r.status, body: await r.json() };
}

async function until(what, fn, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rmqcoord-browser-ns-'));
  ns = await start('namesrv', ['--role', 'namesrv']);
  broker = await start('broker-a', ['--role', 'broker', '--namesrv', `127.0.0.1:${ns.remoting}`,
    '--broker-name', 'broker-a', '--topic', `${TOPIC}:4`]);
  await until('broker-a registered', async () => ((await getJson(ns.http, '/api/cluster')).body.brokers || []).length === 1);
  consumer = new Consumer({ port: broker.remoting, clientId: '10.0.0.9@ns-c1', group: GROUP, topics: [TOPIC] });
  await consumer.start();
  await until('the member on broker-a', async () => (await getJson(broker.http, `/api/groups/${GROUP}`)).status === 200);
  ({ context, page } = await launchBrowser({ viewport: { width: 1280, height: 800 } }));
});

after(async () => {
  if (consumer) consumer.stop();
  if (context) await context.close();
  for (const d of daemons.reverse()) await stopDaemon(d);
});

test('a name server shows the cluster, not "No consumer group yet"', async () => {
  await page.goto(`http://127.0.0.1:${ns.http}/`);
  await page.waitForSelector('#cluster-pane', { state: 'visible', timeout: 10000 });
  await page.waitForSelector('#brokers tr[data-broker="broker-a"]', { timeout: 10000 });
  assert.equal(await page.locator('#groups-empty').isVisible(), false);
  assert.equal(await page.locator('#groups-pane').isVisible(), false);
  const row = await page.locator('#brokers tr[data-broker="broker-a"] td').allTextContents();
  assert.equal(row[1], `127.0.0.1:${broker.remoting}`, 'broker address');
  assert.equal(row[3], `127.0.0.1:${broker.http}`, 'its admin API');
  assert.match(row[4], /^[1-9]\d*$/, 'registrations');
  assert.match(row[8], new RegExp(TOPIC));
  assert.match(await page.locator('#cluster-name').textContent(), /DefaultCluster/);
});

test('per group, each broker\'s members', async () => {
  await page.fill('#cluster-group', GROUP);
  await page.click('#cluster-group-form button[type=submit]');
  await page.waitForSelector('#cluster-members tr[data-broker="broker-a"][data-members="1"]', { timeout: 10000 });
  assert.match(await page.locator('#cluster-members tr[data-broker="broker-a"]').textContent(), /10\.0\.0\.9@ns-c1/);
  await page.waitForSelector('#cluster-agree[data-agree="true"]');
  assert.equal(new URL(page.url()).hash, `#/cluster/${GROUP}`);
  await screenshot(page, 'namesrv.png');
});

test('the cluster view at 800 px, and a reload keeps the group', async () => {
  await page.setViewportSize({ width: 800, height: 800 });
  await page.reload();
  await page.waitForSelector('#cluster-members tr[data-broker="broker-a"][data-members="1"]', { timeout: 10000 });
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(w <= 800, `page scrollWidth ${w} > 800`);
  await screenshot(page, 'namesrv-800.png');
});
