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
// Loads: COLD ones each in a fresh browser context (empty cache and storage,
// a new renderer), then WARM ones reloading one page.
//
// Usage:
//   node measure.mjs --url URL --queues N [--pid PID --window S]   (run.sh: a daemon)
//   node measure.mjs --synthetic [--queues N | --overview FILE] [--web DIR]  (synthetic.mjs, seconds)
//   options: --cold 5 --warm 5 --modules DIR (node_modules with puppeteer-core)
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
    window: { type: 'string', default: '60' }, synthetic: { type: 'boolean', default: false },
    overview: { type: 'string', default: '' }, web: { type: 'string' }, cold: { type: 'string', default: '5' }, warm: { type: 'string', default: '5' },
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
const cpuOver = async (seconds) => {
  const t0 = ticks();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return ((ticks() - t0) * 10) / seconds; // CPU ms per second
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
  await page.goto(base + '/?load=' + i, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => window.__firstFrame, { timeout: 60000, polling: 50 });
  return page.evaluate(() => {
    const marks = {};
    for (const m of performance.getEntriesByType('mark')) if (m.name.startsWith('dlq-overview-')) marks[m.name] = Math.round(m.startTime);
    const nav = performance.getEntriesByType('navigation')[0];
    return { first_frame_ms: Math.round(window.__firstFrame.ms), row_height_px: window.__firstFrame.rowHeight,
      rows_in_dom: window.__firstFrame.rowsInDom, dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd), marks };
  });
}

const idle = o.pid ? await cpuOver(Number(o.window)) : null;
const browser = await puppeteer.launch({ executablePath: o.chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const cold = [];
for (let i = 0; i < Number(o.cold); i++) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  cold.push(await load(page, 'cold' + i));
  await ctx.close();
}
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 900 });
await load(page, 'prime');
const warm = [];
for (let i = 0; i < Number(o.warm); i++) warm.push(await load(page, 'warm' + i));
const open = o.pid ? await cpuOver(Number(o.window)) : null;
await browser.close();
if (synthetic) synthetic.close();
const figure = (loads) => ({ first_frame_ms: loads.map((l) => l.first_frame_ms), median_ms: median(loads.map((l) => l.first_frame_ms)) });
console.log(JSON.stringify({
  source: synthetic ? (o.overview ? 'synthetic server, saved overview ' + o.overview : 'synthetic server') : base,
  queues, cold: figure(cold), warm: figure(warm), loads: { cold, warm },
  daemon_cpu_ms_per_s_without_page: idle, daemon_cpu_ms_per_s_with_page: open, window_s: o.pid ? Number(o.window) : null,
  load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
}, null, 1));
