// A web page of another origin against the admin API, in a real browser
// (Debian's chromium, headless, driven by playwright-core). Without
// --admin-token the daemon used to accept POST /api/reset with any content
// type and an empty body, which a page sends cross-site without a CORS
// preflight: visiting it wiped every committed offset. The page here is
// served from another loopback port (another origin) and tries a simple
// fetch, a text/plain fetch, a JSON fetch (needs a preflight the daemon
// never grants) and a form POST; the committed offset must survive, and the
// daemon must have seen and refused (415) the requests that reached it.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { startDaemon, stopDaemon, launchBrowser } = require('./lib/browser');
const { frame } = require('./lib/remoting');

const QUERY_OFFSET = 14;
const UPDATE_OFFSET = 15;

let ports, attacker, attackerPort, context, page;

// One remoting request (JSON header) and its reply's extFields; 5 s at most.
function remoting(code, extFields) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ host: '127.0.0.1', port: ports.remoting });
    const timer = setTimeout(() => { sock.destroy(); reject(new Error('no remoting reply')); }, 5000);
    let buf = Buffer.alloc(0);
    sock.on('connect', () => sock.write(frame({ code, language: 'JAVA', version: 409, opaque: 1, flag: 0, extFields })));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return;
      clearTimeout(timer);
      const hlen = buf.readInt32BE(4) & 0xffffff;
      const header = JSON.parse(buf.subarray(8, 8 + hlen).toString('utf8'));
      sock.destroy();
      resolve(header);
    });
    sock.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

async function committedOffset() {
  const r = await remoting(QUERY_OFFSET, { consumerGroup: 'GID_XSITE', topic: 'TopicX', queueId: '0' });
  return r.code === 0 ? (r.extFields || {}).offset : null;
}

function attackPage(target) {
  return `<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="POST" action="${target}/api/reset" enctype="text/plain" target="sink">
  <input name="{}" value="">
</form>
<script>
window.results = {};
async function attempt(name, init) {
  try {
    const r = await fetch('${target}/api/reset', init);
    window.results[name] = 'sent:' + r.type + ':' + r.status;
  } catch (e) {
    window.results[name] = 'blocked:' + e.name;
  }
}
window.run = async () => {
  await attempt('simple', { method: 'POST', mode: 'no-cors' });
  await attempt('textPlain', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: '{}' });
  await attempt('form', { method: 'POST', mode: 'no-cors', body: new URLSearchParams({ a: '1' }) });
  await attempt('json', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  await new Promise((resolve) => {
    document.getElementById('sink').addEventListener('load', resolve, { once: true });
    document.getElementById('f').submit();
    setTimeout(resolve, 5000);
  });
  window.results.formSubmit = 'done';
  return window.results;
};
</script></body></html>`;
}

async function metricsSample(name) {
  const r = await fetch(`http://127.0.0.1:${ports.http}/metrics`);
  const text = await r.text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : 0;
}

before(async () => {
  ports = await startDaemon(fs.mkdtempSync(path.join(os.tmpdir(), 'rmqcoord-xsite-')), 'daemon');
  const target = `http://127.0.0.1:${ports.http}`;
  attacker = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(attackPage(target));
  });
  await new Promise((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerPort = attacker.address().port;
  ({ context, page } = await launchBrowser());
});

after(async () => {
  if (context) await context.close();
  if (attacker) attacker.close();
  if (ports) await stopDaemon(ports.proc);
});

test('a page of another origin cannot reset the daemon', async () => {
  const commit = await remoting(UPDATE_OFFSET,
    { consumerGroup: 'GID_XSITE', topic: 'TopicX', queueId: '0', commitOffset: '4242' });
  assert.equal(commit.code, 0, JSON.stringify(commit));
  assert.equal(await committedOffset(), '4242');
  const route = 'rmqcoord_http_requests_total{route="/api/reset",method="POST",status="415"}';
  const refusedBefore = await metricsSample(route);

  await page.goto(`http://127.0.0.1:${attackerPort}/`);
  const results = await page.evaluate(() => window.run());
  console.log('# attempts: ' + JSON.stringify(results));
  // The JSON fetch needs a preflight, which the daemon does not grant.
  assert.match(results.json, /^blocked:/, 'a cross-site JSON POST passed its preflight');

  assert.equal(await committedOffset(), '4242', 'a cross-site page wiped the committed offsets');
  const refused = (await metricsSample(route)) - refusedBefore;
  console.log('# refused with 415: ' + refused);
  assert.ok(refused >= 3, `the simple requests reached the daemon and were refused (415 x${refused})`);
});

test('the dashboard, same origin, still works', async () => {
  await page.goto(`http://127.0.0.1:${ports.http}/`);
  await page.waitForSelector('#stream-state.live', { timeout: 10000 });
  const r = await page.evaluate(async () => {
    const res = await fetch('/api/clock/advance', { method: 'POST', body: '{"ms":1}' });
    const ok = await fetch('/healthz');
    return [res.status, ok.status];
  });
  // a same-origin mutation without the JSON type is refused too (415), reads work
  assert.deepEqual(r, [415, 200]);
});
