// rmqcoord dashboard: plain JS against the daemon's own admin API (same
// origin, no dependencies). Groups list, a group page (members, heartbeat
// ages, subscriptions, queue x consumer allocation matrix with the clients'
// reported holdings where the consistency route has them) and a live
// timeline fed by GET /api/events/stream (Server-Sent Events).
'use strict';

const state = {
  group: null,      // selected group name
  topic: null,      // selected allocation topic
  strategy: null,   // null: the one the clients report (else AVG), as the daemon decides
  role: null,       // from /api/cluster: namesrv, broker or both
  seen: new Set(),  // event ids in the timeline
  historyKey: null, // the group whose history the timeline shows ('' = all)
  nowMs: 0,         // the daemon's clock (virtual or real)
  refreshTimer: null,
  stream: null,
};

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else if (k === 'title') e.title = v;
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// GET by default. A mutation (POST/PUT/DELETE) must carry Content-Type:
// application/json even without a body: the daemon refuses it otherwise
// (415), which is what stops other origins' pages from sending one.
async function api(path, method = 'GET', payload = undefined) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET' && method !== 'HEAD') headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method, headers, body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  let body = null;
  try { body = await r.json(); } catch (_) { body = null; }
  return { status: r.status, body };
}

// Every page of a paginated list route.
async function apiAll(path, key) {
  let out = [];
  let cursor = null;
  for (let i = 0; i < 100; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await api(path + sep + 'limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    if (r.status !== 200 || !r.body) break;
    out = out.concat(r.body[key] || []);
    cursor = r.body.next;
    if (!cursor) break;
  }
  return out;
}

const enc = (name) => encodeURIComponent(name);

function fmtAge(ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return ms + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
}

function fmtTime(ms) {
  if (!ms) return '–';
  const d = new Date(ms);
  return d.toLocaleTimeString(undefined, { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// ---- groups list ----

async function loadGroups() {
  const groups = await apiAll('/api/groups', 'groups');
  const tbody = $('#groups tbody');
  tbody.replaceChildren();
  for (const g of groups) {
    const tr = el('tr', { 'data-group': g.group, class: (g.live ? '' : 'offline') + (g.group === state.group ? ' selected' : '') },
      el('td', { title: g.group }, g.group),
      el('td', { class: 'count', 'data-members': g.members }, g.members));
    tr.addEventListener('click', () => { location.hash = '#/groups/' + enc(g.group); });
    tbody.append(tr);
  }
  $('#groups-empty').hidden = groups.length > 0;
}

// ---- one group ----

async function loadClock() {
  const r = await api('/api/clock');
  if (r.status === 200) {
    state.nowMs = r.body.nowMs;
    $('#clock').textContent = (r.body.virtual ? 'virtual clock ' : '') + new Date(r.body.nowMs).toISOString();
  }
}

async function loadGroup() {
  const name = state.group;
  if (!name) return;
  const [r, diag] = await Promise.all([api('/api/groups/' + enc(name)), api('/api/groups/' + enc(name) + '/diagnostics'), loadClock()]);
  if (name !== state.group) return;
  $('#group-pane').hidden = false;
  $('#group-title').textContent = name;
  if (r.status !== 200) {
    $('#group-meta').textContent = (r.body && r.body.detail) || ('HTTP ' + r.status);
    $('#members tbody').replaceChildren();
    $('#subscriptions tbody').replaceChildren();
    return;
  }
  const g = r.body;
  $('#group-meta').textContent = g.live
    ? `${g.consumers.length} member(s) · ${g.messageModel} · ${g.consumeType} · ${g.consumeFromWhere}`
    : 'no live member (history only)';
  const issues = $('#group-issues');
  issues.replaceChildren();
  if (diag.status === 200 && diag.body && Array.isArray(diag.body.issues)) {
    for (const i of diag.body.issues) issues.append(el('div', { class: 'issue', 'data-issue': i.kind }, el('b', {}, i.kind + ': '), i.detail));
  }
  const mb = $('#members tbody');
  mb.replaceChildren();
  for (const m of g.consumers || []) {
    mb.append(el('tr', { 'data-client': m.clientId },
      el('td', {}, m.clientId), el('td', {}, m.remoteAddr), el('td', {}, m.language), el('td', {}, m.version),
      el('td', { class: 'age' }, fmtAge(state.nowMs - m.lastHeartbeatMs)), el('td', {}, fmtTime(m.joinedMs))));
  }
  const sb = $('#subscriptions tbody');
  sb.replaceChildren();
  const topics = [];
  for (const s of g.subscriptions || []) {
    topics.push(s.topic);
    sb.append(el('tr', {}, el('td', {}, s.topic), el('td', {}, s.subString), el('td', {}, s.expressionType), el('td', {}, s.subVersion)));
  }
  const sel = $('#alloc-topic');
  const wanted = state.topic && topics.includes(state.topic) ? state.topic
    : (topics.find((t) => !t.startsWith('%RETRY%')) || topics[0] || null);
  sel.replaceChildren(...topics.map((t) => el('option', { value: t, selected: t === wanted }, t)));
  state.topic = wanted;
  await loadAllocation();
}

const qkey = (q) => `${q.brokerName}/${q.queueId}`;

// Queues each client reports holding, from the consistency route's
// {"clients":[{"clientId","answered","queues":[...]}], "unresponsive", ...}:
// {clientId: Set(queueKey)} of the clients that answered.
function holdingsFrom(body) {
  if (!body || !Array.isArray(body.clients)) return null;
  const out = {};
  for (const c of body.clients) {
    if (c.answered && Array.isArray(c.queues)) out[c.clientId] = new Set(c.queues.map(qkey));
  }
  return out;
}

function holdingsNote(status, body, held) {
  if (status !== 200 || !body) return 'Real holdings unavailable: ' + ((body && body.detail) || ('HTTP ' + status)) + '.';
  const answered = Object.keys(held || {}).length;
  const silent = (body.unresponsive || []).length;
  let t = `Holdings as the clients report them (GET_CONSUMER_RUNNING_INFO): ${answered} answered`;
  if (silent) t += `, ${silent} did not (${body.unresponsive.join(', ')})`;
  if (answered) t += body.consistent ? ' · consistent with the expected allocation' : ' · NOT consistent';
  return t + '.';
}

function renderMatrix(a, held) {
  const matrix = $('#matrix');
  const consumers = Object.keys(a.allocation || {});
  const head = el('tr', {}, el('th', {}, 'queue'), ...consumers.map((c) => el('th', { class: 'consumer', title: c }, c)));
  const body = el('tbody');
  for (const o of a.owners || []) {
    const k = qkey(o.queue);
    const cls = o.owners.length === 0 ? 'unassigned' : (o.owners.length > 1 ? 'overlap' : '');
    const tr = el('tr', { class: cls, 'data-queue': k }, el('td', { class: 'queue' }, k));
    for (const c of consumers) {
      const own = o.owners.includes(c);
      const isHeld = !!(held && held[c] && held[c].has(k));
      tr.append(el('td', { class: 'cell' + (own ? ' own' : '') + (isHeld ? ' held' : ''), 'data-owner': own ? c : '', 'data-held': isHeld ? c : '' },
        own ? '\u25cf' : (isHeld ? '\u25cb' : '')));
    }
    body.append(tr);
  }
  matrix.replaceChildren(el('thead', {}, head), body);
  matrix.dataset.consumers = String(consumers.length);
  matrix.dataset.queues = String((a.owners || []).length);
  $('#alloc-summary').textContent = `${a.queues} queue(s) × ${a.consumers} consumer(s) · ${(a.unassigned || []).length} unassigned · ${(a.overlaps || []).length} overlapping`;
}

// The query for /allocation and /consistency: the chosen strategy with the
// inputs it needs; without a choice, no strategy (the daemon uses the one the
// clients report in their running info, else AVG).
function allocQuery() {
  const p = new URLSearchParams({ topic: state.topic });
  const s = state.strategy;
  if (!s) return p.toString(); // /allocation asks the clients (timeout_ms default 1000)
  p.set('strategy', s);
  const v = (id) => $(id).value.trim().replace(/\s+/g, '');
  if (s === 'CONFIG' && v('#opt-config')) p.set('config', v('#opt-config'));
  if (s === 'MACHINE_ROOM' && v('#opt-idcs')) p.set('consumerIdcs', v('#opt-idcs'));
  if (s === 'MACHINE_ROOM_NEARBY') {
    p.set('inner', $('#opt-inner').value);
    if (v('#opt-broker-rooms')) p.set('brokerRooms', v('#opt-broker-rooms'));
    if (v('#opt-consumer-rooms')) p.set('consumerRooms', v('#opt-consumer-rooms'));
  }
  if (s === 'CONSISTENT_HASH' && v('#opt-vnodes')) p.set('virtualNodes', v('#opt-vnodes'));
  return p.toString();
}

// Shows the inputs of the selected strategy only.
function showStrategyInputs() {
  const s = $('#alloc-strategy').value;
  for (const l of document.querySelectorAll('.strategy-opts [data-for]')) l.hidden = l.dataset.for !== s;
}

// Reflects the strategy the reply used (the clients' when none was chosen).
function showStrategy(a) {
  const sel = $('#alloc-strategy');
  const used = a.strategy || state.strategy;
  if (used && [...sel.options].some((o) => o.value === used)) sel.value = used;
  const src = state.strategy ? 'chosen' : (a.strategySource || 'default');
  sel.dataset.source = src;
  const rep = a.reportedStrategies ? Object.entries(a.reportedStrategies) : [];
  let t = src === 'clients' ? 'as the clients report it'
    : src === 'default' ? 'default: no client reports a strategy' : 'chosen here';
  if (rep.length) t += ' (' + rep.map(([c, s]) => c + ': ' + s).join(', ') + ')';
  if (state.strategy) t += ' · ';
  $('#strategy-source').replaceChildren(t);
  if (state.strategy) {
    const b = el('a', { href: '#', title: 'go back to the strategy the clients report' }, 'use the reported one');
    b.addEventListener('click', (e) => { e.preventDefault(); state.strategy = null; loadAllocation(); });
    $('#strategy-source').append(b);
  }
  showStrategyInputs();
}

// The expected allocation first (fast), then the clients' holdings, which
// may take up to the consistency route's timeout while clients answer.
async function loadAllocation() {
  const matrix = $('#matrix');
  const name = state.group;
  if (!state.topic) {
    matrix.replaceChildren();
    matrix.dataset.consumers = '0';
    matrix.dataset.queues = '0';
    $('#alloc-summary').textContent = 'the group subscribes to no topic';
    return;
  }
  const q = '?' + allocQuery();
  const key = name + '\n' + q;
  state.allocKey = key;
  const r = await api('/api/groups/' + enc(name) + '/allocation' + q);
  if (state.allocKey !== key) return;
  if (r.status !== 200) {
    matrix.replaceChildren();
    $('#alloc-summary').textContent = (r.body && r.body.detail) || ('HTTP ' + r.status);
    return;
  }
  showStrategy(r.body);
  renderMatrix(r.body, state.held && state.heldKey === key ? state.held : null);
  if (state.holdingsBusy) return; // one consistency round at a time
  state.holdingsBusy = true;
  if (state.heldKey !== key) $('#holdings-note').textContent = 'Asking the clients for the queues they hold…';
  try {
    const h = await api('/api/groups/' + enc(name) + '/consistency' + q + '&timeout_ms=2000');
    const held = h.status === 200 ? holdingsFrom(h.body) : null;
    state.held = held;
    state.heldKey = key;
    if (state.allocKey !== key) { state.holdingsBusy = false; loadAllocation(); return; }
    $('#holdings-note').textContent = holdingsNote(h.status, h.body, held);
    renderMatrix(r.body, held);
  } finally {
    state.holdingsBusy = false;
  }
}

// ---- live timeline ----

function addEvent(ev, fromHistory) {
  if (ev.id != null) {
    if (state.seen.has(ev.id)) return;
    state.seen.add(ev.id);
  }
  if (state.historyKey && ev.group !== state.historyKey) return;
  const after = ev.after == null ? '?' : ev.after.join(', ');
  const li = el('li', { 'data-kind': ev.kind, 'data-group': ev.group, 'data-id': String(ev.id ?? ''), class: fromHistory ? 'history' : 'live' },
    el('span', { class: 'kind ' + ev.kind }, ev.kind), ' ',
    el('b', {}, ev.group), ' ', ev.clientId || '', el('br'),
    el('span', { class: 'when' }, fmtTime(ev.ts)), ' ',
    el('span', { class: 'members' }, '→ [' + after + ']'));
  const list = $('#timeline');
  // newest first, by id (the history may arrive after live events)
  let before = list.firstChild;
  while (before && Number(before.dataset.id) > Number(ev.id)) before = before.nextSibling;
  list.insertBefore(li, before);
  while (list.children.length > 200) list.lastChild.remove();
  $('#timeline-empty').hidden = true;
}

const HISTORY = 50;

// Whether any event has an id above `id` (all groups).
async function eventsAfter(id) {
  const r = await api('/api/events?limit=1&since=' + id);
  return r.status === 200 && r.body && (r.body.events || []).length > 0;
}

// The last `n` events (of `group`, or of every group), oldest first. The
// route lists oldest first from a position: a small store is read whole;
// otherwise the newest id is found by searching on `since`, and a window
// before it read, widened until it holds n events of the group.
async function lastEvents(group, n) {
  const g = group ? '&group=' + enc(group) : '';
  const first = await api('/api/events?limit=1000' + g);
  if (first.status !== 200 || !first.body) return [];
  if (!first.body.next) return (first.body.events || []).slice(-n);
  let lo = Math.max(1, first.body.lastId || 1);
  let hi = lo * 2;
  while (await eventsAfter(hi)) { lo = hi; hi *= 2; }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await eventsAfter(mid)) lo = mid; else hi = mid;
  }
  const newest = hi;
  let out = [];
  for (let w = n * 2; ; w *= 8) {
    const from = Math.max(0, newest - w);
    out = await apiAll('/api/events?since=' + from + g, 'events');
    if (out.length >= n || from === 0) break;
  }
  return out.slice(-n);
}

// Fills the timeline with the recent history of the selected group (or of
// every group); live events from the stream keep coming on top.
async function loadHistory() {
  const key = state.group || '';
  if (state.historyKey === key && state.historyLoaded) return;
  state.historyKey = key;
  state.historyLoaded = false;
  state.seen = new Set();
  $('#timeline').replaceChildren();
  $('#timeline-scope').textContent = key ? '· ' + key : '· all groups';
  const evs = await lastEvents(key, HISTORY);
  if (state.historyKey !== key) return;
  for (const ev of evs) addEvent(ev, true);
  state.historyLoaded = true;
  const list = $('#timeline');
  list.dataset.loaded = 'true';
  $('#timeline-empty').hidden = list.children.length > 0;
}

function openStream() {
  if (state.stream) state.stream.close();
  const es = new EventSource('/api/events/stream');
  state.stream = es;
  const badge = $('#stream-state');
  es.onopen = () => { badge.textContent = 'events: live'; badge.className = 'badge live'; };
  es.onerror = () => { badge.textContent = 'events: reconnecting'; badge.className = 'badge down'; };
  es.addEventListener('membership', (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch (_) { return; }
    addEvent(ev, false);
    scheduleRefresh(ev.group === state.group);
  });
}

// Coalesces bursts of events into one refresh.
function scheduleRefresh(groupToo) {
  state.pendingGroup = state.pendingGroup || groupToo;
  if (state.refreshTimer) return;
  state.refreshTimer = setTimeout(async () => {
    const g = state.pendingGroup;
    state.refreshTimer = null;
    state.pendingGroup = false;
    await loadGroups();
    if (g) await loadGroup();
  }, 150);
}

// ---- name server: the cluster ----

async function loadCluster() {
  const r = await api('/api/cluster');
  if (r.status !== 200 || !r.body) return;
  const c = r.body;
  state.role = c.role;
  document.body.dataset.role = c.role || '';
  if (c.role !== 'namesrv') { $('#cluster-pane').hidden = true; return; }
  $('#cluster-pane').hidden = false;
  $('#stream-state').textContent = 'name server: no consumer groups here';
  $('#stream-state').className = 'badge';
  loadClock();
  $('#groups-pane').hidden = true;
  $('#group-pane').hidden = true;
  $('#cluster-name').textContent = '· ' + (c.cluster || '') + ' · name server ' + (c.advertise || '');
  const brokers = c.brokers || [];
  $('#cluster-meta').textContent = `${brokers.length} live broker(s). Consumers heartbeat to the brokers, so groups live there; pick a group to compare the brokers' member lists.`;
  const tb = $('#brokers tbody');
  tb.replaceChildren();
  for (const b of brokers) {
    const admin = b.httpAddr ? el('a', { href: location.protocol + '//' + b.httpAddr + '/', target: '_blank', rel: 'noopener' }, b.httpAddr) : '–';
    tb.append(el('tr', { 'data-broker': b.brokerName },
      el('td', {}, b.brokerName), el('td', {}, b.brokerAddr), el('td', {}, b.cluster || ''), el('td', {}, admin),
      el('td', { class: 'count' }, b.registrations ?? ''),
      el('td', { title: fmtTime(b.lastRegisteredMs) }, b.ageMs != null ? fmtAge(b.ageMs) + ' ago' : fmtTime(b.lastRegisteredMs)),
      el('td', {}, b.expiresInMs != null ? fmtAge(b.expiresInMs) : '–'),
      el('td', {}, b.dataVersion ? String(b.dataVersion.counter) : '–'),
      el('td', { title: (b.topics || []).map((t) => `${t.topic} (${t.readQueueNums}/${t.writeQueueNums})`).join(', ') },
        (b.topics || []).map((t) => t.topic).join(', '))));
  }
  $('#brokers-empty').hidden = brokers.length > 0;
  await loadClusterGroup();
}

async function loadClusterGroup() {
  const g = state.clusterGroup;
  const tb = $('#cluster-members tbody');
  if (!g) { tb.replaceChildren(); $('#cluster-agree').textContent = ''; return; }
  const r = await api('/api/cluster?group=' + enc(g));
  if (g !== state.clusterGroup) return;
  tb.replaceChildren();
  if (r.status !== 200 || !r.body) { $('#cluster-agree').textContent = (r.body && r.body.detail) || ('HTTP ' + r.status); return; }
  for (const b of r.body.brokers || []) {
    const members = b.fetchError ? el('span', { class: 'bad' }, 'unreachable: ' + b.fetchError)
      : ((b.members || []).join(', ') || '(none)');
    const missing = (b.missing || []).length ? el('span', { class: 'bad' }, b.missing.join(', ')) : '–';
    tb.append(el('tr', { 'data-broker': b.brokerName, 'data-members': String((b.members || []).length) },
      el('td', {}, b.brokerName), el('td', { class: 'wrap' }, members), el('td', { class: 'wrap' }, missing)));
  }
  const agree = $('#cluster-agree');
  agree.textContent = `${(r.body.allMembers || []).length} member(s) in all · ` + (r.body.agree ? 'the brokers agree' : 'the brokers DISAGREE');
  agree.className = r.body.agree ? 'muted' : 'bad';
  agree.dataset.agree = String(!!r.body.agree);
}

// ---- routing ----

function route() {
  const c = location.hash.match(/^#\/cluster\/(.+)$/);
  if (c) {
    state.clusterGroup = decodeURIComponent(c[1]);
    $('#cluster-group').value = state.clusterGroup;
  }
  if (state.role === 'namesrv') { loadCluster(); return; }
  const m = location.hash.match(/^#\/groups\/(.+)$/);
  const prev = state.group;
  state.group = m ? decodeURIComponent(m[1]) : null;
  if (prev !== state.group) state.strategy = null;
  $('#group-pane').hidden = !state.group;
  loadGroups();
  loadHistory();
  if (state.group) loadGroup();
}

$('#alloc-topic').addEventListener('change', (e) => { state.topic = e.target.value; loadAllocation(); });
$('#alloc-strategy').addEventListener('change', (e) => { state.strategy = e.target.value; showStrategyInputs(); loadAllocation(); });
for (const id of ['#opt-config', '#opt-idcs', '#opt-inner', '#opt-broker-rooms', '#opt-consumer-rooms', '#opt-vnodes']) {
  // an input of the strategy shown (the clients' one too) makes it the choice
  $(id).addEventListener('change', () => { state.strategy = $('#alloc-strategy').value; loadAllocation(); });
}
$('#cluster-group-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const g = $('#cluster-group').value.trim();
  location.hash = g ? '#/cluster/' + enc(g) : '#/';
});
window.addEventListener('hashchange', route);

(async () => {
  await loadCluster();
  setInterval(() => {
    if (state.role === 'namesrv') { loadCluster(); return; }
    loadGroups(); if (state.group) loadGroup();
  }, 5000);
  if (state.role !== 'namesrv') openStream();
  route();
})();
