// Drives the dashboard of two running `dlq-archive run` daemons (one without
// a write token, one with) in Debian's headless Chromium through
// puppeteer-core, and checks what issue 10 asks (doc/dashboard.md, "Tests").
// Run by tests/integration/dashboard_browser_test.cc, which sets up the
// queues and daemons on a stand-in and checks the SQS side afterwards.
//
// The overview's windowing at 1,000 queues is checked by overview_window.mjs.
//
// Usage: node dashboard.mjs CONFIG.json
//   {chromium, modules, ro_url, rw_url, token, archived_queue, alarm_queue,
//    archive_now_queue, known_body, known_attr_name, known_attr_value,
//    purge_command, cause_message_id, cause_log_group, hostile_line,
//    screenshots_dir}
// Prints one line per check ("ok NAME" / "FAIL NAME: why") and figures
// ("figure NAME VALUE"); exits 1 when any check failed.
import { execSync } from 'node:child_process';
import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { checkWindowedOverview } from './overview_window.mjs';
import { checkReplayPage } from './replay_page.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(path.join(cfg.modules, 'noop.js'));
const puppeteer = require('puppeteer-core');
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let failed = 0;
function check(name, ok, why) {
  if (ok) console.log('ok ' + name);
  else {
    failed++;
    console.log('FAIL ' + name + ': ' + (why || ''));
  }
}
async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : String(e));
  }
}

const browser = await puppeteer.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  // A wedged renderer fails its step within a minute, not puppeteer's 180 s.
  protocolTimeout: 60000,
});

// A page that records console errors and warnings (Chrome's own too, such as
// "preloaded but not used"), page errors and every request that leaves for
// another origin than the daemon's.
async function openPage(base) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.errors = [];
  page.warnings = [];
  page.foreign = [];
  const origin = new URL(base).origin;
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(m.text());
    if (m.type() === 'warn') page.warnings.push(m.text());
  });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('data:')) page.foreign.push(u);
  });
  return page;
}

async function axe(page, name) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, target: v.nodes[0] && v.nodes[0].target.join(' ') }));
  });
  const serious = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check('axe ' + name, serious.length === 0, JSON.stringify(serious));
  const minor = result.filter((v) => !(v.impact === 'serious' || v.impact === 'critical'));
  if (minor.length) console.log('note axe ' + name + ' minor: ' + JSON.stringify(minor));
}

async function textOf(page, selector) {
  return page.$eval(selector, (e) => e.textContent);
}

async function waitText(page, selector, needle, timeout = 20000) {
  await page.waitForFunction((sel, n) => {
    const e = document.querySelector(sel);
    return e && e.textContent.includes(n);
  }, { timeout, polling: 200 }, selector, needle);
}

const q = (name) => encodeURIComponent(name);
mkdirSync(cfg.screenshots_dir, { recursive: true });

// The overview as the page shows it: each row's queue, its cells' text and
// title and where the row and its cells are; the summary; where the parts
// above the table are.
function snapshotOverview(page) {
  return page.evaluate(() => {
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height].map((x) => Math.round(x * 10) / 10); };
    const rows = [...document.querySelectorAll('#queues-body tr[data-queue]')].map((tr) => ({
      queue: tr.dataset.queue, index: tr.getAttribute('aria-rowindex'), box: box(tr),
      cells: [...tr.children].map((c) => ({ text: c.textContent, title: c.getAttribute('title'), box: box(c) })),
    }));
    return {
      rows, summary: document.getElementById('summary').textContent, shown: document.getElementById('shown').textContent,
      rowcount: document.getElementById('queues').getAttribute('aria-rowcount'),
      sort: [...document.querySelectorAll('#queues thead th')].map((th) => th.dataset.key + ':' + th.getAttribute('aria-sort')).join(),
      above: ['h1', '#summary', '#groups', '.toolbar', '#queues thead'].map((sel) => box(document.querySelector(sel))),
    };
  });
}

// The page and the /api/overview answer of one generation of the overview:
// the answer's ETag is the same before and after the page was fetched. The
// daemon collects every second here and its overview moves with each
// collection (a queue whose messages' ages are unknown "may expire now"), so
// a page and the answer its preload fetches a moment later often differ.
async function oneGeneration(base) {
  const headers = (res) => Object.fromEntries([...res.headers.entries()].filter(([k]) =>
    !['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(k)));
  for (let attempt = 0; attempt < 20; attempt++) {
    const answer = await fetch(base + '/api/overview');
    const json = await answer.text();
    const served = await fetch(base + '/');
    const html = await served.text();
    const again = await fetch(base + '/api/overview', { headers: { 'If-None-Match': answer.headers.get('etag') } });
    if (again.status === 304) {
      return { page: { status: 200, headers: headers(served), body: html }, answer: { status: 200, headers: headers(answer), body: json } };
    }
  }
  throw new Error('the overview changed while each of 20 page loads was fetched');
}

// Loads the overview with app.js held back until `before(page)` has run on
// the page the daemon rendered; returns the page once app.js has rendered
// the rows itself (its dlq-overview-frame mark). With `pinned` (from
// oneGeneration), the page and every /api/overview answer are those.
async function loadWithScriptHeld(base, before, pinned = null) {
  const page = await openPage(base);
  await page.setRequestInterception(true);
  let release;
  const held = new Promise((r) => { release = r; });
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (path === '/app.js') held.then(() => r.continue());
    else if (pinned && path === '/') r.respond(pinned.page);
    else if (pinned && path === '/api/overview') r.respond(pinned.answer);
    else r.continue();
  });
  const loaded = page.goto(base + '/', { waitUntil: 'load' });
  // Parsed, and styled: a browser paints nothing before its stylesheets have
  // loaded (they block rendering), so neither may the snapshot. On a slow
  // server (a sanitizer build, a busy machine) the DOM is ready first.
  await page.waitForFunction(() => document.readyState !== 'loading' &&
    [...document.querySelectorAll('link[rel="stylesheet"]')].every((l) => l.sheet !== null), { polling: 20, timeout: 15000 });
  const ran = await page.evaluate(() => typeof renderOverviewLive !== 'undefined'); // eslint-disable-line no-undef
  const out = await before(page, ran);
  release();
  await loaded;
  await page.waitForFunction(() => performance.getEntriesByName('dlq-overview-frame').length > 0, { timeout: 15000 });
  return { page, out };
}

await step('the first rows come with the page, before any script', async () => {
  // The document itself: the rows, the summary, nothing inline to run.
  const res = await fetch(cfg.ro_url + '/');
  const html = await res.text();
  const served = [...html.matchAll(/<tr data-queue="([^"]*)"/g)].map((m) => m[1]);
  check('page: the watched queues\' rows are in the HTML', [cfg.archived_queue, cfg.alarm_queue, cfg.archive_now_queue].every((n) => served.includes(n)),
    JSON.stringify(served));
  const shown = html.match(/<span id="shown" class="muted">(\d+) of (\d+) queues? shown<\/span>/);
  check('page: the summary and the count are in the HTML', /<span class="n" id="sum-alarm">\d+<\/span>queues? in ALARM/.test(html) &&
    shown !== null && shown[1] === String(served.length) && html.includes(`aria-rowcount="${served.length + 1}"`), shown && shown[0]);
  check('page: one script (app.js), no inline script, style or handler', (html.match(/<script/g) || []).length === 1 &&
    !/ style=/.test(html) && !/ on[a-z]+=/.test(html));
  check('page: no action controls in the served page', !html.includes('archive-now') && !html.includes('replay-selected') && !html.includes('id="token"'));
  const etag = res.headers.get('etag');
  check('page: revalidated on every load, against an ETag of its bytes', res.headers.get('cache-control') === 'no-cache' &&
    /^"[0-9a-f]{32}"$/.test(etag || ''), JSON.stringify([res.headers.get('cache-control'), etag]));
  check('page: the same CSP', (res.headers.get('content-security-policy') || '').startsWith("default-src 'none'; script-src 'self'; style-src 'self';"));
  // Revalidation: 304 while the bytes are the same; a new page (new ETag) once a collection or the clock changed them.
  const again = await fetch(cfg.ro_url + '/', { headers: { 'If-None-Match': etag } });
  check('page: If-None-Match gives 304 or a changed page', again.status === 304 || (again.status === 200 && again.headers.get('etag') !== etag),
    again.status + ' ' + again.headers.get('etag'));

  // JavaScript off, the system in dark mode: the rows and the summary show, in the dark theme.
  const nojs = await browser.newPage();
  await nojs.setViewport({ width: 1280, height: 900 });
  await nojs.setJavaScriptEnabled(false);
  await nojs.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
  await nojs.goto(cfg.ro_url + '/', { waitUntil: 'load' });
  const still = await snapshotOverview(nojs);
  check('no script: the rows are shown, laid out', still.rows.length === served.length && still.rows.every((r) => r.box[3] > 30),
    JSON.stringify(still.rows.map((r) => [r.queue, r.box])));
  check('no script: the summary is shown', /queues? in ALARM/.test(still.summary) && still.shown === `${served.length} of ${served.length} queue${served.length === 1 ? '' : 's'} shown`, still.summary);
  const dark = await nojs.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check('no script: the system\'s dark theme applies', dark === 'rgb(15, 20, 25)', dark);
  await nojs.close();

  // app.js takes the table over: the same rows, text, order and layout, from
  // the same data (oneGeneration). A countdown may tick over a minute between
  // the two: then once more.
  for (let attempt = 0; ; attempt++) {
    let focused = null;
    const pinned = await oneGeneration(cfg.ro_url);
    const { page, out: first } = await loadWithScriptHeld(cfg.ro_url, async (p, ran) => {
      const snap = await snapshotOverview(p);
      // The keyboard works on the served page: focus a queue's link.
      await p.focus(`#queues-body tr[data-queue="${cfg.alarm_queue}"] a`);
      focused = await p.evaluate(() => document.activeElement.closest('tr').dataset.queue);
      return { snap, ran };
    }, pinned);
    const later = await snapshotOverview(page);
    const snap = first.snap;
    const diffs = [];
    if (first.ran) diffs.push('app.js ran before the snapshot');
    for (const k of ['summary', 'shown', 'rowcount', 'sort']) if (snap[k] !== later[k]) diffs.push(`${k}: ${snap[k]} -> ${later[k]}`);
    if (JSON.stringify(snap.above) !== JSON.stringify(later.above)) diffs.push('above the table: ' + JSON.stringify([snap.above, later.above]));
    const n = Math.min(snap.rows.length, later.rows.length);
    if (n !== served.length) diffs.push(`rows: ${snap.rows.length} served, ${later.rows.length} after`);
    let countdownOnly = true;
    for (let i = 0; i < n; i++) {
      const a = snap.rows[i], b = later.rows[i];
      if (a.queue !== b.queue || a.index !== b.index) { diffs.push(`row ${i}: ${a.queue} -> ${b.queue}`); countdownOnly = false; continue; }
      if (JSON.stringify(a.box) !== JSON.stringify(b.box)) { diffs.push(`row ${a.queue} moved: ${a.box} -> ${b.box}`); countdownOnly = false; }
      a.cells.forEach((c, j) => {
        const d = b.cells[j];
        if (!d || c.text !== d.text || c.title !== d.title || JSON.stringify(c.box) !== JSON.stringify(d.box)) {
          diffs.push(`row ${a.queue} cell ${j}: ${JSON.stringify(c)} -> ${JSON.stringify(d)}`);
          if (j !== 5) countdownOnly = false;
        }
      });
    }
    const keptFocus = await page.evaluate(() => { const tr = document.activeElement.closest('tr'); return tr ? tr.dataset.queue : null; });
    if (diffs.length && countdownOnly && attempt < 2) { await page.close(); continue; }
    check('takeover: app.js shows the same rows, text, order and layout as the served page', diffs.length === 0, diffs.slice(0, 5).join(' | '));
    check('takeover: a link focused before app.js ran keeps the focus', focused === cfg.alarm_queue && keptFocus === cfg.alarm_queue,
      JSON.stringify([focused, keptFocus]));
    // And then it is app.js's table: sorting and filtering work.
    await page.click('th[data-key="queue"] button');
    const names = await page.$$eval('#queues-body tr[data-queue]', (trs) => trs.map((t) => t.dataset.queue));
    check('takeover: sorting works', names.join() === [...names].sort().join() &&
      (await page.$eval('th[data-key="queue"]', (e) => e.getAttribute('aria-sort'))) === 'ascending', names.join());
    check('takeover: no console errors or warnings', page.errors.length === 0 && page.warnings.length === 0, JSON.stringify([page.errors, page.warnings]));
    await page.close();
    break;
  }

  // Typed into the served page's filter before app.js ran: app.js applies it.
  const { page: typed } = await loadWithScriptHeld(cfg.ro_url, async (p) => {
    await p.focus('#filter');
    await p.keyboard.type(cfg.alarm_queue);
  });
  await typed.waitForFunction(() => /^1 of \d+ queues? shown$/.test(document.getElementById('shown').textContent), { timeout: 5000 }).catch(() => {});
  const filtered = await typed.$$eval('#queues-body tr[data-queue]', (trs) => trs.map((t) => t.dataset.queue));
  check('takeover: a filter typed before app.js ran is applied', filtered.join() === cfg.alarm_queue &&
    (await textOf(typed, '#shown')).startsWith('1 of ') && (await typed.evaluate(() => document.activeElement.id)) === 'filter',
    JSON.stringify([filtered, await textOf(typed, '#shown')]));
  await typed.close();
});

// ---- Read-only daemon.
const ro = await openPage(cfg.ro_url);

await step('overview loads', async () => {
  // Every /api/overview request and answer: index.html preloads the first
  // one, app.js must take that answer (not ask again), and its polls then
  // revalidate it with If-None-Match.
  const asked = [];
  const answered = [];
  const isOverview = (u) => new URL(u).pathname === '/api/overview';
  const onRequest = (r) => { if (isOverview(r.url())) asked.push(r.headers()['if-none-match'] || null); };
  const onResponse = (r) => {
    if (isOverview(r.url())) answered.push({ status: r.status(), etag: r.headers().etag, asked: r.request().headers()['if-none-match'] || null });
  };
  ro.on('request', onRequest);
  ro.on('response', onResponse);
  const t0 = Date.now();
  await ro.goto(cfg.ro_url + '/', { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector(`#queues-body tr[data-queue="${cfg.alarm_queue}"]`, { timeout: 15000 });
  console.log('figure first_render_ms ' + (Date.now() - t0));
  // The rows come with the page; app.js then renders them from the
  // preloaded answer. Polls start after that: until then, one request, the preload's.
  await ro.waitForFunction(() => performance.getEntriesByName('dlq-overview-rows').length > 0, { timeout: 15000 });
  const requestsAtRows = asked.length;
  const entries = await ro.evaluate(() => performance.getEntriesByType('resource')
    .filter((e) => new URL(e.name).pathname === '/api/overview').map((e) => e.initiatorType));
  check('overview rows come from the preloaded answer', requestsAtRows === 1 && asked[0] === null && entries[0] === 'link',
    JSON.stringify({ requestsAtRows, asked, entries }));
  // The status line says when the rows were updated, and the poll interval
  // once /api/dashboard has answered (the rows do not wait for it).
  const live = await ro.waitForFunction(() => /^Updated \d\d:\d\d:\d\d, every 1s$/.test(document.getElementById('live').textContent),
    { timeout: 10000 }).then(() => true, () => false);
  check('live status: the time and the poll interval from /api/dashboard', live, await textOf(ro, '#live'));
  // The daemon collects every second and its overview may change with each
  // collection, so the check is the chain: every poll sends the ETag of the
  // last 200 answer (the preloaded one first). The 304 itself is checked
  // against a document that does not change (overview_window.mjs).
  for (let i = 0; i < 50 && answered.length < 3; i++) await new Promise((r) => setTimeout(r, 200));
  let last = null;
  const chained = answered.length >= 3 && answered[0].status === 200 && answered.every((a, i) => {
    const ok = i === 0 || (a.asked !== null && a.asked === last);
    if (a.status === 200) last = a.etag;
    return ok;
  });
  check('polls send the last answer\'s ETag, starting with the preloaded one (If-None-Match)', chained, JSON.stringify(answered.slice(0, 6)));
  ro.off('request', onRequest);
  ro.off('response', onResponse);
  const rows = await ro.$$eval('#queues-body tr', (trs) => trs.map((t) => t.dataset.queue));
  for (const name of [cfg.archived_queue, cfg.alarm_queue, cfg.archive_now_queue]) {
    check('overview lists ' + name, rows.includes(name), JSON.stringify(rows));
  }
  await new Promise((r) => setTimeout(r, 1500)); // a poll or two
  // What the first load transferred: the document, its script and style, and the first API answers.
  const weight = await ro.evaluate(() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
    .reduce((n, e) => n + (e.transferSize || e.encodedBodySize || 0), 0));
  console.log('figure page_bytes ' + weight);
  check('page weight under 200 KB', weight > 0 && weight < 200 * 1024, String(weight));
  await ro.screenshot({ path: path.join(cfg.screenshots_dir, 'dashboard-overview.png') });
});

await step('no action controls without a token', async () => {
  const info = await ro.evaluate(async () => (await fetch('/api/dashboard')).json());
  check('api says read-only', info.write === false, JSON.stringify(info));
  await ro.goto(cfg.ro_url + '/#/queue/' + q(cfg.archived_queue), { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector('#queue-head dl', { timeout: 15000 });
  await ro.waitForSelector('#search-q');
  check('no archive button', (await ro.$('#archive-now')) === null);
  check('no token field', (await ro.$('#token')) === null);
});

await step('api refuses actions without a token', async () => {
  const r1 = await fetch(cfg.ro_url + '/api/queues/' + q(cfg.archive_now_queue) + '/archive', { method: 'POST', headers: { Authorization: 'Bearer ' + cfg.token } });
  const b1 = await r1.json();
  check('archive refused 403', r1.status === 403 && /write_token/.test(b1.error), r1.status + ' ' + JSON.stringify(b1));
  const r2 = await fetch(cfg.ro_url + '/api/replay', { method: 'POST', body: JSON.stringify({ queue: cfg.archived_queue, ids: ['x'] }) });
  check('replay refused 403', r2.status === 403, String(r2.status));
  const r3 = await fetch(cfg.rw_url + '/api/replay', { method: 'POST', headers: { Authorization: 'Bearer not-the-token-at-all' }, body: JSON.stringify({ queue: cfg.archived_queue, ids: ['x'] }) });
  check('wrong token refused 401', r3.status === 401, String(r3.status));
});

await step('search finds a known message and its detail shows its attributes', async () => {
  await ro.type('#search-q', cfg.known_body);
  await ro.keyboard.press('Enter');
  await ro.waitForSelector('#results-table tbody tr', { timeout: 20000 });
  const rows = await ro.$$eval('#results-table tbody tr', (trs) => trs.map((t) => t.textContent));
  check('search finds the known message', rows.length === 1 && rows[0].includes(cfg.known_body), JSON.stringify(rows));
  await waitText(ro, '#failures', 'Messages');
  await waitText(ro, '#objects', 'dlq-archive/');
  await axe(ro, 'queue page (light)');
  await ro.screenshot({ path: path.join(cfg.screenshots_dir, 'dashboard-queue.png'), fullPage: true });
  await ro.click('#results-table tbody tr a');
  await ro.waitForSelector('#message-attributes', { timeout: 15000 });
  const attrs = await textOf(ro, '#message-attributes');
  check('detail shows the message attribute', attrs.includes(cfg.known_attr_name) && attrs.includes(cfg.known_attr_value), attrs);
  check('detail shows the body', (await textOf(ro, '#message-body')).includes(cfg.known_body));
  const none = await textOf(ro, '#cause');
  check('detail says why no cause was found', none.includes('none found: not_mentioned') && none.includes('log the SQS message id'), none);
  await axe(ro, 'message page');
});

// Issue 40: the archived queue's `_causes/` sidecar (written by
// dashboard_browser_test.cc) on the failure groups and the message page. Log
// lines are untrusted: one of them is HTML and must show as text.
await step('causes: the failure groups and the message page show why messages failed', async () => {
  await ro.goto(cfg.ro_url + '/#/queue/' + q(cfg.archived_queue), { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector('#failure-groups td.cause', { timeout: 20000 });
  check('the failure groups have a Cause column', (await textOf(ro, '#failure-groups thead')).includes('Cause'));
  const rows = await ro.$$eval('#failure-groups tbody tr', (trs) => trs.map((t) => t.textContent));
  const found = rows.find((t) => t.includes('TimeoutError: upstream inventory did not answer within 3000 ms'));
  check('a group row shows its cause and for how many messages it was found', !!found && found.includes('found for 3 of 3 looked up'), JSON.stringify(rows));
  const absent = rows.find((t) => t.includes('none: not_mentioned'));
  check('a group row without a cause says why', !!absent && absent.includes('log the SQS message id'), JSON.stringify(rows));
  await axe(ro, 'queue page with causes');
  await ro.goto(cfg.ro_url + '/#/queue/' + q(cfg.archived_queue) + '/message/' + q(cfg.cause_message_id), { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector('#cause-lines', { timeout: 15000 });
  const fields = await textOf(ro, '#cause-fields');
  check('the message page says where the cause was logged', fields.includes('TimeoutError: upstream inventory') &&
    fields.includes(cfg.cause_log_group) && fields.includes('[$LATEST]0123456789abcdef') && fields.includes('8f5c2a4e-1b7d'), fields);
  check('the message page shows the stack', (await textOf(ro, '#cause-stack')).includes('/var/task/app.py'));
  const lines = await textOf(ro, '#cause-lines');
  check('the message page shows the invocation\'s log lines', lines.includes('processing ' + cfg.cause_message_id) &&
    lines.includes('[ERROR] TimeoutError'), lines);
  check('a log line that is HTML shows as text', lines.includes(cfg.hostile_line), lines);
  const injected = await ro.evaluate(() => ({
    flag: window.__dlqInjected === undefined ? null : window.__dlqInjected,
    elements: document.querySelectorAll('#cause script, #cause img, #cause-lines *').length,
  }));
  check('a log line that is HTML runs nothing and adds no element', injected.flag === null && injected.elements === 0, JSON.stringify(injected));
  await axe(ro, 'message page with its cause');
  await ro.$eval('#cause-h', (e) => e.scrollIntoView());
  await ro.screenshot({ path: path.join(cfg.screenshots_dir, 'dashboard-causes.png') });
});

await step('keyboard navigation', async () => {
  await ro.goto(cfg.ro_url + '/', { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector(`#queues-body tr[data-queue="${cfg.alarm_queue}"]`, { timeout: 15000 });
  await ro.keyboard.press('Tab');
  check('first Tab reaches the skip link', (await ro.evaluate(() => document.activeElement.textContent)) === 'Skip to content');
  // Sort by a column from the keyboard.
  let reached = false;
  for (let i = 0; i < 15 && !reached; i++) {
    await ro.keyboard.press('Tab');
    reached = await ro.evaluate(() => document.activeElement.textContent === 'Visible');
  }
  check('Tab reaches a sort button', reached);
  await ro.keyboard.press('Enter');
  const sort = await ro.$eval('th[data-key="visible"]', (e) => e.getAttribute('aria-sort'));
  check('Enter sorts the column', sort === 'ascending', sort);
  // Open a queue from the keyboard.
  let onLink = false;
  for (let i = 0; i < 60 && !onLink; i++) {
    await ro.keyboard.press('Tab');
    onLink = await ro.evaluate((n) => document.activeElement.tagName === 'A' && document.activeElement.textContent === n, cfg.alarm_queue);
  }
  check('Tab reaches the queue link', onLink);
  await ro.keyboard.press('Enter');
  await ro.waitForFunction((n) => document.querySelector('h1') && document.querySelector('h1').textContent.includes(n), { timeout: 10000 }, cfg.alarm_queue);
  check('Enter opens the queue page', true);
});

await step('themes: axe finds no serious violation in light and dark', async () => {
  await ro.goto(cfg.ro_url + '/', { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector('#queues-body tr');
  await ro.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
  await axe(ro, 'overview (light)');
  await ro.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
  await ro.waitForFunction(() => document.documentElement.dataset.theme === 'dark', { timeout: 5000 }).catch(() => {});
  const bg = await ro.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check('dark scheme applies', bg === 'rgb(15, 20, 25)', bg);
  await axe(ro, 'overview (dark)');
  // The toggle overrides the system setting: auto -> light -> dark.
  await ro.click('#theme');
  const light = await ro.evaluate(() => [document.documentElement.dataset.theme, getComputedStyle(document.body).backgroundColor]);
  check('toggle forces light', light[0] === 'light' && light[1] === 'rgb(255, 255, 255)', JSON.stringify(light));
  await ro.click('#theme');
  await ro.goto(cfg.ro_url + '/#/queue/' + q(cfg.archived_queue), { waitUntil: 'domcontentloaded' });
  await ro.waitForSelector('#failures table', { timeout: 15000 });
  await axe(ro, 'queue page (dark)');
  await ro.click('#theme'); // back to auto
  await ro.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
});

await step('alarm turns to ALARM and back to OK without a reload', async () => {
  await ro.goto(cfg.ro_url + '/', { waitUntil: 'domcontentloaded' });
  const row = `#queues-body tr[data-queue="${cfg.alarm_queue}"] td.alarms`;
  await ro.waitForSelector(row, { timeout: 15000 });
  await ro.evaluate(() => { window.__sameDocument = true; });
  await waitText(ro, row, 'ALARM', 30000);
  check('alarm shows ALARM', (await textOf(ro, row)).includes('depth: ALARM'), await textOf(ro, row));
  execSync(cfg.purge_command, { stdio: 'inherit' });
  await ro.waitForFunction((sel) => {
    const e = document.querySelector(sel);
    return e && e.textContent.includes('depth: OK');
  }, { timeout: 60000, polling: 250 }, row);
  check('alarm back to OK on the open page', await ro.evaluate(() => window.__sameDocument === true));
  await ro.goto(cfg.ro_url + '/#/queue/' + q(cfg.alarm_queue), { waitUntil: 'domcontentloaded' });
  await waitText(ro, '#timeline', 'ALARM');
  const tl = await textOf(ro, '#timeline');
  check('timeline holds both transitions', tl.includes('ALARM') && tl.includes('OK'), tl);
  await ro.waitForSelector('#charts figure svg polyline', { timeout: 15000 });
});

// The windowed table at 1,000 queues: the page this daemon embeds, against a
// synthetic /api/overview (overview_window.mjs).
await step('windowed overview at 1,000 queues', async () => {
  await checkWindowedOverview(browser, cfg.ro_url, check, axe);
});

check('no console errors (read-only)', ro.errors.length === 0, JSON.stringify(ro.errors));
check('no console warnings (read-only)', ro.warnings.length === 0, JSON.stringify(ro.warnings));
check('no request to another host (read-only)', ro.foreign.length === 0, JSON.stringify(ro.foreign));

// ---- Daemon with the write token.
const rw = await openPage(cfg.rw_url);

await step('replay puts a message back on its source queue', async () => {
  await rw.goto(cfg.rw_url + '/#/queue/' + q(cfg.archived_queue), { waitUntil: 'domcontentloaded' });
  await rw.waitForSelector('#archive-now', { timeout: 15000 });
  check('action controls shown with a token', (await rw.$('#token')) !== null);
  await rw.type('#token', cfg.token);
  await rw.keyboard.press('Tab'); // commits the field (change event)
  await rw.type('#search-q', cfg.known_body);
  await rw.keyboard.press('Enter');
  await rw.waitForSelector('#results-table tbody input[type="checkbox"]', { timeout: 20000 });
  await rw.click('#results-table tbody input[type="checkbox"]');
  await axe(rw, 'queue page with actions');
  await rw.click('#replay-selected');
  // The replay runs in the daemon as a job: the page goes to its replay page.
  await rw.waitForFunction(() => location.hash.startsWith('#/replays/') && document.getElementById('replay-progress'), { timeout: 30000 });
  check('replay selected opens the replay page', true);
  await rw.waitForFunction(() => !document.getElementById('replay').hidden, { timeout: 30000 });
  await axe(rw, 'replay page (a real replay)');
  // A guarded replay (the canary) then waits the source's processing window:
  // Stop ends the wait (exit 130); what was sent stays sent.
  // Until it is done or waits (a canary's window, the final check).
  let waiting = false;
  for (let i = 0; i < 60; i++) {
    const r = await rw.evaluate(async () => {
      const id = decodeURIComponent(location.hash.split('/')[2]);
      return (await fetch('/api/replays/' + encodeURIComponent(id), { headers: { Authorization: 'Bearer ' + sessionStorage.getItem('dlq-token') } })).json();
    });
    if (r.done) break;
    if (['waiting', 'final-check', 'paused'].includes(r.phase)) { waiting = true; break; }
    await new Promise((res) => setTimeout(res, 500));
  }
  if (waiting) {
    await rw.waitForSelector('#replay-stop', { visible: true, timeout: 5000 });
    await rw.click('#replay-stop');
  }
  await rw.waitForSelector('#replay-output', { timeout: 60000 });
  const out = await textOf(rw, '#replay-output');
  check('replay reports one message sent', out.includes('sent 1'), out);
  check('replay names the audit record', out.includes('_audit/'), out);
  const phase = await textOf(rw, '#replay-phase');
  check('the replay page says how it ended', /Replay (finished|stopped)/.test(phase), phase);
  // The queue page lists it.
  await rw.goto(cfg.rw_url + '/#/queue/' + q(cfg.archived_queue), { waitUntil: 'domcontentloaded' });
  await rw.waitForSelector('#replays-table tbody tr[data-replay]', { timeout: 20000 });
  check('the queue page lists the replay', (await rw.$$('#replays-table tbody tr[data-replay]')).length === 1);
});

await step('the replay page of a guarded redrive', async () => {
  await checkReplayPage(browser, cfg.rw_url, cfg.token, cfg.archived_queue, check, axe, cfg.screenshots_dir);
});

await step('a failure group: search it, and a dry run of "replay this group" before anything is sent', async () => {
  await rw.goto(cfg.rw_url + '/#/queue/' + q(cfg.archived_queue), { waitUntil: 'domcontentloaded' });
  await rw.waitForSelector('#failure-groups tbody tr[data-group]', { timeout: 20000 });
  const id = await rw.$eval('#failure-groups tbody tr[data-group]', (tr) => tr.dataset.group);
  check('each group has a 12-hex-digit id', /^[0-9a-f]{12}$/.test(id), id);
  const [search] = await rw.$$('#failure-groups tbody tr[data-group] button');
  await search.click();
  await rw.waitForSelector('#results-table tbody tr', { timeout: 20000 });
  check('"Search" fills the group into the search', (await rw.$eval('#search-fingerprint', (e) => e.value)) === id);
  const replayButtons = await rw.$$('#failure-groups tbody tr[data-group] button');
  await replayButtons[1].click();
  await rw.waitForFunction(() => {
    const t = (document.getElementById('replay-group-result') || {}).textContent || '';
    return t.includes('Dry run for group') || t.includes('no archived message to send') || t.includes('failed');
  }, { timeout: 30000 });
  const dry = await textOf(rw, '#replay-group-result');
  if (dry.includes('no archived message to send')) {
    // Every message of the group went back in an earlier step: the dry run says so and offers no send.
    check('the dry run of an already replayed group offers nothing to send', (await rw.$('#replay-group-confirm')) === null, dry);
    return;
  }
  check('the dry run says how many would go where', /Dry run for group [0-9a-f]{12}: \d+ messages? would go back/.test(dry) &&
    (await rw.$$('#replay-group-destinations li')).length > 0 && (await rw.$('#replay-group-confirm')) !== null, dry);
  await axe(rw, 'replay-this-group dry run');
  const buttons = await rw.$$('#replay-group-result button');
  await buttons[1].click(); // Cancel
  await waitText(rw, '#replay-group-result', 'nothing was sent');
  check('cancel sends nothing', true);
  // "Back where it came from": the dry run again, to the origin. These
  // messages came from an SQS source queue, not a Lambda function, an
  // EventBridge target or an SNS subscription: the dry run is refused (400,
  // which Chrome logs as a console error), saying why.
  const errorsBefore = rw.errors.length;
  const radios = await rw.$$('#replay-group-to input[type="radio"]');
  check('the group\'s replay offers the source queue and the origin', radios.length === 2 &&
    (await rw.$eval('#replay-group-to', (f) => f.textContent)).includes('back where it came from'));
  await radios[1].click();
  await rw.waitForFunction(() => {
    const t = (document.getElementById('replay-group-dry-run') || {}).textContent || '';
    return t.includes('would go back where they came from') || t.includes('no archived message to send') || t.includes('Replay failed');
  }, { timeout: 30000 });
  const origin = await textOf(rw, '#replay-group-dry-run');
  check('the origin dry run answers', origin.length > 0, origin);
  console.log('origin dry run: ' + origin);
  const refused = rw.errors.splice(errorsBefore);
  check('the origin dry run of SQS-fed messages is refused, nothing else failed', origin.includes('Replay failed') &&
    refused.length === 1 && refused[0].includes('400'), JSON.stringify([origin, refused]));
  check('the origin choice keeps the focus', await rw.$eval('#replay-group-to input[value="origin"]', (e) => e.checked && document.activeElement === e));
  await axe(rw, 'replay-this-group to the origin');
  // The function field (--function): shown with the origin only; its value
  // goes with the dry run, which runs again when it changes.
  check('the function field shows with the origin, and the refusal points at it',
    await rw.$eval('#replay-group-function-field', (e) => !e.hidden) && origin.includes('with the function field'), origin);
  const isReplay = (r) => r.url().endsWith('/api/replay') && (r.request ? r.request() : r).method() === 'POST';
  const errorsBeforeFunction = rw.errors.length;
  const withFunction = rw.waitForResponse(isReplay, { timeout: 30000 });
  await rw.focus('#replay-group-function');
  await rw.keyboard.type('orders-fn');
  await rw.keyboard.press('Tab');  // the change event
  const fnBody = JSON.parse((await withFunction).request().postData() || '{}');
  check('the dry run carries the function', fnBody.to === 'origin' && fnBody.function === 'orders-fn' && fnBody.dry_run === true,
    JSON.stringify(fnBody));
  await rw.waitForFunction(() => {
    const t = (document.getElementById('replay-group-dry-run') || {}).textContent || '';
    return t.length > 0 && !t.startsWith('Dry run: what');
  }, { timeout: 30000 });
  const fnDry = await textOf(rw, '#replay-group-dry-run');
  console.log('origin dry run with a function: ' + fnDry);
  check('the dry run with a function answers about that function', fnDry.includes('orders-fn'), fnDry);
  const toSource = rw.waitForResponse(isReplay, { timeout: 30000 });
  await rw.click('#replay-group-to input[value="source"]');
  const sourceBody = JSON.parse((await toSource).request().postData() || '{}');
  check('the source queue hides the function field and does not send it',
    await rw.$eval('#replay-group-function-field', (e) => e.hidden) && sourceBody.to === 'source' && !('function' in sourceBody),
    JSON.stringify(sourceBody));
  const functionErrors = rw.errors.splice(errorsBeforeFunction);
  check('the function\'s dry run failed, if at all, as a 400', functionErrors.every((e) => e.includes('400')), JSON.stringify(functionErrors));
});

await step('archive now empties the queue', async () => {
  await rw.goto(cfg.rw_url + '/#/queue/' + q(cfg.archive_now_queue), { waitUntil: 'domcontentloaded' });
  await rw.waitForSelector('#archive-now', { timeout: 15000 });
  await waitText(rw, '#q-messages', 'visible');
  const before = await textOf(rw, '#q-messages');
  check('queue holds messages before', !before.startsWith('0 visible'), before);
  await rw.click('#archive-now');
  await waitText(rw, '#action-result', 'requested', 15000);
  await waitText(rw, '#q-messages', '0 visible, 0 in flight', 60000);
  check('the open page shows the queue empty', true);
  await waitText(rw, '#objects', 'dlq-archive/', 20000);
});

check('no console errors (with token)', rw.errors.length === 0, JSON.stringify(rw.errors));
check('no console warnings (with token)', rw.warnings.length === 0, JSON.stringify(rw.warnings));
check('no request to another host (with token)', rw.foreign.length === 0, JSON.stringify(rw.foreign));

await browser.close();
console.log(failed === 0 ? 'all checks passed' : failed + ' check(s) failed');
process.exit(failed === 0 ? 0 : 1);
