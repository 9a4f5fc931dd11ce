'use strict';
// Replay check: the heartbeat trace a daemon recorded (serve --record) must
// replay offline (rmqcoord replay --format json, same expiry settings) to the
// membership timeline the daemon itself logged (GET /api/events, every page):
// per group, the same sequence of (kind, member list after the change).
// See tests/e2e/README.md ("Replay check") and docs/trace-format.md.

const { execFile } = require('node:child_process');

/** Flags of `serve` that replay needs to model the same membership (expiry). */
const REPLAY_FLAGS = ['--channel-expiry-ms', '--expiry-scan-ms', '--notify-on-expiry'];

function replayFlags(serveArgs) {
  const out = [];
  for (let i = 0; i < serveArgs.length; i++) {
    const a = serveArgs[i];
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (!REPLAY_FLAGS.includes(name)) continue;
    if (eq > 0) out.push(name, a.slice(eq + 1));
    else if (i + 1 < serveArgs.length) out.push(name, serveArgs[++i]);
  }
  return out;
}

/** Every membership event the daemon logged, oldest first (all pages of GET /api/events). */
async function daemonEvents(daemon) {
  const events = [];
  let cursor = null;
  for (let page = 0; page < 10000; page++) {
    const q = `/api/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await daemon.http('GET', q);
    if (r.status !== 200 || !r.json || !Array.isArray(r.json.events)) {
      throw new Error(`GET ${q}: ${r.status} ${r.text.slice(0, 500)}`);
    }
    events.push(...r.json.events);
    cursor = r.json.next;
    if (!cursor || r.json.events.length === 0) return events;
  }
  throw new Error('GET /api/events: too many pages');
}

/** Per group: [{kind, after}] in id order. */
function daemonTimeline(events) {
  const byGroup = new Map();
  const sorted = [...events].sort((a, b) => a.id - b.id);
  for (const e of sorted) {
    if (!byGroup.has(e.group)) byGroup.set(e.group, []);
    byGroup.get(e.group).push({ kind: e.kind, after: e.after, ts: e.ts, clientId: e.clientId });
  }
  return byGroup;
}

/**
 * Per group: [{kind, after}] from the replay's "change" records. At a restart
 * header replay closes every connection still open, one "restart" change per
 * member; the daemon's startup recovery logs one "restart" event per group
 * (store_recover). Consecutive restart changes of a group are folded into one
 * (with the member list after the last of them) so the two compare.
 */
function replayTimeline(records) {
  const byGroup = new Map();
  for (const r of records) {
    if (r.type !== 'change') continue;
    if (!byGroup.has(r.group)) byGroup.set(r.group, []);
    const tl = byGroup.get(r.group);
    const item = { kind: r.kind, after: r.members, ts: r.ts, clientId: r.clientId };
    const last = tl[tl.length - 1];
    if (r.kind === 'restart' && last && last.kind === 'restart') tl[tl.length - 1] = item;
    else tl.push(item);
  }
  return byGroup;
}

function runReplay(bin, trace, flags) {
  const args = ['replay', trace, '--format', 'json', ...flags];
  return new Promise((resolve, reject) => {
    execFile(bin, args, { maxBuffer: 256 * 1024 * 1024, timeout: 60000 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`${bin} ${args.join(' ')} failed: ${err.message}\nstderr: ${stderr}`));
        return;
      }
      const records = [];
      for (const line of stdout.split('\n')) if (line.trim()) records.push(JSON.parse(line));
      resolve({ args, records, stderr });
    });
  });
}

const fmt = item => `${item.kind} ${JSON.stringify(item.after)}`;
const fmtFull = item => `${item.ts} ${item.kind} ${item.clientId === null || item.clientId === undefined ? '-' : item.clientId} -> ${JSON.stringify(item.after)}`;

/** Returns null when the timelines agree, else a description with both timelines. */
function compareTimelines(daemonTl, replayTl) {
  const groups = [...new Set([...daemonTl.keys(), ...replayTl.keys()])].sort();
  const problems = [];
  for (const g of groups) {
    const want = daemonTl.get(g) || [];
    const got = replayTl.get(g) || [];
    const n = Math.max(want.length, got.length);
    let first = -1;
    for (let i = 0; i < n; i++) {
      if (!want[i] || !got[i] || fmt(want[i]) !== fmt(got[i])) { first = i; break; }
    }
    if (first < 0) continue;
    const lines = [`group ${g}: first difference at change #${first + 1}` +
      ` (daemon ${want[first] ? fmt(want[first]) : '<none>'}, replay ${got[first] ? fmt(got[first]) : '<none>'})`];
    lines.push(`  daemon (${want.length} events):`);
    want.forEach((x, i) => lines.push(`    ${i === first ? '>' : ' '}${i + 1}. ${fmtFull(x)}`));
    lines.push(`  replay (${got.length} changes):`);
    got.forEach((x, i) => lines.push(`    ${i === first ? '>' : ' '}${i + 1}. ${fmtFull(x)}`));
    problems.push(lines.join('\n'));
  }
  return problems.length ? problems.join('\n') : null;
}

/**
 * Compare the replay of daemon.trace with the events the daemon logged
 * (events: read over HTTP before the daemon was stopped). Throws on mismatch.
 * Returns a summary {groups, events}.
 */
async function checkReplay(bin, daemon, events) {
  const flags = replayFlags(daemon.extraArgs);
  const { args, records } = await runReplay(bin, daemon.trace, flags);
  const totals = records.find(r => r.type === 'totals');
  const daemonTl = daemonTimeline(events);
  const replayTl = replayTimeline(records);
  const problem = compareTimelines(daemonTl, replayTl);
  if (problem) {
    throw new Error(`replay of ${daemon.trace} disagrees with the daemon's membership events\n` +
      `(rmqcoord ${args.join(' ')})\n${problem}` +
      (totals ? `\nreplay totals: ${JSON.stringify(totals)}` : ''));
  }
  if (totals && totals.heartbeatsRejected) {
    // not a membership difference, but worth knowing about
    process.stderr.write(`replay check ${daemon.name}: ${totals.heartbeatsRejected} heartbeat(s) rejected in replay\n`);
  }
  return { groups: daemonTl.size, events: events.length };
}

module.exports = { checkReplay, daemonEvents, daemonTimeline, replayTimeline, compareTimelines, replayFlags };
