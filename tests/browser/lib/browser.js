// What every dashboard test sets up: a daemon on kernel-picked loopback
// ports (its READY line gives them), Debian's chromium through playwright-core,
// screenshots under ARTIFACTS_DIR, and the teardown of both.
'use strict';
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');
const { waitReady } = require('../../jslib/daemon');


const root = path.resolve(__dirname, '..', '..', '..');
const BIN = process.env.RMQCOORD_BIN || path.join(root, 'build', 'rmqcoord');
const ARTIFACTS = process.env.ARTIFACTS_DIR || path.join(root, 'build', 'test-artifacts');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// `rmqcoord serve` with its store and log under dir (dir/<name>.db, .log);
// resolves to { proc, remoting, http } (the ports) once it prints READY. One
// that does not is killed, so a failed start leaves no process behind.
function startDaemon(dir, name, extra = []) {
  assert.ok(fs.existsSync(BIN), `daemon binary ${BIN} (build it or set RMQCOORD_BIN)`);
  const log = fs.openSync(path.join(dir, name + '.log'), 'a');
  const proc = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', '--store', path.join(dir, name + '.db'),
    ...extra], { stdio: ['ignore', 'pipe', log] });
  return waitReady(proc, { timeoutMs: 10000, what: name }).then((r) => ({ proc, remoting: r.port, http: r.httpPort }));
}

// SIGTERM, then the exit.
async function stopDaemon(proc) {
  if (!proc || proc.exitCode !== null) return;
  proc.kill('SIGTERM');
  await new Promise((r) => { if (proc.exitCode !== null) r(); else proc.once('exit', r); });
}

// A headless chromium with a fresh profile; page errors go to the TAP output.
async function launchBrowser(options = {}) {
  const context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), 'rmqcoord-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    ...options,
  });
  const page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => { console.log('# page error: ' + e.message); });
  return { context, page };
}

async function screenshot(page, file) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const shot = path.join(ARTIFACTS, file);
  await page.screenshot({ path: shot, fullPage: true });
  console.log('# screenshot: ' + shot);
}

module.exports = { BIN, ARTIFACTS, CHROMIUM, startDaemon, stopDaemon, launchBrowser, screenshot };
