// Dashboard figures against a daemon watching many queues (bench/dashboard/run.sh):
// first render of the overview (navigation to every row in the table) and the
// daemon's CPU over a window without the page, then with one page open.
// Usage: node measure.mjs MODULES CHROMIUM BASE_URL PID QUEUES WINDOW_S
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, chromium, base, pid, queues, windowS] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'noop.js'));
const puppeteer = require('puppeteer-core');
const ticks = () => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime, clock ticks (100/s)
};
const cpuOver = async (seconds) => {
  const t0 = ticks();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return ((ticks() - t0) * 10) / seconds; // CPU ms per second
};

const idle = await cpuOver(Number(windowS));
const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 900 });
const renders = [];
for (let i = 0; i < 3; i++) {
  const t0 = Date.now();
  await page.goto(base + '/?' + i, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction((n) => document.querySelectorAll('#queues-body tr').length >= n, { timeout: 60000, polling: 'raf' }, Number(queues));
  renders.push(Date.now() - t0);
}
const open = await cpuOver(Number(windowS));
await browser.close();
console.log(JSON.stringify({ queues: Number(queues), first_render_ms: renders, daemon_cpu_ms_per_s_without_page: idle, daemon_cpu_ms_per_s_with_page: open, window_s: Number(windowS) }));
