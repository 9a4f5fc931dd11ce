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
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { chromium } = require('playwright-core');
const { Consumer } = require('./lib/remoting');

const root = path.resolve(__dirname, '..', '..');
const BIN = process.env.RMQCOORD_BIN || path.join(root, 'build', 'rmqcoord');
const ARTIFACTS = process.env.ARTIFACTS_DIR || path.join(root, 'build', 'test-artifacts');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const GROUP = 'GID_CLUSTER';
const TOPIC = 'TopicCluster';

const daemons = [];
let tmp, ns, broker, consumer, context, page;

function start(name, extra) {
  const log = fs.openSync(path.join(tmp, name + '.log'), 'a');
  const d = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', '--store', path.join(tmp, name + '.db'), ...extra],
    { stdio: ['ignore', 'pipe', log] });
  daemons.push(d);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(name + ' did not print READY')), 10000);
    const rl = readline.createInterface({ input: d.stdout });
    rl.once('line', (line) => {
      clearTimeout(timer);
      const m = line.match(/^READY remoting=127\.0\.0\.1:(\d+)\S* http=127\.0\.0\.1:(\d+)/);
      if (!m) return reject(new Error('unexpected first line: ' + line));
      resolve({ remoting: Number(m[1]), http: Number(m[2]) });
    });
    d.once('exit', (code) => reject(new Error(name + ' exited with ' + code)));
  });
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
  assert.ok(fs.existsSync(BIN), `daemon binary ${BIN} (build it or set RMQCOORD_BIN)`);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rmqcoord-browser-ns-'));
  ns = await start('namesrv', ['--role', 'namesrv']);
  broker = await start('broker-a', ['--role', 'broker', '--namesrv', `127.0.0.1:${ns.remoting}`,
    '--broker-name', 'broker-a', '--topic', `${TOPIC}:4`]);
  await until('broker-a registered', async () => ((await getJson(ns.http, '/api/cluster')).body.brokers || []).length === 1);
  consumer = new Consumer({ port: broker.remoting, clientId: '10.0.0.9@ns-c1', group: GROUP, topics: [TOPIC] });
  await consumer.start();
  await until('the member on broker-a', async () => (await getJson(broker.http, `/api/groups/${GROUP}`)).status === 200);
  context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), 'rmqcoord-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => { console.log('# page error: ' + e.message); });
});

after(async () => {
  if (consumer) consumer.stop();
  if (context) await context.close();
  for (const d of daemons.reverse()) {
    if (d.exitCode !== null) continue;
    d.kill('SIGTERM');
    await new Promise((r) => { if (d.exitCode !== null) r(); else d.once('exit', r); });
  }
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
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const shot = path.join(ARTIFACTS, 'namesrv.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log('# screenshot: ' + shot);
});

test('the cluster view at 800 px, and a reload keeps the group', async () => {
  await page.setViewportSize({ width: 800, height: 800 });
  await page.reload();
  await page.waitForSelector('#cluster-members tr[data-broker="broker-a"][data-members="1"]', { timeout: 10000 });
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(w <= 800, `page scrollWidth ${w} > 800`);
  const shot = path.join(ARTIFACTS, 'namesrv-800.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log('# screenshot: ' + shot);
});
