'use strict';
// Test harness: one rmqcoord daemon per test on free loopback ports with its
// own temporary SQLite store, and real ali-ons consumers, each child process
// running lib/consumer_child.js. Everything started through an Env is killed
// in Env#cleanup() (call it from a finally block / t.after), and a process
// 'exit' hook SIGKILLs anything still registered, so no process outlives the run.

const assert = require('node:assert/strict');
const { spawn, fork } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { waitReady } = require('../../jslib/daemon');
const { checkReplay, daemonEvents } = require('./replay_check');


const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const BIN = process.env.RMQCOORD_BIN || path.join(REPO_ROOT, 'build', 'rmqcoord');
const CHILD = path.join(__dirname, 'consumer_child.js');


const live = new Set(); // every ChildProcess we started and that has not exited yet

process.on('exit', () => {
  for (const cp of live) {
    try { cp.kill('SIGKILL'); } catch (_) { /* already gone */ }
  }
});

const sleep = ms => new Promise(r => setTimeout(r, ms));

function track(cp) {
  live.add(cp);
  cp.once('exit', () => live.delete(cp));
  return cp;
}

function exitPromise(cp) {
  if (cp.exitCode !== null || cp.signalCode !== null) {
    return Promise.resolve({ code: cp.exitCode, signal: cp.signalCode });
  }
  return new Promise(resolve => cp.once('exit', (code, signal) => resolve({ code, signal })));
}

async function withTimeout(promise, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, t]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Poll fn() every intervalMs until it returns a truthy value (returned), for at
 * most timeoutMs. If holdMs > 0 the condition must stay true continuously for
 * holdMs (guards against transient states during a rebalance). On timeout it
 * throws, including describe() of the last observed state.
 */
async function waitFor(what, fn, { timeoutMs = 15000, intervalMs = 100, holdMs = 0, describe } = {}) {
  const start = Date.now();
  let since = null;
  let lastErr = null;
  let value;
  const maxIter = Math.ceil((timeoutMs + holdMs) / intervalMs) + 10;
  for (let i = 0; i < maxIter; i++) {
    try {
      value = await fn();
      lastErr = null;
    } catch (err) {
      value = undefined;
      lastErr = err;
    }
    const now = Date.now();
    if (value) {
      if (since === null) since = now;
      if (now - since >= holdMs) return value;
    } else {
      since = null;
      if (now - start >= timeoutMs) break;
    }
    if (now - start >= timeoutMs + holdMs) break;
    await sleep(intervalMs);
  }
  const state = describe ? describe() : '';
  throw new Error(`waitFor(${what}) not satisfied within ${timeoutMs} ms` +
    (holdMs ? ` (hold ${holdMs} ms)` : '') +
    (lastErr ? `; last error: ${lastErr.message}` : '') +
    (state ? `\nlast state: ${state}` : ''));
}

function httpRequest(port, method, urlPath, body, timeoutMs = 3000) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = http.request({
      host: '127.0.0.1', port, method, path: urlPath, timeout: timeoutMs,
      headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {},
    }, res => {
      const chunks = [];
      res.on('data', c => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
        resolve({ status: res.statusCode, text, json });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`HTTP ${method} ${urlPath} timed out`)));
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

class Daemon {
  constructor(env, extraArgs, name) {
    this.env = env;
    this.extraArgs = extraArgs || [];
    this.name = name;
    this.store = path.join(env.dir, `${name}.db`);
    // heartbeat trace (serve --record appends, so restarts add to the same file)
    this.trace = path.join(env.dir, name === 'daemon1' ? 'trace.jsonl' : `${name}.trace.jsonl`);
    this.crashed = false; // SIGKILLed by the scenario: the trace may lack its last buffered lines
    this.generation = 0;
    this.proc = null;
    this.port = null;
    this.httpPort = null;
    this.exits = [];
  }

  get nameSrv() { return `127.0.0.1:${this.port}`; }

  async start() {
    assert.ok(fs.existsSync(BIN), `daemon binary not found: ${BIN} (set RMQCOORD_BIN)`);
    this.generation += 1;
    const logFile = path.join(this.env.dir, `${this.name}.${this.generation}.log`);
    this.logFile = logFile;
    const errFd = fs.openSync(logFile, 'a');
    const args = ['serve', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
      '--store', this.store, '--record', this.trace, ...this.extraArgs];
    if (process.env.E2E_DAEMON_DEBUG) args.push('--log-level', 'debug');
    fs.writeSync(errFd, `# ${BIN} ${args.join(' ')}\n`);
    const denv = Object.assign({}, process.env);
    delete denv.RMQCOORD_ADMIN_TOKEN; // the admin API stays open for the tests
    const cp = track(spawn(BIN, args, { stdio: ['ignore', 'pipe', errFd], cwd: this.env.dir, env: denv }));
    fs.closeSync(errFd);
    this.proc = cp;
    cp.once('exit', (code, signal) => this.exits.push({ generation: this.generation, code, signal }));
    cp.stdout.setEncoding('utf8');
    cp.stdout.on('data', chunk => fs.appendFileSync(logFile, `# stdout: ${chunk}`));
    const r = await waitReady(cp, { timeoutMs: 10000, what: `daemon (log ${logFile})`, detail: () => tail(logFile) });
    this.port = r.port;
    this.httpPort = r.httpPort;
    return this;
  }

  /** SIGTERM and wait (at most 10 s, then SIGKILL). Returns {code, signal}. */
  async stop() {
    const cp = this.proc;
    if (!cp) return null;
    const done = exitPromise(cp);
    try { cp.kill('SIGTERM'); } catch (_) { /* gone */ }
    let res;
    try {
      res = await withTimeout(done, 10000, 'daemon exit after SIGTERM');
    } catch (err) {
      try { cp.kill('SIGKILL'); } catch (_) { /* gone */ }
      res = await done;
      res.forced = true;
    }
    this.proc = null;
    return res;
  }

  /** SIGKILL (crash) and wait. */
  async kill() {
    const cp = this.proc;
    if (!cp) return null;
    this.crashed = true;
    const done = exitPromise(cp);
    try { cp.kill('SIGKILL'); } catch (_) { /* gone */ }
    const res = await done;
    this.proc = null;
    return res;
  }

  /** Stop (SIGTERM, or SIGKILL when hard) and start again on the same store. */
  async restart({ hard = false } = {}) {
    const res = hard ? await this.kill() : await this.stop();
    await this.start();
    return res;
  }

  get alive() { return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null; }

  async http(method, urlPath, body) {
    assert.ok(this.httpPort, 'daemon has no HTTP listener');
    return httpRequest(this.httpPort, method, urlPath, body);
  }

  async group(group) {
    const r = await this.http('GET', `/api/groups/${encodeURIComponent(group)}`);
    return r;
  }

  /** clientIds the daemon lists for a group ([] when the group is unknown / 404). */
  async groupClientIds(group) {
    const r = await this.group(group);
    if (r.status === 404) return [];
    assert.equal(r.status, 200, `GET /api/groups/${group}: ${r.status} ${r.text}`);
    const consumers = (r.json && r.json.consumers) || [];
    return consumers.map(c => c.clientId).sort();
  }

  logTail(n) { return this.logFile ? tail(this.logFile, n) : ''; }
}

/** A child process running consumer_child.js with one or more consumers. */
class ConsumerProc {
  constructor(env, daemon, specs, name) {
    this.env = env;
    this.name = name;
    this.specs = specs;
    this.state = null;      // last {type:'state'} report
    this.states = {};       // consumer name -> last consumer state
    this.errors = [];       // {name, errName, message, t}
    this.pending = new Map();
    this.nextId = 1;
    this.logFile = path.join(env.dir, `${name}.log`);
    const outFd = fs.openSync(this.logFile, 'a');
    const cfg = { nameSrv: daemon.nameSrv, logFile: this.logFile, reportMs: 200, consumers: specs };
    this.proc = track(fork(CHILD, [], {
      cwd: path.join(__dirname, '..'),
      stdio: ['ignore', outFd, outFd, 'ipc'],
      env: Object.assign({}, process.env, { E2E_CHILD_CONFIG: JSON.stringify(cfg) }),
    }));
    fs.closeSync(outFd);
    this.pid = this.proc.pid;
    this.exited = exitPromise(this.proc);
    this.proc.on('message', msg => this._onMessage(msg));
    this.proc.once('exit', () => {
      for (const { reject } of this.pending.values()) reject(new Error(`${name} exited`));
      this.pending.clear();
    });
  }

  _onMessage(msg) {
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'state') {
      this.state = msg;
      for (const c of msg.consumers) this.states[c.name] = c;
    } else if (msg.type === 'error') {
      this.errors.push(Object.assign({ t: Date.now() }, msg));
      this.env.errors.push(Object.assign({ proc: this.name, t: Date.now() }, msg));
    } else if (msg.type === 'reply') {
      const p = this.pending.get(msg.id);
      if (p) {
        this.pending.delete(msg.id);
        if (msg.ok) p.resolve(msg.result); else p.reject(new Error(`${this.name}: ${msg.error}`));
      }
    }
  }

  get alive() { return this.proc.exitCode === null && this.proc.signalCode === null; }

  /** Send a command to one consumer of this process; resolves with its result. */
  command(consumerName, cmd, extra = {}, timeoutMs = 10000) {
    const id = this.nextId++;
    const p = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.proc.send(Object.assign({ cmd, id, name: consumerName }, extra));
    return withTimeout(p, timeoutMs, `${this.name}.${cmd}(${consumerName})`);
  }

  async kill(signal = 'SIGKILL') {
    try { this.proc.kill(signal); } catch (_) { /* gone */ }
    return withTimeout(this.exited, 5000, `${this.name} exit on ${signal}`);
  }

  async exit() {
    if (!this.alive) return this.exited;
    try { this.proc.send({ cmd: 'exit' }); } catch (_) { /* gone */ }
    try {
      return await withTimeout(this.exited, 3000, `${this.name} exit`);
    } catch (_) {
      return this.kill();
    }
  }
}

/** A consumer handle: one consumer inside a ConsumerProc. */
class ConsumerHandle {
  constructor(proc, spec) {
    this.proc = proc;
    this.spec = spec;
    this.name = spec.name;
  }
  get state() { return this.proc.states[this.name] || null; }
  get alive() { return this.proc.alive; }
  get clientId() { return this.state && this.state.clientId; }
  /** queueIds of the subscribed topic the client itself holds (processQueueTable). */
  get queues() { return this.state && !this.state.closed ? this.state.queues : []; }
  /** the same as 'brokerName:queueId' strings, sorted (several brokers reuse queue ids). */
  get mqs() { return this.state && !this.state.closed ? (this.state.mqs || []) : []; }
  get retry() { return this.state && !this.state.closed ? this.state.retry : []; }
  get errors() { return this.proc.errors.filter(e => e.name === this.name || e.name === '-'); }
  close() { return this.proc.command(this.name, 'close'); }
  stopHeartbeat() { return this.proc.command(this.name, 'stopHeartbeat'); }
  commitOffsets(offsets) { return this.proc.command(this.name, 'commitOffsets', { offsets }); }
  queryOffsets() { return this.proc.command(this.name, 'queryOffsets'); }
  kill(signal) { return this.proc.kill(signal); }
  describe() {
    const s = this.state;
    if (!s) return `${this.name}: no report yet (alive=${this.alive})`;
    return `${this.name}[${s.clientId}${s.ready ? '' : ' not-ready'}${s.readyError ? ' readyError=' + s.readyError : ''}` +
      `${s.closed ? ' closed' : ''}${this.alive ? '' : ' DEAD'}] q=${JSON.stringify(s.queues)} retry=${JSON.stringify(s.retry)}`;
  }
}

class Env {
  constructor(label) {
    this.label = label;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `rmqcoord-e2e-${label.replace(/[^A-Za-z0-9]+/g, '_').slice(0, 40)}-`));
    this.daemons = [];
    this.procs = [];
    this.consumers = [];
    this.errors = [];
    this.seq = 0;
  }

  /**
   * Start a daemon with extra serve args (e.g. a cluster role: ['--role', 'namesrv'] or
   * ['--role', 'broker', '--namesrv', ns.nameSrv, ...]). name (default daemonN) names
   * its store, log and trace (<name>.trace.jsonl; daemon1's is trace.jsonl).
   */
  async daemon(extraArgs = [], { name } = {}) {
    const d = new Daemon(this, extraArgs, name || `daemon${this.daemons.length + 1}`);
    this.daemons.push(d);
    await d.start();
    return d;
  }

  /**
   * Start one child process with several consumers (specs: [{name, consumerGroup,
   * topic, instanceName, isBroadcast, options}]). Returns the ConsumerHandles.
   */
  startProcess(daemon, specs, procName) {
    const name = procName || `proc${++this.seq}`;
    const proc = new ConsumerProc(this, daemon, specs, name);
    this.procs.push(proc);
    const handles = specs.map(s => new ConsumerHandle(proc, s));
    this.consumers.push(...handles);
    return handles;
  }

  /** One consumer in its own child process. */
  startConsumer(daemon, spec) {
    return this.startProcess(daemon, [spec], spec.name)[0];
  }

  describe(handles) {
    return (handles || this.consumers).map(h => h.describe()).join('\n  ');
  }

  /**
   * End of a passing scenario: SIGKILL every consumer process (so every member
   * leaves by a close the daemon sees and records), wait until no group has a
   * member and the event log is quiet, read the daemon's events (GET
   * /api/events, all pages), stop it with SIGTERM (it must exit 0, which also
   * flushes the trace), and check that the trace replays offline to the same
   * per-group membership timeline (lib/replay_check.js). Throws on mismatch.
   */
  async finish() {
    await Promise.all(this.procs.map(p => p.kill('SIGKILL').catch(() => {})));
    for (const d of this.daemons) {
      if (d.crashed) {
        // A SIGKILLed daemon loses up to ~1 s of buffered trace lines (written once a
        // second), so its trace is not a complete record: no comparison.
        process.stderr.write(`replay check ${this.label}/${d.name}: skipped (daemon was SIGKILLed)\n`);
        continue;
      }
      if (!d.alive) throw new Error(`replay check ${d.name}: daemon not running at the end of the scenario`);
      let last = null;
      let prevCount = -1;
      await waitFor(`${d.name}: every group empty and the event log quiet`, async () => {
        const r = await d.http('GET', '/api/groups?limit=1000');
        assert.equal(r.status, 200, `GET /api/groups: ${r.status} ${r.text}`);
        const busy = (r.json.groups || []).filter(g => g.members > 0);
        const events = await daemonEvents(d);
        const quiet = busy.length === 0 && events.length === prevCount;
        prevCount = events.length;
        last = { busy, events };
        return quiet;
      }, { timeoutMs: 10000, intervalMs: 250, holdMs: 300,
        describe: () => `groups with members: ${JSON.stringify(last && last.busy)}` });
      const events = await daemonEvents(d);
      const ex = await d.stop();
      assert.deepEqual({ code: ex.code, signal: ex.signal, forced: !!ex.forced }, { code: 0, signal: null, forced: false },
        `${d.name} exits 0 on SIGTERM`);
      const sum = await checkReplay(BIN, d, events);
      process.stderr.write(`replay check ${this.label}/${d.name}: match (${sum.groups} group(s), ${sum.events} event(s))\n`);
    }
  }

  async cleanup(failed) {
    await Promise.all(this.procs.map(p => p.kill('SIGKILL').catch(() => {})));
    for (const d of this.daemons) {
      try { await d.kill(); } catch (_) { /* ignore */ }
    }
    if (failed || process.env.E2E_KEEP) {
      process.stderr.write(`kept test files of '${this.label}' in ${this.dir}\n`);
    } else {
      fs.rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** Diagnostics appended to assertion failures. */
  diagnostics() {
    const parts = [`consumers:\n  ${this.describe()}`];
    if (this.errors.length) {
      parts.push('error events:\n  ' + this.errors.slice(-20).map(e => `${e.proc}/${e.name}: ${e.errName}: ${e.message}`).join('\n  '));
    }
    for (const d of this.daemons) parts.push(`${d.name} log tail (${d.logFile}):\n${d.logTail(25)}`);
    for (const p of this.procs) {
      const t = tail(p.logFile, 8);
      if (t.trim()) parts.push(`${p.name} log tail:\n${t}`);
    }
    return parts.join('\n');
  }
}

function tail(file, n = 30) {
  try {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    return lines.slice(-n - 1).join('\n');
  } catch (_) {
    return '';
  }
}

/**
 * Run body(env) with a fresh Env; everything is cleaned up afterwards, and on
 * failure the diagnostics are attached to the error.
 */
async function scenario(label, body) {
  const env = new Env(label);
  let failed = false;
  try {
    await body(env);
    await env.finish();
  } catch (err) {
    failed = true;
    try { err.message += `\n--- diagnostics (${env.dir}) ---\n${env.diagnostics()}`; } catch (_) { /* ignore */ }
    throw err;
  } finally {
    await env.cleanup(failed);
  }
}

/**
 * Check that the handles together hold queues 0..n-1 of their topic, each
 * exactly once. Returns null when true, else a description of what is wrong.
 */
function coverageProblem(handles, n) {
  const owner = new Map();
  const problems = [];
  for (const h of handles) {
    if (!h.state) { problems.push(`${h.name} has not reported`); continue; }
    for (const q of h.queues) {
      if (owner.has(q)) problems.push(`queue ${q} held by ${owner.get(q)} and ${h.name}`);
      else owner.set(q, h.name);
    }
  }
  for (let q = 0; q < n; q++) if (!owner.has(q)) problems.push(`queue ${q} unowned`);
  for (const q of owner.keys()) if (q < 0 || q >= n) problems.push(`unexpected queue ${q}`);
  return problems.length ? problems.join('; ') : null;
}

const range = n => Array.from({ length: n }, (_, i) => i);

module.exports = {
  BIN, REPO_ROOT, Env, Daemon, ConsumerProc, ConsumerHandle,
  scenario, waitFor, sleep, coverageProblem, range, httpRequest,
};
