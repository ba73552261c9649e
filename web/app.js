// dlq-archive dashboard: a single page over the daemon's JSON API
// (doc/dashboard.md). No dependencies; everything it loads comes from the
// daemon. Text from the API is only ever set as text (text nodes, textContent,
// attribute values): nothing is parsed as HTML (no innerHTML).
'use strict';

const state = {
  info: { write: false, poll_interval_s: null }, // /api/dashboard's answer; null: not known yet
  queues: null, // last /api/queues?queue=NAME document (a queue page)
  queuesFor: null,
  overview: null, // last /api/overview document
  overviewEtag: null,
  renderedAt: 0,
  sort: { key: 'expiry', dir: 1 },
  filter: '',
  route: null,
  timer: null,
  updated: null,
};

// ---- Small helpers.

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function token() {
  return sessionStorage.getItem('dlq-token') || '';
}

async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  // The read token guards message content, the write token the actions; the
  // one the user gave goes with every request (never as a cookie: no CSRF).
  if (token()) opts.headers.Authorization = 'Bearer ' + token();
  const res = await fetch(path, opts);
  let body = null;
  try {
    body = await res.json();
  } catch (e) {
    body = { error: 'the daemon answered ' + res.status + ' without JSON' };
  }
  if (!res.ok) {
    const err = new Error((body && body.error) || 'HTTP ' + res.status);
    err.status = res.status;
    err.body = body;
    throw err;
  }
  return body;
}

function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return '—';
  const neg = seconds < 0;
  let t = Math.abs(Math.round(seconds));
  const d = Math.floor(t / 86400); t -= d * 86400;
  const hh = Math.floor(t / 3600); t -= hh * 3600;
  const m = Math.floor(t / 60); const sec = t - m * 60;
  const out = d > 0 ? `${d}d ${hh}h ${m}m` : hh > 0 ? `${hh}h ${m}m` : m > 0 ? `${m}m ${sec}s` : `${sec}s`;
  return neg ? 'expired ' + out + ' ago' : out;
}

// SQS deletes a message when it expires, so a nearest possible expiry in the
// past means "not yet known": the daemon assumes the worst until it has seen
// the messages.
function fmtExpiry(seconds) {
  return seconds <= 0 ? 'any moment (not yet observed)' : 'in ' + fmtDuration(seconds);
}

function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// Local wall-clock time, HH:MM:SS. Not toLocaleTimeString: its first call in
// a new renderer loads ICU's locale data, 60-110 ms before the first rows
// (bench/dashboard/README.md).
function fmtClock(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function fmtBytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
  return (n / 1048576).toFixed(1) + ' MiB';
}

function count(n) {
  return n === undefined || n === null || n < 0 ? '—' : String(n);
}

// "1 queue", "2 queues", "0 queues".
function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function stateBadge(name) {
  const cls = name === 'ALARM' ? 'alarm' : name === 'OK' ? 'ok' : 'insufficient';
  return h('span', { class: 'state ' + cls }, name);
}

function alarmLabel(a) {
  return a.metric && a.metric.includes('NumberOfMessages') ? 'depth' : 'expiry';
}

// now: one Date.now() for a whole sort, so that queues expiring at the same
// moment compare equal (and go by name).
function secondsToExpiry(q, now = Date.now()) {
  return q.nearest_expiry ? (Date.parse(q.nearest_expiry) - now) / 1000 : null;
}

function setLive(text) {
  document.getElementById('live').textContent = text;
}

function say(region, text, isError) {
  region.replaceChildren(text ? h('p', { class: isError ? 'error' : '' }, text) : '');
}

// ---- Theme.

const themes = ['auto', 'light', 'dark'];
const darkQuery = window.matchMedia('(prefers-color-scheme: dark)');
function applyTheme(name) {
  const effective = name === 'auto' ? (darkQuery.matches ? 'dark' : 'light') : name;
  document.documentElement.setAttribute('data-theme', effective);
  const btn = document.getElementById('theme');
  btn.textContent = 'Theme: ' + name;
  btn.setAttribute('aria-label', 'Theme: ' + name + (name === 'auto' ? ' (' + effective + ')' : '') + ', change');
}
function savedTheme() {
  const saved = localStorage.getItem('dlq-theme') || 'auto';
  return themes.includes(saved) ? saved : 'auto';
}
function initTheme() {
  applyTheme(savedTheme());
  darkQuery.addEventListener('change', () => applyTheme(savedTheme()));
  document.getElementById('theme').addEventListener('click', () => {
    const next = themes[(themes.indexOf(savedTheme()) + 1) % themes.length];
    localStorage.setItem('dlq-theme', next);
    applyTheme(next);
  });
}

// ---- Overview.
// The overview polls /api/overview (numbers and states only, no reasons or
// history) with If-None-Match, so an unchanged document costs neither side
// anything. The table is windowed: state.rows holds every queue (filtered and
// sorted), but only the rows near the view (OVERSCAN more on either side) are
// in the page, between two spacer rows as tall as the rows left out, so a
// render lays out some 60 rows, not 1,000. Every row has the same height
// (app.css: two lines, cells do not wrap), so a row's place is its index
// times that height. The <table> carries aria-rowcount and every row its
// aria-rowindex; the filter searches every queue. A row's nodes are built
// (text as text nodes) once per document and minute, and stay in place while
// the row is in the window (a focused link keeps its focus).

// The default sort (expiry, ascending) is also the daemon's: it renders the
// first rows into the page (src/dashboard/overview_html.h mirrors these rows,
// the summary and the table's markup; change both together).
const columns = [
  { key: 'queue', label: 'Queue', value: (q) => q.queue },
  { key: 'group', label: 'Group / region', value: (q) => q.group + ' ' + q.region },
  { key: 'visible', label: 'Visible', num: true, value: (q) => q.visible },
  { key: 'inflight', label: 'In flight', num: true, value: (q) => q.not_visible },
  { key: 'delayed', label: 'Delayed', num: true, value: (q) => q.delayed },
  { key: 'expiry', label: 'Nearest expiry', value: (q, now) => { const t = secondsToExpiry(q, now); return t === null ? Infinity : t; } },
  { key: 'alarms', label: 'Alarms', value: (q) => -q.alarms.filter((a) => a.state === 'ALARM').length },
  { key: 'lastrun', label: 'Last archive run', value: (q) => (q.last_run ? q.last_run.time : '') },
  { key: 'archived', label: 'Archived', num: true, value: (q) => q.archived },
];

function overviewSummary(doc) {
  const qs = doc.queues;
  const alarming = qs.filter((q) => q.alarms.some((a) => a.state === 'ALARM')).length;
  let atRisk = 0;
  for (const q of qs) {
    const t = secondsToExpiry(q);
    if (t !== null && t < 86400) atRisk += Math.max(0, q.visible) + Math.max(0, q.not_visible);
  }
  const errors = qs.filter((q) => q.failing || q.collect_error).length + doc.groups.filter((g) => g.error).length;
  // The same words as src/dashboard/overview_html.cc's first render.
  return h('ul', { class: 'cards', 'aria-label': 'Summary' },
    h('li', {}, h('span', { class: 'n', id: 'sum-alarm' }, alarming), alarming === 1 ? 'queue in ALARM' : 'queues in ALARM'),
    h('li', {}, h('span', { class: 'n', id: 'sum-risk' }, atRisk), atRisk === 1 ? 'message at risk within 24 h' : 'messages at risk within 24 h'),
    h('li', {}, h('span', { class: 'n', id: 'sum-errors' }, errors), errors === 1 ? 'error' : 'errors'),
    h('li', {}, h('span', { class: 'n' }, qs.length), qs.length === 1 ? 'queue watched' : 'queues watched'));
}

function expiryCell(q) {
  const t = secondsToExpiry(q);
  if (t === null) return h('td', {}, h('span', { class: 'muted' }, 'nothing queued'));
  // The queue page's text; the reason takes the meter's line.
  if (q.expiry_unknown) {
    return h('td', { title: `${fmtExpiry(0)}: ${q.expiry_unknown}` }, h('span', { class: 'state warn' }, 'any moment'), h('br'),
      h('span', { class: 'muted' }, q.expiry_unknown));
  }
  const retention = Math.max(1, q.source_retention_s > 0 ? Math.max(q.retention_s, q.source_retention_s) : q.retention_s);
  const left = Math.max(0, Math.min(retention, t));
  const text = fmtExpiry(t);
  return h('td', { title: text }, h('span', { class: t < 86400 ? 'state warn' : '' }, t <= 0 ? 'any moment' : text), h('br'),
    h('meter', { min: 0, max: retention, value: left, low: retention * 0.25, optimum: retention,
      'aria-label': `${fmtDuration(left)} left of ${fmtDuration(retention)} retention` }));
}

// Every cell holds at most two lines (a row's height is fixed): the last run's
// flags share its second line, and the cell's title repeats its whole text.
function overviewRow(q) {
  const run = q.last_run;
  const alarms = q.alarms.length === 0 ? h('span', { class: 'muted' }, 'none')
    : q.alarms.map((a, i) => [i ? h('br') : null, `${a.kind}: `, stateBadge(a.state)]);
  const flags = []; // [nodes, title text]
  if (q.failing) flags.push([[h('span', { class: 'state alarm' }, 'ERROR'), ' ' + q.error_code], 'ERROR ' + q.error_code]);
  if (q.running) flags.push([h('span', { class: 'state warn' }, 'RUNNING'), 'RUNNING']);
  if (q.collect_error) flags.push([h('span', { class: 'state alarm' }, 'COLLECT ERROR'), 'COLLECT ERROR']);
  const runText = run ? [fmtTime(run.time), `${run.archived} archived${run.ok ? '' : ' (failed)'}`] : ['no run yet'];
  const flagNodes = flags.map((f, i) => [i ? ' ' : null, f[0]]);
  const last = run ? [runText[0], h('br'), runText[1], flags.length ? [' ', flagNodes] : null]
    : [h('span', { class: 'muted' }, 'no run yet'), flags.length ? [h('br'), flagNodes] : null];
  const lastTitle = runText.concat(flags.map((f) => f[1])).join(', ');
  return h('tr', { 'data-queue': q.queue },
    h('th', { scope: 'row', title: q.queue }, h('a', { href: '#/queue/' + encodeURIComponent(q.queue) }, q.queue),
      q.fifo ? h('span', { class: 'muted' }, ' FIFO') : null),
    h('td', { title: q.group + ' / ' + q.region }, q.group, h('br'), h('span', { class: 'muted' }, q.region)),
    h('td', { class: 'num' }, count(q.visible)), h('td', { class: 'num' }, count(q.not_visible)), h('td', { class: 'num' }, count(q.delayed)),
    expiryCell(q), h('td', { class: 'alarms' }, alarms), h('td', { title: lastTitle }, last), h('td', { class: 'num' }, q.archived));
}

function sortedQueues(doc) {
  const col = columns.find((c) => c.key === state.sort.key) || columns[0];
  const f = state.filter.toLowerCase();
  const qs = doc.queues.filter((q) => !f || (q.queue + ' ' + q.group + ' ' + q.region).toLowerCase().includes(f));
  // Keys computed once per queue; no destructuring in the comparator (slow
  // while the code is still interpreted, as on a first load).
  // Ties go by name, then keep the document's order (the sort is stable).
  const now = Date.now();
  const keyed = qs.map((q) => ({ k: col.value(q, now), q }));
  const dir = state.sort.dir;
  keyed.sort((x, y) => (x.k < y.k ? -1 : x.k > y.k ? 1 : x.q.queue < y.q.queue ? -1 : x.q.queue > y.q.queue ? 1 : 0) * dir);
  return keyed.map((e) => e.q);
}

const OVERSCAN = 20; // rows kept in the page beyond each edge of the view
const ESTIMATED_ROW_PX = 57; // until a rendered row is measured
const table = {
  rows: [], // every queue the filter lets through, sorted
  nodes: new Map(), // queue document entry -> its <tr>, built on first use
  start: 0, // state.rows[start, end) are in the page
  end: 0,
  rowPx: 0, // a data row's height, measured
  top: null, // spacer rows
  bottom: null,
  scheduled: false,
  doc: null, // the document the nodes were built from
};

function spacerRow() {
  const tr = document.createElement('tr');
  tr.className = 'spacer';
  tr.setAttribute('aria-hidden', 'true');
  const td = document.createElement('td');
  td.colSpan = columns.length;
  tr.append(td);
  return tr;
}

// Puts the rows around the view in the page. Unless force, does nothing while
// the rows in the page still cover the view with half the overscan to spare.
// overscan: rows beyond each edge (the first render has none: it lays out
// only what is in view, and the overscan follows right after its frame).
function renderWindow(force, overscan = OVERSCAN) {
  const body = document.getElementById('queues-body');
  if (!body) return;
  const n = table.rows.length;
  const px = table.rowPx || ESTIMATED_ROW_PX;
  const top = body.getBoundingClientRect().top; // the top spacer's top: does not move with the window
  const inView = Math.ceil(window.innerHeight / px) + 1;
  const first = Math.min(Math.floor(Math.max(0, -top) / px), Math.max(0, n - inView));
  let last = Math.min(n, first + inView, Math.max(0, Math.ceil((window.innerHeight - top) / px)));
  // Which row had the focus, to give it back if its node is replaced.
  const focusedRow = body.contains(document.activeElement) ? document.activeElement.closest('tr') : null;
  const focusedQueue = focusedRow ? focusedRow.dataset.queue : null;
  // A focused row near the view counts as in view, so that Tab always finds the
  // next row in the page, even before the scroll it caused has been handled.
  const focusedAt = focusedRow ? Number(focusedRow.getAttribute('aria-rowindex')) - 2 : -1;
  if (focusedAt >= first && focusedAt < last + OVERSCAN) last = Math.min(n, Math.max(last, focusedAt + 1));
  const half = overscan >> 1;
  if (!force && table.start <= Math.max(0, first - half) && table.end >= Math.min(n, last + half)) return;
  const start = Math.max(0, first - overscan), end = Math.min(n, last + overscan);

  for (let i = start; i < end; i++) {
    if (!table.nodes.has(table.rows[i])) table.nodes.set(table.rows[i], overviewRow(table.rows[i]));
  }
  if (!table.top) { table.top = spacerRow(); table.bottom = spacerRow(); }
  const want = [table.top];
  for (let i = start; i < end; i++) {
    const tr = table.nodes.get(table.rows[i]);
    tr.setAttribute('aria-rowindex', String(i + 2)); // the header row is 1
    want.push(tr);
  }
  want.push(table.bottom);
  // Remove what leaves, then insert what enters: rows that stay are not moved.
  const keep = new Set(want);
  for (let c = body.firstChild; c;) {
    const next = c.nextSibling;
    if (!keep.has(c)) c.remove();
    c = next;
  }
  let cur = body.firstChild;
  for (const node of want) {
    if (cur === node) cur = cur.nextSibling;
    else body.insertBefore(node, cur);
  }
  table.top.style.height = start * px + 'px';
  table.bottom.style.height = (n - end) * px + 'px';
  table.start = start;
  table.end = end;
  if (focusedQueue && !body.contains(document.activeElement)) {
    const again = body.querySelector(`tr[data-queue="${CSS.escape(focusedQueue)}"] a`);
    if (again) again.focus({ preventScroll: true });
  }
  if (!table.rowPx && end > start) requestAnimationFrame(measureRows);
}

// The real row height, once the first rows are laid out (before the frame
// is painted, so measuring costs no extra layout).
function measureRows() {
  const body = document.getElementById('queues-body');
  if (!body || table.end <= table.start || table.rowPx) return;
  const first = table.top.nextSibling;
  const px = (table.bottom.getBoundingClientRect().top - first.getBoundingClientRect().top) / (table.end - table.start);
  if (!(px > 0)) return;
  table.rowPx = px;
  if (Math.abs(px - ESTIMATED_ROW_PX) > 0.5) renderWindow(true);
}

function onScroll() {
  if (table.scheduled || !document.getElementById('queues-body')) return;
  table.scheduled = true;
  requestAnimationFrame(() => { table.scheduled = false; renderWindow(false); });
}

// rebuild: the document changed or the countdowns moved, so every row is
// built anew; otherwise (sort, filter) the rows' nodes are reused.
function renderOverviewLive(rebuild) {
  const doc = state.overview;
  const summary = document.getElementById('summary');
  const tbody = document.getElementById('queues-body');
  if (!doc || !summary || !tbody) return;
  summary.replaceChildren(overviewSummary(doc));
  if (rebuild || table.doc !== doc) table.nodes = new Map();
  table.doc = doc;
  table.rows = sortedQueues(doc);
  state.renderedAt = Date.now();
  document.getElementById('queues').setAttribute('aria-rowcount', String(table.rows.length + 1));
  document.getElementById('shown').textContent = `${table.rows.length} of ${plural(doc.queues.length, 'queue', 'queues')} shown`;
  const groups = document.getElementById('groups');
  groups.replaceChildren(...doc.groups.filter((g) => g.problem).map((g) =>
    h('p', { class: 'error' }, `Group ${g.name}: `, g.problem)));
  for (const th of document.querySelectorAll('#queues thead th')) {
    th.setAttribute('aria-sort', th.dataset.key === state.sort.key ? (state.sort.dir > 0 ? 'ascending' : 'descending') : 'none');
  }
  if (state.firstRowsMarked) {
    renderWindow(true);
    return;
  }
  // The first render: the rows in view only, then (after the frame that shows
  // them) the overscan. The marks are for bench/dashboard/measure.mjs: rows in
  // the page, then the end of the frame that laid them out and painted them.
  state.firstRowsMarked = true;
  renderWindow(true, 0);
  performance.mark('dlq-overview-rows');
  requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      performance.mark('dlq-overview-frame');
      renderWindow(true);
    };
    ch.port2.postMessage(0);
  });
}

function renderOverview(view) {
  const onFilter = (e) => { state.filter = e.target.value; renderOverviewLive(false); };
  const sortBy = (key) => {
    state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : 1 };
    renderOverviewLive(false);
  };
  table.nodes = new Map();
  table.top = null;
  table.start = table.end = 0;
  if (view.querySelector('#queues-body')) {
    // The daemon put the overview's first window into the page
    // (src/dashboard/overview_html.h): the same elements as those built
    // below, taken over as they are (with what was typed into the filter
    // meanwhile); renderOverviewLive replaces its rows with the same rows.
    const filter = document.getElementById('filter');
    filter.addEventListener('input', onFilter);
    state.filter = filter.value;
    for (const th of view.querySelectorAll('#queues thead th')) {
      th.querySelector('button').addEventListener('click', () => sortBy(th.dataset.key));
    }
    renderOverviewLive(true);
    return;
  }
  const filter = h('input', { type: 'search', id: 'filter', value: state.filter, 'aria-describedby': 'shown', oninput: onFilter });
  const head = h('tr', { 'aria-rowindex': 1 }, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : '', 'data-key': c.key },
    h('button', { type: 'button', onclick: () => sortBy(c.key) }, c.label))));
  view.replaceChildren(
    h('h1', {}, 'Dead-letter queues'),
    h('div', { id: 'summary' }),
    h('div', { id: 'groups' }),
    h('div', { class: 'toolbar' }, h('label', { for: 'filter' }, 'Filter queues'), filter,
      h('span', { id: 'shown', class: 'muted' })),
    h('table', { id: 'queues' }, h('caption', { class: 'muted' }, 'Sort by a column with its header button; the filter searches every queue ' +
      '(only the rows near the view are in the page); the nearest expiry is a conservative estimate.'),
      h('thead', {}, head), h('tbody', { id: 'queues-body' })));
  renderOverviewLive(true);
}

// ---- Queue page.

function chart(title, samples, series, unit) {
  const W = 600, H = 140, L = 44, B = 18;
  const times = samples.map((p) => Date.parse(p.time));
  const values = series.flatMap((sr) => samples.map(sr.value)).filter((v) => v !== null && v >= 0);
  const max = Math.max(1, ...values);
  const t0 = times.length ? times[0] : 0, t1 = times.length ? times[times.length - 1] : 1;
  const x = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - 4);
  const y = (v) => H - B - (v / max) * (H - B - 6);
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', 'aria-hidden': 'true' });
  svg.append(s('line', { class: 'axis', x1: L, y1: H - B, x2: W, y2: H - B }));
  svg.append(s('line', { class: 'axis', x1: L, y1: 4, x2: L, y2: H - B }));
  svg.append(s('text', { x: 2, y: 14 }, unit(max)));
  svg.append(s('text', { x: 2, y: H - B }, unit(0)));
  if (times.length) {
    svg.append(s('text', { x: L, y: H - 3 }, fmtTime(samples[0].time).slice(11)));
    svg.append(s('text', { x: W - 70, y: H - 3 }, fmtTime(samples[samples.length - 1].time).slice(11)));
  }
  series.forEach((sr, i) => {
    const pts = samples.map((p, k) => [times[k], sr.value(p)]).filter(([, v]) => v !== null && v >= 0)
      .map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    if (pts.length) svg.append(s('polyline', { class: 'line' + (i + 1), points: pts.join(' ') }));
  });
  const last = samples.length ? samples[samples.length - 1] : null;
  const summary = series.map((sr) => `${sr.name}: now ${last ? unit(sr.value(last)) : '—'}, peak ${unit(Math.max(0, ...samples.map(sr.value).filter((v) => v !== null)))}`).join('; ');
  return h('figure', { role: 'group', 'aria-label': title },
    h('figcaption', {}, title), svg,
    h('p', { class: 'muted' }, `${plural(samples.length, 'sample', 'samples')}. ${summary}.`,
      series.length > 1 ? ` Solid line: ${series[0].name}; dashed: ${series[1].name}.` : ''));
}

function timeline(q) {
  const events = [];
  for (const a of q.alarms) for (const t of a.history || []) events.push(Object.assign({ alarm: alarmLabel(a) }, t));
  events.sort((a, b) => (a.time < b.time ? 1 : -1));
  if (!events.length) return h('p', { class: 'muted' }, 'No alarm transitions yet.');
  return h('ol', { class: 'timeline', 'aria-label': 'Alarm transitions, newest first' }, events.slice(0, 50).map((e) =>
    h('li', {}, h('time', { datetime: e.time }, fmtTime(e.time)), ' — ', e.alarm, ' alarm ',
      stateBadge(e.from), ' → ', stateBadge(e.to), h('br'), h('span', { class: 'muted' }, e.reason))));
}

function queueHeader(q) {
  const t = secondsToExpiry(q);
  return h('div', {},
    h('dl', { class: 'fields' },
      h('dt', {}, 'Group / region'), h('dd', {}, `${q.group} / ${q.region}`),
      h('dt', {}, 'Messages'), h('dd', { id: 'q-messages' }, `${count(q.messages.visible)} visible, ${count(q.messages.not_visible)} in flight, ${count(q.messages.delayed)} delayed`),
      h('dt', {}, 'Nearest expiry'), h('dd', {}, t === null ? 'nothing queued' : q.expiry_unknown ? `${fmtExpiry(0)}: ${q.expiry_unknown}` : `${fmtExpiry(t)} (${fmtTime(q.nearest_expiry)})`),
      h('dt', {}, 'Retention'), h('dd', {}, fmtDuration(q.retention_s) + (q.source_retention_s > 0 ? `; sources keep ${fmtDuration(q.source_retention_s)}` : '')),
      h('dt', {}, 'Alarms'), h('dd', { id: 'q-alarms' }, q.alarms.length ? q.alarms.map((a) =>
        h('span', { 'data-alarm': alarmLabel(a) }, `${alarmLabel(a)} alarm: `, stateBadge(a.state), h('span', { class: 'muted' }, a.reason), h('br'))) : 'none'),
      h('dt', {}, 'Archive'), h('dd', {}, `${q.archive.archived} archived in ${plural(q.archive.runs, 'run', 'runs')}` +
        (q.archive.last_run ? `; last run ${fmtTime(q.archive.last_run.time)} archived ${q.archive.last_run.archived}` : '') +
        (q.archive.running ? '; a run is in progress' : ''),
        q.archive.last_error ? [h('br'), h('span', { class: q.archive.failing ? 'state alarm' : 'muted' }, q.archive.failing ? 'ERROR' : 'last error'), ' ',
          `${fmtTime(q.archive.last_error.time)} ${q.archive.last_error.message}`] : '')));
}

function tokenField(result) {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', value: token(),
    onchange: (e) => { sessionStorage.setItem('dlq-token', e.target.value.trim()); } });
  return h('div', { class: 'toolbar' }, h('label', { for: 'token' }, state.info.read_token ? 'Token' : 'Write token'), input,
    h('span', { class: 'muted' }, 'sent as an Authorization header, kept for this tab only'), result);
}

// Where a read-only daemon with a read token asks for it.
function readTokenPanel(reload) {
  if (!state.info.read_token || state.info.write) return null;
  const result = h('span', { role: 'status' });
  const panel = tokenField(result);
  panel.querySelector('input').addEventListener('change', () => reload());
  return h('section', { class: 'actions', 'aria-label': 'Read token' }, panel);
}

function actionsPanel(name) {
  if (!state.info.write) return null;
  const result = h('div', { role: 'status', id: 'action-result' });
  const archive = h('button', { type: 'button', id: 'archive-now', class: 'primary', onclick: async () => {
    archive.disabled = true;
    say(result, 'Asking for an archive run…');
    try {
      const r = await api('/api/queues/' + encodeURIComponent(name) + '/archive', { method: 'POST' });
      say(result, `Archive run requested for ${r.queue}: ${r.note}.`);
    } catch (e) {
      say(result, 'Archive now failed: ' + e.message, true);
    } finally {
      archive.disabled = false;
    }
  } }, 'Archive now');
  return h('section', { class: 'actions', 'aria-labelledby': 'actions-h' },
    h('h2', { id: 'actions-h' }, 'Actions'), tokenField(result),
    h('div', { class: 'toolbar' }, archive, h('span', { class: 'muted' }, 'archives every message of this queue, then deletes it from the queue')));
}

async function loadInto(region, loader) {
  region.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  try {
    region.replaceChildren(await loader());
  } catch (e) {
    const hint = e.status === 401 ? ' Enter the dashboard\'s read token in the Token field.' : '';
    region.replaceChildren(h('p', { class: 'error' }, e.message + hint));
  }
}

function objectsTable(doc) {
  if (!doc.objects.length) return h('p', { class: 'muted' }, `No archive objects for this queue in ${doc.destination} yet.`);
  return h('div', {}, h('p', { class: 'muted' }, `${plural(doc.total, 'object', 'objects')} in ${doc.destination}; newest first.`),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col' }, 'Stored'))),
      h('tbody', {}, doc.objects.map((o) => h('tr', {}, h('td', { class: 'code' }, o.key), h('td', { class: 'num' }, fmtBytes(o.size)), h('td', {}, fmtTime(o.last_modified)))))));
}

function postReplay(body) {
  return api('/api/replay', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

function replayError(e) {
  const detail = e.body && (e.body.errors || e.body.output) ? ': ' + (e.body.errors || e.body.output) : '';
  return 'Replay failed: ' + e.message + detail;
}

const REPLAY_TO = {
  source: { label: 'to the source queue', goes: 'would go back to their source ', send: 'to the source queue' },
  origin: { label: 'back where it came from (Lambda, EventBridge, SNS)', goes: 'would go back where they came from ', send: 'back where they came from' },
};

// "Replay this group": where to (each message's source queue, or back where
// it came from: replay --to-origin, with an optional function for messages
// that do not name theirs: --function), a dry run (the count and where each
// message would go), then a confirm button that sends exactly that group
// there, as the dry run showed it. Choosing the other destination, or
// changing the function, runs the dry run again.
function replayGroup(name, group, region) {
  const out = h('div', { id: 'replay-group-dry-run' });
  let runs = 0;
  let to = 'source';
  const fn = h('input', { type: 'text', id: 'replay-group-function', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'name or ARN', onchange: () => dryRun(false) });
  const fnField = h('p', { id: 'replay-group-function-field', hidden: true },
    h('label', { for: 'replay-group-function' }, 'Function for messages that do not name theirs (optional): '), fn);
  const request = () => {
    const r = { queue: name, fingerprint: group.id, to };
    if (to === 'origin' && fn.value.trim()) r.function = fn.value.trim();
    return r;
  };
  const dryRun = async (focus) => {
    const run = ++runs;
    const rq = request();
    say(out, `Dry run: what replaying group ${group.id} ${REPLAY_TO[rq.to].send} would send…`);
    let dry;
    try {
      dry = await postReplay({ ...rq, dry_run: true });
    } catch (e) {
      if (run === runs) say(out, replayError(e), true);
      return;
    }
    if (run !== runs) return;  // another destination or function was chosen meanwhile
    const send = showDryRun(group, out, dry, rq);
    if (send && focus) send.focus();
  };
  const radio = (choice) => h('label', {}, h('input', { type: 'radio', name: 'replay-to', value: choice, checked: choice === 'source',
    onchange: () => {
      to = choice;
      fnField.hidden = to !== 'origin';
      dryRun(false);
    } }), ' ', REPLAY_TO[choice].label);
  region.replaceChildren(h('fieldset', { class: 'choice', id: 'replay-group-to' },
    h('legend', {}, `Replay group ${group.id}`), radio('source'), radio('origin'), fnField), out);
  dryRun(true);
}

// The first n lines of text, and how many more there were.
function firstLines(text, n) {
  const lines = text.split('\n');
  return lines.length <= n ? text : lines.slice(0, n).join('\n') + `\n… ${plural(lines.length - n, 'more line', 'more lines')}`;
}

// A group's dry run in `out`, with its Send and Cancel buttons; returns Send
// (null when nothing would be sent). `rq` is the dry run's request ({queue,
// fingerprint, to, function?}): Send sends exactly that.
function showDryRun(group, out, dry, rq) {
  const to = rq.to;
  if (!dry.count) {
    out.replaceChildren(h('p', {}, `Group ${group.id}: no archived message to send ${REPLAY_TO[to].send}. `, dry.output || ''));
    return null;
  }
  const send = h('button', { type: 'button', class: 'primary', id: 'replay-group-confirm', onclick: async () => {
    send.disabled = cancel.disabled = true;
    say(out, `Starting a guarded replay of ${plural(dry.count, 'message', 'messages')} of group ${group.id} ${REPLAY_TO[to].send}…`);
    try {
      const r = await postReplay({ ...rq, dry_run: false });
      location.hash = '#/replays/' + encodeURIComponent(r.replay_id);
    } catch (e) {
      say(out, replayError(e), true);
    }
  } }, `Send ${plural(dry.count, 'message', 'messages')}`);
  const cancel = h('button', { type: 'button', class: 'ghost', onclick: () => say(out, 'Replay cancelled: nothing was sent.') }, 'Cancel');
  out.replaceChildren(
    h('p', {}, `Dry run for group ${group.id}: ${plural(dry.count, 'message', 'messages')} ${REPLAY_TO[to].goes}`,
      to === 'origin' ? (dry.destinations.length === 1 ? 'destination:' : 'destinations:') : dry.destinations.length === 1 ? 'queue:' : 'queues:'),
    h('ul', { id: 'replay-group-destinations' }, dry.destinations.map((d) => h('li', {}, h('span', { class: 'code' }, d.destination || d.queue_url), ': ',
      plural(d.count, 'message', 'messages')))),
    dry.output ? h('p', { class: 'muted' }, dry.output) : null,
    dry.errors ? h('p', { class: 'warn-text', id: 'replay-group-errors' }, firstLines(dry.errors, 10)) : null,
    h('div', { class: 'toolbar' }, send, cancel,
      h('span', { class: 'muted' }, 'sends a canary first, then growing steps, and stops if messages fail again; ' +
        'writes an audit record; messages an earlier replay delivered are skipped')));
  return send;
}

// "Type: message" of a cause (either may be empty), on one line, cut.
function causeText(type, message) {
  const text = type && message ? type + ': ' + message : type || message || '';
  const line = text.split('\n')[0];
  return line.length > 240 ? line.slice(0, 239) + '…' : line;
}

// The Cause cell of a failure group (doc/causes.md): the consumer's error and
// for how many of the messages looked up it was found, or why none was found.
function causeCell(g) {
  const c = g.cause;
  if (!c) return h('td', { class: 'muted' }, 'not looked up');
  const merged = c.merged_keys && c.merged_keys.length
    ? h('div', { class: 'muted' }, `with ${plural(c.merged_keys.length, 'other group', 'other groups')} that failed alike`) : null;
  if (c.key) {
    return h('td', { class: 'cause' }, h('span', { class: 'code' }, causeText(c.type, c.message) || c.key),
      h('div', { class: 'muted' }, `found for ${c.found} of ${c.answered} looked up`), merged);
  }
  return h('td', { class: 'cause' }, h('span', { class: 'state insufficient' }, 'none: ' + c.absence),
    h('div', { class: 'muted' }, c.reason || ''), merged);
}

// Notes about the causes sidecar (unreadable objects or lines): the answer
// stands without them.
function causeNotes(doc) {
  const notes = doc.cause_notes || [];
  return notes.length ? h('ul', { class: 'notes', id: 'cause-notes' }, notes.map((n) => h('li', { class: 'warn-text' }, n))) : null;
}

function failuresTable(name, doc, search) {
  const groups = doc.report.groups;
  if (!groups.length) return h('p', { class: 'muted' }, 'No archived messages for this queue yet.');
  const write = state.info.write;
  const causes = !!doc.causes;
  const region = h('div', { role: 'status', id: 'replay-group-result' });
  return h('div', {}, h('p', { class: 'muted' }, `${plural(doc.report.records, 'archived message', 'archived messages')} in ` +
    `${plural(doc.groups_total, 'group', 'groups')}: by the failure reason AWS attached (Lambda, EventBridge), else by the ` +
    'body\'s type and shape (numbers, ids and times masked)' + (causes ? '; groups whose messages failed with the same ' +
      'error in their consumer\'s logs are one row.' : '. No causes are kept for this queue yet: dlq-archive stats --causes ' +
      'looks them up in the consumer\'s logs.')),
    causeNotes(doc),
    h('table', { id: 'failure-groups' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'num' }, 'Messages'),
      h('th', { scope: 'col', class: 'num', title: 'messages that failed again after a replay (as dlq-archive stats counts them)' }, 'Failed again'),
      h('th', { scope: 'col' }, 'Group'),
      causes ? h('th', { scope: 'col', title: 'the consumer\'s error, from its logs' }, 'Cause') : null,
      h('th', { scope: 'col' }, 'First / last seen'), h('th', { scope: 'col' }, 'Example'), h('th', { scope: 'col' }, 'Actions'))),
      h('tbody', {}, groups.map((g) => h('tr', { 'data-group': g.id || '' },
        h('td', { class: 'num' }, g.count),
        h('td', { class: 'num' }, g.failed_again === undefined ? '?' : g.failed_again),
        h('td', {}, g.id ? h('span', { class: 'code muted' }, g.id + ' ') : null, h('span', { class: 'code' }, g.key === null ? '(no body)' : g.key)),
        causes ? causeCell(g) : null,
        h('td', {}, fmtTime(g.first_seen), h('br'), fmtTime(g.last_seen)),
        h('td', {}, h('a', { href: `#/queue/${encodeURIComponent(name)}/message/${encodeURIComponent(g.example_id)}` }, g.example_id)),
        h('td', {}, g.id ? h('button', { type: 'button', class: 'ghost', onclick: () => search.searchGroup(g.id) }, 'Search') : null,
          g.id && write ? [' ', h('button', { type: 'button', class: 'ghost', onclick: () => replayGroup(name, g, region) }, 'Replay this group')] : null))))),
    region);
}

function searchSection(name) {
  const results = h('div', { id: 'results' });
  const replayResult = h('div', { role: 'status', id: 'replay-result' });
  const q = h('input', { type: 'search', id: 'search-q', name: 'q' });
  const id = h('input', { type: 'text', id: 'search-id', name: 'id', class: 'code' });
  const since = h('input', { type: 'text', id: 'search-since', name: 'since', placeholder: '24h, 2026-11-20' });
  const group = h('input', { type: 'text', id: 'search-fingerprint', name: 'fingerprint', class: 'code', size: 14 });
  const run = async (e) => {
    if (e) e.preventDefault();
    const params = new URLSearchParams({ queue: name, limit: '100' });
    if (q.value) params.set('q', q.value);
    if (id.value.trim()) params.set('id', id.value.trim());
    if (since.value.trim()) params.set('since', since.value.trim());
    if (group.value.trim()) params.set('fingerprint', group.value.trim());
    await loadInto(results, async () => {
      const doc = await api('/api/search?' + params.toString());
      return resultsTable(name, doc, replayResult);
    });
  };
  const form = h('form', { role: 'search', 'aria-label': 'Search the archive', onsubmit: run },
    h('div', { class: 'toolbar' },
      h('label', { for: 'search-q' }, 'Body contains'), q,
      h('label', { for: 'search-id' }, 'Message id'), id,
      h('label', { for: 'search-since' }, 'Sent since'), since,
      h('label', { for: 'search-fingerprint' }, 'Failure group'), group,
      h('button', { type: 'submit', class: 'primary' }, 'Search')));
  const searchFor = (messageId) => { q.value = ''; group.value = ''; id.value = messageId; run(); id.focus(); };
  const searchGroup = (fingerprint) => { q.value = ''; id.value = ''; group.value = fingerprint; run(); group.focus(); };
  return { node: h('section', { 'aria-labelledby': 'search-h' }, h('h2', { id: 'search-h' }, 'Search the archive'), form, replayResult, results), searchFor, searchGroup };
}

function resultsTable(name, doc, replayResult) {
  if (!doc.messages.length) return h('p', { role: 'status' }, 'No archived message matches.');
  const write = state.info.write;
  const boxes = [];
  const replay = write ? h('button', { type: 'button', id: 'replay-selected', class: 'primary', onclick: async () => {
    const ids = boxes.filter((b) => b.checked).map((b) => b.value);
    if (!ids.length) { say(replayResult, 'Select at least one message to replay.', true); return; }
    replay.disabled = true;
    say(replayResult, `Starting a replay of ${plural(ids.length, 'message', 'messages')} to their source queue…`);
    try {
      const r = await postReplay({ queue: name, ids });
      location.hash = '#/replays/' + encodeURIComponent(r.replay_id);
    } catch (e) {
      say(replayResult, replayError(e), true);
      replay.disabled = false;
    }
  } }, 'Replay selected to source') : null;
  const rows = doc.messages.map((m) => {
    const box = write ? h('input', { type: 'checkbox', value: m.message_id, 'aria-label': 'Select ' + m.message_id }) : null;
    if (box) boxes.push(box);
    return h('tr', {},
      write ? h('td', {}, box) : null,
      h('td', {}, h('a', { href: `#/queue/${encodeURIComponent(name)}/message/${encodeURIComponent(m.message_id)}`, class: 'code' }, m.message_id)),
      h('td', {}, fmtTime(m.sent_at)),
      h('td', { class: 'num' }, m.receive_count),
      h('td', { class: 'code' }, m.preview));
  });
  return h('div', {},
    h('p', { role: 'status' }, `${plural(doc.count, 'message', 'messages')}${doc.more ? ' (more match: narrow the search)' : ''}.`),
    replay ? h('div', { class: 'toolbar' }, replay, h('span', { class: 'muted' }, 'sends the selected archived messages back to the queue they failed from (a canary first) and writes an audit record')) : null,
    h('table', { id: 'results-table' }, h('thead', {}, h('tr', {}, write ? h('th', { scope: 'col' }, 'Select') : null,
      h('th', { scope: 'col' }, 'Message id'), h('th', { scope: 'col' }, 'Sent'), h('th', { scope: 'col', class: 'num' }, 'Receives'), h('th', { scope: 'col' }, 'Body'))),
    h('tbody', {}, rows)));
}

function findQueue(name) {
  return state.queues ? state.queues.queues.find((q) => q.queue === name) : null;
}

async function renderQueueLive(name) {
  const q = findQueue(name);
  const head = document.getElementById('queue-head');
  if (!head || state.queuesFor !== 'queue:' + name) return;
  if (!q) { head.replaceChildren(h('p', { class: 'error' }, `Queue ${name} is not watched by this daemon.`)); return; }
  head.replaceChildren(queueHeader(q));
  document.getElementById('timeline').replaceChildren(timeline(q));
  // A finished archive run changes what the archive sections show.
  const archived = q.archive.archived + '/' + q.archive.runs;
  if (state.archivedSeen !== undefined && state.archivedSeen !== archived && state.reloadArchive) state.reloadArchive();
  state.archivedSeen = archived;
  try {
    const hist = await api('/api/queues/' + encodeURIComponent(name) + '/history');
    const charts = document.getElementById('charts');
    if (!charts) return;
    charts.replaceChildren(
      chart('Depth', hist.samples, [
        { name: 'visible', value: (p) => (p.visible < 0 ? null : p.visible) },
        { name: 'in flight', value: (p) => (p.not_visible < 0 ? null : p.not_visible) }], (v) => String(Math.round(v))),
      chart('Expiry clock (time to the nearest expiry)', hist.samples, [
        { name: 'time left', value: (p) => (p.expiry_in_s === null ? null : Math.max(0, p.expiry_in_s)) }], fmtDuration));
  } catch (e) {
    document.getElementById('charts').replaceChildren(h('p', { class: 'error' }, e.message));
  }
}

function renderQueue(view, name) {
  const objects = h('div', { id: 'objects' });
  const failures = h('div', { id: 'failures' });
  const replays = h('div', { id: 'replays' });
  const search = searchSection(name);
  const reloadArchive = () => {
    loadInto(replays, async () => replaysTable(await api('/api/replays?queue=' + encodeURIComponent(name))));
    loadInto(objects, async () => objectsTable(await api('/api/queues/' + encodeURIComponent(name) + '/objects')));
    loadInto(failures, async () => failuresTable(name, await api('/api/queues/' + encodeURIComponent(name) + '/failures'), search));
  };
  state.reloadArchive = reloadArchive;
  state.archivedSeen = undefined;
  view.replaceChildren(
    h('nav', { 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'All queues'), ' / ', name),
    h('h1', {}, 'Queue ', name),
    h('div', { id: 'queue-head' }),
    actionsPanel(name) || readTokenPanel(reloadArchive) || '',
    h('h2', {}, 'Depth and expiry over time'),
    h('div', { id: 'charts', class: 'charts' }),
    h('h2', {}, 'Alarm history'),
    h('div', { id: 'timeline' }),
    h('h2', {}, 'Top failure groups'), failures,
    h('h2', { id: 'replays-h' }, 'Recent replays'), replays,
    h('h2', {}, 'Recent archive objects'), objects,
    search.node);
  renderQueueLive(name);
  reloadArchive();
}

// ---- Message page.

function renderMessage(view, name, id) {
  const body = h('div', { id: 'message' });
  view.replaceChildren(
    h('nav', { 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'All queues'), ' / ',
      h('a', { href: '#/queue/' + encodeURIComponent(name) }, name), ' / ', id),
    h('h1', {}, 'Message ', h('span', { class: 'code' }, id)), body);
  loadInto(body, async () => {
    const doc = await api(`/api/messages/${encodeURIComponent(id)}?queue=${encodeURIComponent(name)}`);
    const r = doc.record;
    const bodyText = r.body !== undefined ? r.body : '(binary body, base64) ' + r.body_base64;
    let pretty = bodyText;
    try { pretty = JSON.stringify(JSON.parse(bodyText), null, 2); } catch (e) { /* not JSON: as is */ }
    const attrs = Object.entries(r.attributes || {});
    const mattrs = Object.entries(r.message_attributes || {});
    return h('div', {},
      h('dl', { class: 'fields', id: 'message-fields' },
        ['queue', 'message_id', 'sent_at', 'archived_at', 'expires_at', 'md5_of_body', 'md5_of_message_attributes'].map((k) =>
          [h('dt', {}, k), h('dd', { class: 'code' }, r[k] === undefined || r[k] === '' ? '—' : String(r[k]))])),
      h('h2', {}, 'Stored in'), h('ul', {}, doc.locations.map((l) => h('li', { class: 'code' }, l))),
      h('h2', {}, `Message attributes (${mattrs.length})`),
      mattrs.length ? h('table', { id: 'message-attributes' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Type'), h('th', { scope: 'col' }, 'Value'))),
        h('tbody', {}, mattrs.map(([k, v]) => h('tr', {}, h('td', { class: 'code' }, k), h('td', {}, v.DataType),
          h('td', { class: 'code' }, v.StringValue !== undefined ? v.StringValue : 'base64 ' + v.BinaryValue))))) : h('p', { class: 'muted' }, 'none'),
      h('h2', {}, `System attributes (${attrs.length})`),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Value'))),
        h('tbody', {}, attrs.map(([k, v]) => h('tr', {}, h('td', { class: 'code' }, k), h('td', { class: 'code' }, String(v)))))),
      h('h2', {}, 'Body'), h('pre', { id: 'message-body', tabindex: 0, 'aria-label': 'Message body' }, pretty),
      h('h2', { id: 'cause-h' }, 'Why it failed'), causeNotes(doc), causeSection(doc.cause));
  });
}

// The message's cause as the archive's causes sidecar keeps it
// (doc/archive-format.md, "Causes sidecar"): the consumer's error, where it
// was logged, the stack and the invocation's log lines; or why none was
// found. Every string comes from logs: set as text only.
function causeSection(record) {
  const field = (k, v) => [h('dt', {}, k), h('dd', { class: 'code' }, v === undefined || v === null || v === '' ? '—' : String(v))];
  if (!record) {
    return h('p', { class: 'muted', id: 'cause' }, 'Not looked up yet: dlq-archive stats --causes (or show) looks causes up ' +
      'in the consumer\'s logs and keeps them in the archive.');
  }
  const c = record.cause;
  if (record.status !== 'found' || !c) {
    return h('div', { id: 'cause' },
      h('p', {}, h('span', { class: 'state insufficient' }, 'none found: ' + record.status), ' ', record.reason || ''),
      h('dl', { class: 'fields', id: 'cause-fields' },
        field('log groups searched', (record.log_groups || []).join(', ')),
        field('window', record.window ? fmtTime(record.window.start) + ' to ' + fmtTime(record.window.end) : ''),
        field('looked up', fmtTime(record.looked_up_at))));
  }
  const lines = c.context || [];
  return h('div', { id: 'cause' },
    h('dl', { class: 'fields', id: 'cause-fields' },
      field('error', causeText(c.type, c.message)),
      field('key', c.key),
      c.batch_partial ? field('batch', 'this message\'s own failure within its batch') : null,
      field('log group', c.log_group),
      field('log stream', c.log_stream),
      field('request id', c.request_id),
      field('logged at', fmtTime(c.time)),
      field('looked up', fmtTime(record.looked_up_at))),
    c.message && c.message.includes('\n') ? [h('h3', {}, 'Message'), h('pre', { id: 'cause-message', tabindex: 0, 'aria-label': 'Error message' }, c.message)] : null,
    c.stack ? [h('h3', {}, 'Stack'), h('pre', { id: 'cause-stack', tabindex: 0, 'aria-label': 'Stack trace' }, c.stack)] : null,
    h('h3', {}, `Log lines of the invocation (${lines.length})`),
    lines.length ? h('pre', { id: 'cause-lines', tabindex: 0, 'aria-label': 'Log lines of the invocation' }, lines.join('\n'))
      : h('p', { class: 'muted' }, 'none kept'));
}


// ---- Replays.
// A replay that sends runs in the daemon as a job (POST /api/replay answers
// 202 with its id). Its page polls /api/replays/ID every second until it is
// done: the phase (in a live region, announced when it changes, not at every
// tick of a countdown), the counts, a progress bar, why it waits or pauses,
// the messages that failed again (each a link to the archived message), a
// Stop button, and the command's summary once it ends.

const PHASE_TEXT = {
  sending: 'sending', canary: 'canary', waiting: 'waiting', ramp: 'ramp', paused: 'paused for backlog',
  'final-check': 'final check', done: 'done', stopped: 'stopped on re-failures',
};
const OUTCOME_BADGE = {
  ok: 'done', refailures: 'failed again', stopped: 'stopped', refused: 'refused', partial: 'partly sent', failed: 'failed',
};
const OUTCOME_TEXT = {
  ok: 'finished: every selected message sent', refailures: 'stopped: messages failed again (exit 5)',
  stopped: 'stopped by request (exit 130)', refused: 'refused before sending (exit 2)',
  partial: 'sent, but some archive objects were unreadable (exit 3)', failed: 'failed (exit 1)',
};

function phaseBadge(r) {
  const cls = r.outcome === 'ok' || r.phase === 'done' ? 'ok'
    : r.outcome === 'refailures' || r.phase === 'stopped' || r.outcome === 'failed' ? 'alarm'
      : r.phase === 'paused' || r.state === 'stopping' ? 'warn' : 'insufficient';
  const text = r.done ? (OUTCOME_BADGE[r.outcome] || 'finished') : r.state === 'stopping' ? 'stopping' : (PHASE_TEXT[r.phase] || r.phase);
  return h('span', { class: 'state ' + cls }, text);
}

function replaySubject(r) {
  return r.fingerprint ? `group ${r.fingerprint}` : plural(r.ids, 'message', 'messages');
}

// A replay without a canary reports no counts: its summary has them.
function sentText(r) {
  if (!r.guarded) return r.done ? 'see the summary' : '—';
  return r.total > 0 ? `${r.sent} of ${r.total}` : String(r.sent);
}

function replaysTable(doc) {
  if (!doc.replays.length) return h('p', { class: 'muted' }, 'No replay from this dashboard since the daemon started.');
  return h('table', { id: 'replays-table', 'aria-labelledby': 'replays-h' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Started'), h('th', { scope: 'col' }, 'Replay'),
      h('th', { scope: 'col' }, 'Phase'), h('th', { scope: 'col', class: 'num' }, 'Sent'), h('th', { scope: 'col', class: 'num' }, 'Re-failed'))),
    h('tbody', {}, doc.replays.map((r) => h('tr', { 'data-replay': r.replay_id },
      h('td', {}, fmtTime(r.started_at)),
      h('td', {}, h('a', { href: '#/replays/' + encodeURIComponent(r.replay_id) }, replaySubject(r)),
        h('span', { class: 'muted code' }, ' ' + r.replay_id)),
      h('td', {}, phaseBadge(r)),
      h('td', { class: 'num' }, sentText(r)),
      h('td', { class: 'num' }, r.refailed)))));
}

// Why the replay waits, pauses or stopped, in words.
function replayReason(r) {
  if (r.reason) return r.reason;
  if (r.state === 'stopping') return 'stopping: the batch in flight finishes first';
  if (r.done) return OUTCOME_TEXT[r.outcome] || 'finished';
  if (!r.guarded) return 'sending (no canary: the replay reports no phases)';
  return '';
}

function replayFacts(r) {
  const backlog = r.backlog === null ? '—' : String(r.backlog) + (r.backlog_age_s !== null ? `, oldest ${fmtDuration(r.backlog_age_s)}` : '');
  return h('dl', { class: 'fields', id: 'replay-facts' },
    h('dt', {}, 'Queue'), h('dd', {}, h('a', { href: '#/queue/' + encodeURIComponent(r.queue) }, r.queue)),
    h('dt', {}, 'Replays'), h('dd', {}, replaySubject(r), r.to === 'origin' ? ' back where each message came from' : ' to the source queue'),
    h('dt', {}, 'Step'), h('dd', { id: 'replay-step' }, !r.guarded ? '—' : r.step > 0 ? `${r.step} of ${r.steps}`
      : `canary${r.steps > 0 ? `, then ${plural(r.steps, 'ramp step', 'ramp steps')}` : ''}`),
    h('dt', {}, 'Sent'), h('dd', { id: 'replay-sent' }, sentText(r)),
    h('dt', {}, 'Failed again'), h('dd', { id: 'replay-refailed' }, String(r.refailed)),
    h('dt', {}, 'Destination backlog'), h('dd', { id: 'replay-backlog' }, backlog),
    h('dt', {}, 'Paused for backlog'), h('dd', {}, fmtDuration(r.paused_s)),
    h('dt', {}, 'DLQ receives to look'), h('dd', {}, String(r.dlq_receives)),
    h('dt', {}, 'Started'), h('dd', {}, fmtTime(r.started_at), h('br'), h('span', { class: 'muted' }, r.started_by)),
    h('dt', {}, 'Finished'), h('dd', {}, r.done ? `${fmtTime(r.finished_at)} (exit ${r.exit_code})` : 'still running'));
}

function refailuresTable(r) {
  if (!r.refailures.length) {
    return h('p', { class: 'muted' }, r.guarded ? 'None found so far.' : 'Not watched: this replay had no canary.');
  }
  const msg = (id) => h('a', { href: `#/queue/${encodeURIComponent(r.queue)}/message/${encodeURIComponent(id)}`, class: 'code' }, id);
  return h('table', { id: 'replay-refailures', 'aria-labelledby': 'refailures-h' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Archived message'), h('th', { scope: 'col' }, 'Id of the copy'),
      h('th', { scope: 'col' }, 'Back in'), h('th', { scope: 'col' }, 'Found'))),
    h('tbody', {}, r.refailures.map((f) => h('tr', {},
      h('td', {}, msg(f.message_id)), h('td', { class: 'code' }, f.new_message_id),
      h('td', { class: 'code' }, f.dlq), h('td', {}, fmtTime(f.found_at))))));
}

function progressBar(bar, text, r) {
  const label = !r.guarded ? 'Sent: see the summary' : r.total > 0 ? `Sent ${r.sent} of ${r.total} messages` : `Sent ${r.sent} messages`;
  bar.setAttribute('aria-label', label);
  if (r.total > 0 || r.done) {
    bar.max = r.total > 0 ? r.total : 1;
    bar.value = r.total > 0 ? Math.min(r.sent, r.total) : 1;
  } else {
    bar.removeAttribute('value'); // indeterminate: the total is not known
  }
  const pct = r.total > 0 ? ` (${Math.floor((100 * r.sent) / r.total)}%)` : '';
  text.textContent = r.guarded ? `${label}${pct}, ${r.refailed} failed again` : r.done ? 'Finished: the summary below has the counts' : 'Sending…';
}

// Replaces `region`'s content with build() when `key` differs from the last
// one it was built for (so a focused link inside stays where it is).
function renderIfChanged(region, key, build) {
  if (region.dataset.key === key) return;
  region.dataset.key = key;
  region.replaceChildren(...[build()].flat());
}

function renderReplay(view, id) {
  const phase = h('p', { id: 'replay-phase', role: 'status', 'aria-live': 'polite' }, 'Loading…');
  const bar = h('progress', { id: 'replay-progress', 'aria-label': 'Sent' });
  const barText = h('span', {});
  const reason = h('p', { id: 'replay-reason' });
  const result = h('div', { role: 'status', id: 'replay-stop-result' });
  const stop = h('button', { type: 'button', id: 'replay-stop', class: 'primary', onclick: async () => {
    stop.disabled = true;
    say(result, 'Asking the replay to stop…');
    try {
      const s = await api('/api/replays/' + encodeURIComponent(id) + '/stop', { method: 'POST' });
      say(result, 'Stop requested: ' + s.note + '.');
    } catch (e) {
      say(result, 'Stop failed: ' + e.message, true);
      stop.disabled = false;
    }
  } }, 'Stop replay');
  const stopBar = h('div', { class: 'toolbar', hidden: true }, stop,
    h('span', { class: 'muted' }, 'the batch in flight finishes; what was not sent stays in the archive'), result);
  const facts = h('div', {});
  const refHead = h('h2', { id: 'refailures-h' }, 'Messages that failed again');
  const refailures = h('div', {});
  const summary = h('div', {});
  const body = h('div', { id: 'replay', hidden: true }, h('div', { class: 'progress' }, bar, barText), reason, stopBar, facts,
    refHead, refailures, summary);
  const problem = h('div', {});
  const crumbs = h('nav', { 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'All queues'), ' / replay ', id);
  view.replaceChildren(crumbs, h('h1', {}, 'Replay ', h('span', { class: 'code' }, id)), phase, problem, body);
  const route = state.route;
  let spokenPhase = null;
  const tick = async () => {
    if (state.route !== route) return; // navigated away: stop polling
    let r;
    try {
      r = await api('/api/replays/' + encodeURIComponent(id));
    } catch (e) {
      if (state.route !== route) return;
      const hint = e.status === 401 ? ' Enter the dashboard\'s token to follow this replay.' : '';
      phase.textContent = 'Cannot load the replay: ' + e.message + hint;
      if (e.status === 401 && !problem.firstChild) {
        const field = tokenField(h('span'));
        field.querySelector('input').addEventListener('change', () => { problem.replaceChildren(); tick(); });
        problem.replaceChildren(field);
      }
      if (e.status !== 404 && e.status !== 401) setTimeout(tick, 1000);
      return;
    }
    if (state.route !== route) return;
    body.hidden = false;
    const spoken = r.done ? 'Replay ' + (OUTCOME_TEXT[r.outcome] || 'finished')
      : 'Phase: ' + (r.state === 'stopping' ? 'stopping' : PHASE_TEXT[r.phase] || r.phase) +
        (r.phase === 'ramp' && r.steps > 0 ? `, step ${r.step} of ${r.steps}` : '');
    if (spoken !== spokenPhase) { phase.replaceChildren(phaseBadge(r), ' ', spoken); spokenPhase = spoken; }
    renderIfChanged(crumbs, r.queue, () => [h('a', { href: '#/' }, 'All queues'), ' / ',
      h('a', { href: '#/queue/' + encodeURIComponent(r.queue) }, r.queue), ' / replay ', id]);
    progressBar(bar, barText, r);
    reason.textContent = replayReason(r);
    reason.className = r.phase === 'paused' || r.phase === 'stopped' || r.outcome === 'refailures' ? 'state warn' : 'muted';
    stopBar.hidden = !state.info.write || r.done;
    if (r.state === 'stopping') { stop.disabled = true; stop.textContent = 'Stopping…'; }
    // The countdown in the reason alone changes nothing below.
    renderIfChanged(facts, JSON.stringify(Object.assign({}, r, { reason: '' })), () => replayFacts(r));
    refHead.textContent = `Messages that failed again (${r.refailed})`;
    renderIfChanged(refailures, r.refailures.length + '/' + r.guarded, () => refailuresTable(r));
    renderIfChanged(summary, String(r.done), () => (r.done ? h('div', {}, h('h2', {}, 'Summary'),
      h('pre', { id: 'replay-output', tabindex: 0, 'aria-label': 'Replay summary' },
        [r.output, r.errors].filter((t) => t).join('\n') || '(no output)')) : ''));
    if (!r.done) setTimeout(tick, 1000);
  };
  tick();
}

// ---- Routing and live updates.

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'replays' && parts[1]) return { view: 'replay', id: parts[1] };
  if (parts[0] === 'queue' && parts[1]) {
    if (parts[2] === 'message' && parts[3]) return { view: 'message', queue: parts[1], id: parts[3] };
    return { view: 'queue', queue: parts[1] };
  }
  return { view: 'overview' };
}

function render() {
  state.route = parseRoute();
  const view = document.getElementById('view');
  const r = state.route;
  if (r.view === 'queue') { document.title = r.queue + ' · dlq-archive'; renderQueue(view, r.queue); }
  else if (r.view === 'message') { document.title = r.id + ' · dlq-archive'; renderMessage(view, r.queue, r.id); }
  else if (r.view === 'replay') { document.title = 'Replay ' + r.id + ' · dlq-archive'; renderReplay(view, r.id); }
  else { document.title = 'Dead-letter queues · dlq-archive'; renderOverview(view); }
}

// The overview: 304 when nothing changed since the last answer; the rows are
// then rebuilt only once a minute (their countdowns move). The first request
// takes the answer index.html preloads (<link rel="preload" as="fetch"
// crossorigin>), so it is the same request: a plain GET in cors mode with
// same-origin credentials and no headers (with If-None-Match, for one, Chrome
// fetches again and warns that the preload went unused). Later polls ask with
// If-None-Match.
async function pollOverview() {
  const res = state.overviewEtag
    ? await fetch('/api/overview', { cache: 'no-store', headers: { 'If-None-Match': state.overviewEtag } })
    : await fetch('/api/overview');
  if (res.status === 304 && state.overview) {
    if (state.route.view === 'overview' && Date.now() - state.renderedAt >= 60000) renderOverviewLive(true);
    return;
  }
  let doc = null;
  try { doc = await res.json(); } catch (e) { /* reported below */ }
  if (!res.ok || !doc) throw new Error((doc && doc.error) || 'HTTP ' + res.status);
  if (!state.overview) performance.mark('dlq-overview-data');
  state.overview = doc;
  state.overviewEtag = res.headers.get('ETag');
  if (state.route.view === 'overview') renderOverviewLive(true);
}

function showUpdated() {
  if (!state.updated) return;
  const every = state.info.poll_interval_s ? ', every ' + fmtDuration(state.info.poll_interval_s) : '';
  setLive('Updated ' + fmtClock(state.updated) + every);
}

async function poll() {
  try {
    const r = state.route;
    if (r.view === 'overview') {
      await pollOverview();
    } else if (r.view === 'replay') {
      // The replay page polls its own status every second.
    } else {
      // A queue page needs its queue only, with its alarms' history.
      const key = 'queue:' + r.queue;
      const doc = await api('/api/queues?queue=' + encodeURIComponent(r.queue));
      if (r !== state.route) return; // navigated meanwhile: the next poll serves the new view
      state.queues = doc;
      state.queuesFor = key;
      if (state.route.view === 'queue') await renderQueueLive(state.route.queue);
    }
    state.updated = new Date();
    showUpdated();
  } catch (e) {
    setLive('Update failed: ' + e.message);
  }
}

async function main() {
  initTheme();
  window.addEventListener('scroll', onScroll, { passive: true });
  // Focus moving onto a row (Tab) extends the window at once, not a frame later.
  document.addEventListener('focusin', (e) => { if (e.target.closest && e.target.closest('#queues-body')) renderWindow(false); });
  window.addEventListener('resize', onScroll, { passive: true });
  window.addEventListener('hashchange', () => {
    render();
    poll();
    document.getElementById('main').focus();
  });
  state.route = parseRoute();
  // The first answers are fetched at once, side by side; /api/overview is
  // already on its way (index.html preloads it).
  const info = api('/api/dashboard').catch((e) => { setLive('Cannot reach the daemon: ' + e.message); return null; });
  if (state.route.view === 'overview') {
    // The overview needs nothing from /api/dashboard. The page is built with
    // the first answer, not before: a frame of the page without its rows
    // would only delay the rows (measured).
    await poll();
    render();
    const got = await info;
    if (got) {
      state.info = got;
      showUpdated(); // with the real poll interval
    }
  } else {
    // Other views take the preloaded overview too (kept for the way back):
    // a preload left unused is a console warning.
    const overview = pollOverview().catch(() => {});
    const first = poll();
    state.info = (await info) || state.info;
    await first;
    render();
    await overview;
  }
  // Polls follow the collection interval: the daemon has nothing newer sooner.
  const every = Math.max(1, state.info.poll_interval_s || 60) * 1000;
  state.timer = setInterval(poll, every);
}

main();
