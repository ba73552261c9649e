// Dashboard figures (bench/dashboard/README.md): the overview's first render
// in headless Chromium and, against a daemon, the daemon's CPU over a window
// without the page and one with a page open.
//
// First render = navigation start (the page's performance.timeOrigin) to the
// end of the first frame whose rendering included the overview's rows: a
// script injected before the page's own (so it works for any version of
// web/app.js) checks in every requestAnimationFrame callback whether the table
// shows rows and "N of N queues shown"; the frame in which that first holds
// runs its style, layout and paint right after those callbacks, and a
// MessageChannel task posted from the callback runs only once that frame is
// done: its performance.now() is the figure. Raster and display by the GPU
// process come after it and are not counted. The page's own marks
// (dlq-overview-*) are reported alongside when present.
//
// The critical path of each load, in ms from navigation start, is printed on
// stderr (one line a load) and kept in the JSON: the document's fetch start,
// response start and end, domInteractive and DOMContentLoaded, and for each
// resource its first request's start, end and initiator (link: the
// stylesheet or the preload; script; fetch: app.js). --trace DIR records a
// Chromium trace per load and prints what the renderer's main thread did
// until the first frame: its tasks by kind, the long ones in order, and their
// total wall and CPU time (the CPU time varies less than the wall time on a
// loaded machine: compare versions with it). Tracing slows the loads down.
//
// Loads: COLD ones each in a fresh browser context (empty cache and storage,
// a new renderer), then WARM ones reloading one page.
//
// The daemon's CPU (--pid): ROUNDS rounds (--cpu-rounds) of a window with no
// page open, then a window with one overview page open (loaded before the
// window starts, closed after it ends), each WINDOW seconds. A window's
// figure is the daemon's utime + stime over it, in ms per second and in ms
// per collection (the collections counted from /metrics at both edges): the
// daemon collects every interval plus the collection's own duration, so a
// 60 s window holds 5 or 6 collections, and that alone moves the ms/s by up
// to a sixth; per collection it does not. Reported: every window, and the
// medians.
//
// Usage:
//   node measure.mjs --url URL --queues N [--pid PID --window S]   (run.sh: a daemon)
//   node measure.mjs --synthetic [--queues N | --overview FILE] [--web DIR]  (synthetic.mjs, seconds)
//   options: --cold 5 --warm 5 --window 60 --cpu-rounds 3 --trace DIR --modules DIR (node_modules with puppeteer-core)
//            --chromium /usr/bin/chromium
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startSynthetic } from './synthetic.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { values: o } = parseArgs({
  options: {
    url: { type: 'string' }, queues: { type: 'string', default: '1000' }, pid: { type: 'string' },
    window: { type: 'string', default: '60' }, 'cpu-rounds': { type: 'string', default: '3' }, synthetic: { type: 'boolean', default: false },
    overview: { type: 'string', default: '' }, trace: { type: 'string', default: '' }, web: { type: 'string' }, cold: { type: 'string', default: '5' }, warm: { type: 'string', default: '5' },
    modules: { type: 'string', default: path.join(root, '.tools/node/node_modules') },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
const require = createRequire(path.join(o.modules, 'noop.js'));
const puppeteer = require('puppeteer-core');

let synthetic = null;
let base = o.url;
let queues = Number(o.queues);
if (o.synthetic) {
  synthetic = await startSynthetic({ queues, overviewFile: o.overview, ...(o.web ? { webDir: o.web } : {}) });
  base = synthetic.url;
  queues = synthetic.queues;
}
if (!base) throw new Error('give --url URL (a daemon) or --synthetic');

const ticks = () => {
  const f = readFileSync(`/proc/${o.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime, clock ticks (100/s)
};
// The daemon's collections so far (its /metrics).
const collections = async () => {
  const text = await (await fetch(base + '/metrics')).text();
  const m = text.match(/^dlq_archive_collection_duration_seconds_count (\d+)/m);
  return m ? Number(m[1]) : NaN;
};
const cpuOver = async (seconds) => {
  const c0 = await collections();
  const t0 = ticks();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const ms = (ticks() - t0) * 10; // clock ticks are 10 ms
  const n = (await collections()) - c0;
  return { ms_per_s: Math.round((ms / seconds) * 100) / 100, collections: n, ms_per_collection: n > 0 ? Math.round((ms / n) * 10) / 10 : null };
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null;
};

// Runs in the page before its scripts (see the header).
function firstFrameProbe(want) {
  const check = () => {
    const shown = document.getElementById('shown');
    const row = document.querySelector('#queues-body tr[data-queue]');
    if (row && shown && shown.textContent.startsWith(`${want} of ${want} `)) {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => {
        // After the frame layout is clean: reading it forces nothing.
        const height = row.getBoundingClientRect().height;
        window.__firstFrame = { ms: performance.now(), rowHeight: height, rowsInDom: document.querySelectorAll('#queues-body tr[data-queue]').length };
      };
      ch.port2.postMessage(0);
      return;
    }
    requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}

async function load(page, i) {
  await page.evaluateOnNewDocument(firstFrameProbe, queues);
  const trace = o.trace ? path.join(o.trace, i + '.json') : '';
  if (trace) await page.tracing.start({ path: trace, categories: ['devtools.timeline', 'v8.execute', 'blink.user_timing', 'loading', 'disabled-by-default-devtools.timeline'] });
  await page.goto(base + '/?load=' + i, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => window.__firstFrame, { timeout: 60000, polling: 50 });
  if (trace) {
    await page.tracing.stop();
    console.error(summarizeTrace(trace));
  }
  return page.evaluate(() => {
    const r = (x) => Math.round(x * 10) / 10;
    // The page's marks, and x-* ones: a copy of web/app.js given marks for a
    // finer breakdown (--web DIR) reports them too. The first of each name.
    const marks = {};
    for (const m of performance.getEntriesByType('mark')) if ((m.name.startsWith('dlq-overview-') || m.name.startsWith('x-')) && !(m.name in marks)) marks[m.name] = r(m.startTime);
    const nav = performance.getEntriesByType('navigation')[0];
    // The critical path: the document, then each resource's first request
    // (start = fetchStart, the request leaving; end = responseEnd) and who
    // asked for it (initiator: link = the stylesheet or the preload, fetch = app.js).
    const resources = {};
    for (const e of performance.getEntriesByType('resource')) {
      const name = new URL(e.name).pathname;
      if (resources[name]) continue;
      resources[name] = { start: r(e.fetchStart), connect_start: r(e.connectStart), connect_end: r(e.connectEnd), request_start: r(e.requestStart),
        response_start: r(e.responseStart), end: r(e.responseEnd), initiator: e.initiatorType,
        bytes: e.encodedBodySize };
    }
    return { first_frame_ms: Math.round(window.__firstFrame.ms), row_height_px: window.__firstFrame.rowHeight,
      rows_in_dom: window.__firstFrame.rowsInDom, dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd),
      document: { fetch_start: r(nav.fetchStart), response_start: r(nav.responseStart), response_end: r(nav.responseEnd),
        dom_interactive: r(nav.domInteractive), dcl_start: r(nav.domContentLoadedEventStart), dcl_end: r(nav.domContentLoadedEventEnd),
        bytes: nav.encodedBodySize },
      resources, marks };
  });
}

// --trace DIR: what the renderer's main thread did from navigation start to
// the first frame, by top-level task kind (ms) and in order (tasks over 4 ms).
const traceTotals = [];
function summarizeTrace(file) {
  const events = JSON.parse(readFileSync(file, 'utf8')).traceEvents;
  const mainTids = new Set(events.filter((e) => e.name === 'thread_name' && e.args.name === 'CrRendererMain').map((e) => e.pid + ':' + e.tid));
  const nav = events.find((e) => e.name === 'navigationStart' && mainTids.has(e.pid + ':' + e.tid) && e.args.data && e.args.data.isLoadingMainFrame);
  if (!nav) return 'trace: no navigationStart';
  const pidTid = nav.pid + ':' + nav.tid;
  const on = events.filter((e) => e.pid + ':' + e.tid === pidTid && e.ph === 'X' && e.ts >= nav.ts).sort((a, b) => a.ts - b.ts);
  const marks = events.filter((e) => e.name === 'dlq-overview-frame');
  const stop = marks.length ? marks[0].ts : Infinity;
  const top = on.filter((e) => e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask');
  const lines = [];
  const kinds = {};
  let wall = 0, cpu = 0;
  for (const t of top) {
    if (t.ts > stop) break;
    wall += t.dur / 1000;
    cpu += (t.tdur || 0) / 1000;
    // The biggest child names the task.
    const kids = on.filter((e) => e !== t && e.ts >= t.ts && e.ts + (e.dur || 0) <= t.ts + t.dur && e.name !== 'RunTask');
    const names = {};
    for (const k of kids) names[k.name] = (names[k.name] || 0) + k.dur;
    const main = Object.entries(names).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([n, d]) => `${n} ${(d / 1000).toFixed(1)}`).join(', ');
    const key = Object.keys(names).length ? Object.entries(names).sort((a, b) => b[1] - a[1])[0][0] : '(other)';
    kinds[key] = (kinds[key] || 0) + t.dur / 1000;
    if (t.dur > 4000) lines.push(`  ${((t.ts - nav.ts) / 1000).toFixed(1)} +${(t.dur / 1000).toFixed(1)} ms: ${main}`);
  }
  const sum = Object.entries(kinds).sort((a, b) => b[1] - a[1]).map(([n, d]) => `${n} ${d.toFixed(1)}`).join(', ');
  traceTotals.push({ wall, cpu });
  return `trace ${path.basename(file)}: main thread until the first frame: ${wall.toFixed(1)} ms in tasks, ${cpu.toFixed(1)} ms CPU; ` +
    `by task kind (ms): ${sum}\n${lines.join('\n')}`;
}

// One line per load on stderr: the critical path in ms from navigation start
// (a resource: fetch start - request sent - response start - response end).
function describe(kind, l) {
  const d = l.document;
  const res = Object.entries(l.resources).map(([n, e]) => `${n} ${e.start}-${e.request_start}-${e.response_start}-${e.end}${e.initiator === 'fetch' ? '' : ' (' + e.initiator + ')'}`).join(', ');
  const marks = Object.entries(l.marks).map(([n, t]) => `${n.replace('dlq-overview-', '')} ${t}`).join(', ');
  console.error(`${kind}: frame ${l.first_frame_ms} | doc ${d.fetch_start}-${d.response_start}-${d.response_end}, interactive ${d.dom_interactive}, ` +
    `DCL ${d.dcl_start}-${d.dcl_end} | ${res} | ${marks}`);
}

const browser = await puppeteer.launch({ executablePath: o.chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const cold = [];
for (let i = 0; i < Number(o.cold); i++) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  cold.push(await load(page, 'cold' + i));
  describe('cold' + i, cold[cold.length - 1]);
  await ctx.close();
}
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 900 });
await load(page, 'prime');
const warm = [];
for (let i = 0; i < Number(o.warm); i++) {
  warm.push(await load(page, 'warm' + i));
  describe('warm' + i, warm[warm.length - 1]);
}
await page.close();
// The daemon's CPU: windows without a page and with one, alternately.
const cpu = { without: [], with: [] };
if (o.pid) {
  for (let r = 0; r < Number(o['cpu-rounds']); r++) {
    cpu.without.push(await cpuOver(Number(o.window)));
    const p = await browser.newPage();
    await p.setViewport({ width: 1280, height: 900 });
    await load(p, 'cpu' + r);
    cpu.with.push(await cpuOver(Number(o.window)));
    await p.close();
    console.error(`cpu round ${r}: without ${JSON.stringify(cpu.without[r])}, with ${JSON.stringify(cpu.with[r])}`);
  }
}
const cpuMedian = (ws, k) => (ws.length ? median(ws.map((w) => w[k]).filter((x) => x !== null)) : null);
await browser.close();
if (synthetic) synthetic.close();
const figure = (loads) => ({ first_frame_ms: loads.map((l) => l.first_frame_ms), median_ms: median(loads.map((l) => l.first_frame_ms)) });
console.log(JSON.stringify({
  source: synthetic ? (o.overview ? 'synthetic server, saved overview ' + o.overview : 'synthetic server') : base,
  queues, cold: figure(cold), warm: figure(warm), loads: { cold, warm },
  ...(o.trace ? { main_thread_until_first_frame: traceTotals } : {}), // ms; cold loads, the prime load, warm loads
  // Medians over the windows (each window in daemon_cpu_windows).
  daemon_cpu_ms_per_s_without_page: cpuMedian(cpu.without, 'ms_per_s'), daemon_cpu_ms_per_s_with_page: cpuMedian(cpu.with, 'ms_per_s'),
  daemon_cpu_ms_per_collection_without_page: cpuMedian(cpu.without, 'ms_per_collection'),
  daemon_cpu_ms_per_collection_with_page: cpuMedian(cpu.with, 'ms_per_collection'),
  daemon_cpu_windows: o.pid ? cpu : null, window_s: o.pid ? Number(o.window) : null,
  load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
}, null, 1));
