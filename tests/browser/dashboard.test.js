// The dashboard in a real browser (Debian's chromium, headless, driven by
// playwright-core): a consumer heartbeats and its group appears; a second
// one joins and the allocation matrix changes; the live timeline shows the
// joins from the event stream; a fresh page shows the recent history without
// any action; the six strategies with their inputs; the strategy the clients
// report is the default; no page-level horizontal scrolling at 800 px.
// Screenshots (dashboard.png, dashboard-1280.png, dashboard-800.png) are
// saved under build/test-artifacts/ for a human to look at.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startDaemon, stopDaemon, launchBrowser, screenshot } = require('./lib/browser');
const { Consumer } = require('./lib/remoting');

const GROUP = 'GID_DASHBOARD';
const TOPIC = 'TopicTest';

let ports, context, page;
const consumers = [];

async function httpJson(method, p, body) {
  const r = await fetch(`http://127.0.0.1:${ports.http}${p}`, {
    method, headers: { 'Content-Type': 'application/json' }, body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json() };
}

before(async () => {
  ports = await startDaemon(fs.mkdtempSync(path.join(os.tmpdir(), 'rmqcoord-browser-')), 'daemon');
  const put = await httpJson('PUT', `/api/topics/${TOPIC}`, { readQueueNums: 4, writeQueueNums: 4 });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  ({ context, page } = await launchBrowser({ viewport: { width: 1400, height: 900 } }));
});

after(async () => {
  for (const c of consumers) c.stop();
  if (context) await context.close();
  if (ports) await stopDaemon(ports.proc);
});

async function startConsumer(clientId, group = GROUP, opts = {}) {
  const c = new Consumer({ port: ports.remoting, clientId, group, topics: [TOPIC], ...opts });
  consumers.push(c);
  return c.start();
}

test('the dashboard loads with no group yet', async () => {
  await page.goto(`http://127.0.0.1:${ports.http}/`);
  await page.waitForSelector('#groups-empty', { state: 'visible' });
  await page.waitForSelector('#stream-state.live', { timeout: 10000 });
  assert.equal(await page.locator('#groups tbody tr').count(), 0);
  await page.waitForSelector('#timeline[data-loaded="true"]', { state: 'attached', timeout: 10000 });
  await page.waitForSelector('#timeline-empty', { state: 'visible' });
  assert.equal(await page.locator('#cluster-pane').isVisible(), false, 'no cluster view on --role both');
});

test('a group appears when a consumer heartbeats', async () => {
  await startConsumer('10.0.0.1@browser-c1');
  const row = page.locator(`#groups tr[data-group="${GROUP}"]`);
  await row.waitFor({ timeout: 10000 });
  await page.waitForSelector(`#groups tr[data-group="${GROUP}"] td[data-members="1"]`, { timeout: 10000 });
  await row.click();
  await page.waitForSelector('#matrix[data-consumers="1"][data-queues="4"]', { timeout: 10000 });
  const owners = await page.locator('#matrix td.cell.own').count();
  assert.equal(owners, 4, 'the only consumer owns all 4 queues');
  await page.waitForSelector('#members tr[data-client="10.0.0.1@browser-c1"]');
});

test('the matrix changes when a second consumer joins', async () => {
  await startConsumer('10.0.0.2@browser-c2');
  await page.waitForSelector('#matrix[data-consumers="2"]', { timeout: 10000 });
  await page.waitForSelector(`#groups tr[data-group="${GROUP}"] td[data-members="2"]`, { timeout: 10000 });
  const c1 = await page.locator('#matrix td.cell.own[data-owner="10.0.0.1@browser-c1"]').count();
  const c2 = await page.locator('#matrix td.cell.own[data-owner="10.0.0.2@browser-c2"]').count();
  assert.deepEqual([c1, c2], [2, 2], 'AVG splits 4 queues 2 + 2');
  assert.equal(await page.locator('#members tbody tr').count(), 2);
  // the live timeline got both joins from the event stream
  await page.waitForFunction(() => document.querySelectorAll('#timeline li[data-kind="join"]').length >= 2, null,
    { timeout: 10000 });
  await page.selectOption('#alloc-strategy', 'AVG_BY_CIRCLE');
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('#matrix tbody tr')].map((tr) => tr.querySelector('td.own')?.dataset.owner);
    return cells.length === 4 && cells[0] !== cells[1];
  }, null, { timeout: 10000 });
  await screenshot(page, 'dashboard.png');
});

test('a fresh page shows the recent history without any action', async () => {
  const p2 = await context.newPage();
  try {
    await p2.goto(`http://127.0.0.1:${ports.http}/`);
    await p2.waitForSelector('#timeline[data-loaded="true"]', { state: 'attached', timeout: 10000 });
    const rows = await p2.locator('#timeline li.history[data-kind="join"]').count();
    assert.ok(rows >= 2, `history rows on load: ${rows}`);
    assert.match(await p2.locator('#timeline-scope').textContent(), /all groups/);
    // newest first
    const ids = await p2.locator('#timeline li').evaluateAll((lis) => lis.map((li) => Number(li.dataset.id)));
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a));
    // the selected group's history
    await p2.goto(`http://127.0.0.1:${ports.http}/#/groups/${GROUP}`);
    await p2.reload();
    await p2.waitForSelector('#timeline[data-loaded="true"]', { state: 'attached', timeout: 10000 });
    assert.match(await p2.locator('#timeline-scope').textContent(), new RegExp(GROUP));
    const groups = await p2.locator('#timeline li.history').evaluateAll((lis) => lis.map((li) => li.dataset.group));
    assert.ok(groups.length >= 2 && groups.every((g) => g === GROUP), JSON.stringify(groups));
  } finally {
    await p2.close();
  }
});

test('the allocation view offers the six strategies with their inputs', async () => {
  const opts = await page.locator('#alloc-strategy option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(opts, ['AVG', 'AVG_BY_CIRCLE', 'CONFIG', 'MACHINE_ROOM', 'MACHINE_ROOM_NEARBY', 'CONSISTENT_HASH']);
  const visibleInputs = () => page.locator('.strategy-opts label:not([hidden])').evaluateAll((ls) => ls.map((l) => l.dataset.for));
  const firstQueue = await page.locator('#matrix tbody tr').first().getAttribute('data-queue'); // broker/queueId
  await page.selectOption('#alloc-strategy', 'CONFIG');
  assert.deepEqual(await visibleInputs(), ['CONFIG']);
  await page.fill('#opt-config', firstQueue.replace('/', ':'));
  await page.locator('#opt-config').dispatchEvent('change');
  // CONFIG gives every client the configured queue, and nobody the others
  await page.waitForFunction(() => document.querySelectorAll('#matrix td.cell.own').length === 2
    && document.querySelectorAll('#matrix tr.unassigned').length === 3, null, { timeout: 10000 });
  await page.selectOption('#alloc-strategy', 'MACHINE_ROOM');
  assert.deepEqual(await visibleInputs(), ['MACHINE_ROOM']);
  await page.selectOption('#alloc-strategy', 'CONSISTENT_HASH');
  assert.deepEqual(await visibleInputs(), ['CONSISTENT_HASH']);
  await page.fill('#opt-vnodes', '50');
  await page.locator('#opt-vnodes').dispatchEvent('change');
  await page.waitForFunction(() => document.querySelectorAll('#matrix td.cell.own').length === 4, null, { timeout: 10000 });
  await page.selectOption('#alloc-strategy', 'MACHINE_ROOM_NEARBY');
  assert.deepEqual(await visibleInputs(), ['MACHINE_ROOM_NEARBY', 'MACHINE_ROOM_NEARBY', 'MACHINE_ROOM_NEARBY']);
  await page.waitForFunction(() => document.querySelectorAll('#matrix td.cell.own').length === 4, null, { timeout: 10000 });
  assert.equal(await page.locator('#alloc-strategy').getAttribute('data-source'), 'chosen');
});

test('usable at 1280 and 800 px wide', async () => {
  for (const width of [1280, 800]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(300);
    const m = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth, client: document.documentElement.clientWidth,
    }));
    assert.ok(m.scroll <= width, `page scrollWidth ${m.scroll} > ${width}`);
    assert.ok(m.body <= width, `body scrollWidth ${m.body} > ${width}`);
    // every pane fits the viewport
    const overflow = await page.evaluate((w) => [...document.querySelectorAll('header, main > *')]
      .filter((e) => e.offsetParent !== null || e.tagName === 'HEADER')
      .map((e) => ({ id: e.id || e.tagName, right: e.getBoundingClientRect().right }))
      .filter((r) => r.right > w + 0.5), width);
    assert.deepEqual(overflow, []);
    await screenshot(page, `dashboard-${width}.png`);
  }
  await page.setViewportSize({ width: 1400, height: 900 });
});

test('a leaving consumer shows up in the timeline and the matrix', async () => {
  consumers[0].stop();
  await page.waitForSelector('#timeline li[data-kind="close"]', { timeout: 10000 });
  await page.waitForSelector('#matrix[data-consumers="1"]', { timeout: 10000 });
});

test('by default the allocation uses the strategy the clients report', async () => {
  const G2 = 'GID_REPORTED';
  await startConsumer('10.0.0.3@browser-c3', G2, { strategy: 'CONSISTENT_HASH' });
  await page.goto(`http://127.0.0.1:${ports.http}/#/groups/${G2}`);
  await page.waitForSelector('#alloc-strategy[data-source="clients"]', { timeout: 10000 });
  assert.equal(await page.locator('#alloc-strategy').inputValue(), 'CONSISTENT_HASH');
  assert.match(await page.locator('#strategy-source').textContent(), /CONSISTENT_HASH/);
  assert.deepEqual(await page.locator('.strategy-opts label:not([hidden])').evaluateAll((ls) => ls.map((l) => l.dataset.for)),
    ['CONSISTENT_HASH']);
  await page.waitForSelector('#matrix[data-consumers="1"][data-queues="4"]', { timeout: 10000 });
});

test('a group whose clients report no strategy falls back to AVG', async () => {
  await page.goto(`http://127.0.0.1:${ports.http}/#/groups/${GROUP}`);
  await page.waitForSelector('#alloc-strategy[data-source="default"]', { timeout: 10000 });
  assert.equal(await page.locator('#alloc-strategy').inputValue(), 'AVG');
});

test('with a long history, the timeline shows the newest events', async () => {
  // 1100+ events: more than one page of /api/events (1000), so the page has
  // to find the newest ones rather than read the oldest.
  const G3 = 'GID_BULK';
  for (let i = 0; i < 560; i++) {
    const c = new Consumer({ port: ports.remoting, clientId: `10.0.1.${i % 250}@bulk-${i}`, group: G3, topics: [TOPIC] });
    await c.start();
    await new Promise((r) => { const t = setInterval(() => { if (c.frames > 0) { clearInterval(t); r(); } }, 2); });
    c.stop();
  }
  let newest = 0;
  for (const end = Date.now() + 10000; Date.now() < end;) {
    const all = await httpJson('GET', `/api/events?group=${G3}&limit=1000&since=${newest}`);
    if (all.body.events.length) newest = all.body.events[all.body.events.length - 1].id;
    const closes = all.body.events.filter((e) => e.kind === 'close').length;
    if (!all.body.next && closes && all.body.events[all.body.events.length - 1].kind === 'close') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(newest > 1100, `newest event id ${newest}`);
  const p2 = await context.newPage();
  try {
    await p2.goto(`http://127.0.0.1:${ports.http}/`);
    await p2.waitForSelector('#timeline[data-loaded="true"]', { state: 'attached', timeout: 15000 });
    const ids = await p2.locator('#timeline li.history').evaluateAll((lis) => lis.map((li) => Number(li.dataset.id)));
    assert.equal(ids.length, 50);
    assert.equal(ids[0], newest, 'the newest event on top');
    assert.equal(ids[49], newest - 49, 'the 50 newest, in order');
  } finally {
    await p2.close();
  }
});
