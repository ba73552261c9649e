// The overview's windowed table at 1,000 queues (web/app.js, "Overview"):
// bench/dashboard/synthetic.mjs answers /api/overview with 1,000 queues and
// serves the page a daemon embeds (assetsFrom), so this checks the embedded
// page without 1,000 queues on a stand-in. Used by dashboard.mjs; standalone:
//   node overview_window.mjs MODULES CHROMIUM [DAEMON_URL]  (without a daemon: web/)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSynthetic } from '../../bench/dashboard/synthetic.mjs';

const QUEUES = 1000;

// check(name, ok, why) records a check; axe(page, name) runs axe-core.
export async function checkWindowedOverview(browser, daemonUrl, check, axe) {
  const server = await startSynthetic({ queues: QUEUES, ...(daemonUrl ? { assetsFrom: daemonUrl } : {}) });
  const page = await browser.newPage();
  const errors = [];
  const warnings = []; // Chrome's "preloaded but not used" among them
  let overviewRequests = 0;
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
    if (m.type() === 'warn') warnings.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/overview') overviewRequests++; });
  try {
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(server.url + '/', { waitUntil: 'domcontentloaded' });
    await page.waitForFunction((n) => (document.getElementById('shown') || {}).textContent === `${n} of ${n} queues shown`, { timeout: 20000 }, QUEUES);
    // synthetic.mjs polls every 10 s: one request so far, the preload's, and the page rendered its answer.
    const initiators = await page.evaluate(() => performance.getEntriesByType('resource')
      .filter((e) => new URL(e.name).pathname === '/api/overview').map((e) => e.initiatorType));
    check('window: the rows come from the preloaded /api/overview', overviewRequests === 1 && initiators.join() === 'link',
      JSON.stringify({ overviewRequests, initiators }));
    // A poll of the unchanged document: If-None-Match with the preloaded
    // answer's ETag, 304, and the rows in the page stay as they are.
    const answers = [];
    page.on('response', (r) => {
      if (new URL(r.url()).pathname === '/api/overview') answers.push({ status: r.status(), asked: r.request().headers()['if-none-match'] || null });
    });
    await page.evaluate(() => { document.querySelector('#queues-body tr[data-queue]').__beforePoll = true; });
    await page.evaluate(() => poll()); // eslint-disable-line no-undef
    const kept = await page.evaluate(() => document.querySelector('#queues-body tr[data-queue]').__beforePoll === true);
    check('window: a poll of the unchanged overview gets 304 and keeps the rows', answers.length === 1 && answers[0].status === 304 &&
      answers[0].asked !== null && kept, JSON.stringify({ answers, kept }));
    const frame = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    // What the page shows: rendered rows with their aria-rowindex, and where they are.
    const rendered = () => page.evaluate(() => {
      const body = document.getElementById('queues-body');
      const top = body.getBoundingClientRect().top;
      return [...body.querySelectorAll('tr[data-queue]')].map((tr) => {
        const r = tr.getBoundingClientRect();
        return { queue: tr.dataset.queue, index: Number(tr.getAttribute('aria-rowindex')), top: r.top - top, height: r.height, viewTop: r.top, viewBottom: r.bottom };
      });
    });
    const byName = server.doc.queues.map((q) => q.queue).sort();

    await frame();
    let rows = await rendered();
    check('window: aria-rowcount counts every queue and the header', (await page.$eval('#queues', (t) => t.getAttribute('aria-rowcount'))) === String(QUEUES + 1));
    check('window: only the rows near the view are in the page', rows.length > 10 && rows.length < 100, String(rows.length));
    check('window: the first row is row 2', rows[0].index === 2, JSON.stringify(rows[0]));
    const px = rows[0].height;
    check('window: every row is as tall as the first', rows.every((r) => Math.abs(r.height - px) < 0.5), JSON.stringify(rows.map((r) => r.height)));

    // Sort by name, both ways: the rows in the page are the first of the whole sorted list.
    await page.click('th[data-key="queue"] button');
    await frame();
    rows = await rendered();
    check('window: sort by queue ascending', rows.map((r) => r.queue).join() === byName.slice(0, rows.length).join(), rows.map((r) => r.queue).slice(0, 3).join());
    await page.click('th[data-key="queue"] button');
    await frame();
    rows = await rendered();
    const desc = [...byName].reverse();
    check('window: sort by queue descending', rows.map((r) => r.queue).join() === desc.slice(0, rows.length).join() &&
      (await page.$eval('th[data-key="queue"]', (e) => e.getAttribute('aria-sort'))) === 'descending', rows.map((r) => r.queue).slice(0, 3).join());

    // Scroll to the bottom: the last queue is in view, at the place its index gives it.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await frame();
    rows = await rendered();
    const last = rows[rows.length - 1];
    check('window: scrolling to the bottom shows the last queue', last.queue === desc[QUEUES - 1] && last.index === QUEUES + 1 &&
      last.viewBottom <= 900 && last.viewTop >= 0, JSON.stringify(last));
    check('window: still only the rows near the view', rows.length < 100, String(rows.length));
    check('window: rows sit where their index puts them', rows.every((r) => Math.abs(r.top - (r.index - 2) * px) < 1.5),
      JSON.stringify(rows.filter((r) => Math.abs(r.top - (r.index - 2) * px) >= 1.5).slice(0, 3)));
    check('window: rows match the sorted list at the bottom', rows.every((r) => desc[r.index - 2] === r.queue));
    await axe(page, 'overview windowed at 1,000 queues (scrolled)');

    // Scroll to the middle.
    await page.evaluate((p) => {
      const body = document.getElementById('queues-body');
      window.scrollTo(0, body.getBoundingClientRect().top + window.scrollY + 500 * p);
    }, px);
    await frame();
    rows = await rendered();
    const atTop = rows.find((r) => r.viewTop >= -1);
    check('window: the middle of the list shows row 500', atTop && Math.abs(atTop.index - 502) <= 1 && desc[atTop.index - 2] === atTop.queue, JSON.stringify(atTop));

    // The filter searches every queue, also those far outside the window.
    const target = byName[QUEUES / 2];
    await page.evaluate(() => window.scrollTo(0, 0));
    await frame();
    check('window: the target is not in the page before filtering', !(await page.$(`#queues-body tr[data-queue="${target}"]`)));
    await page.click('#filter');
    await page.keyboard.type(target);
    await frame();
    rows = await rendered();
    check('window: the filter finds a queue outside the window', rows.length === 1 && rows[0].queue === target && rows[0].index === 2 &&
      (await page.$eval('#shown', (e) => e.textContent)) === `1 of ${QUEUES} queues shown`, JSON.stringify(rows));
    await page.click('#filter', { count: 3 });
    await page.keyboard.press('Backspace');
    await frame();
    check('window: clearing the filter shows every queue again', (await page.$eval('#shown', (e) => e.textContent)) === `${QUEUES} of ${QUEUES} queues shown`);

    // Tab walks past the rows first in the page: each focus scrolls, the window follows.
    rows = await rendered();
    const windowEnd = rows[rows.length - 1].index;
    await page.focus(`#queues-body tr[data-queue="${rows[rows.length - 1].queue}"] a`);
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press('Tab');
      await frame();
    }
    const focused = await page.evaluate(() => {
      const tr = document.activeElement.closest('#queues-body tr');
      return tr ? { queue: tr.dataset.queue, index: Number(tr.getAttribute('aria-rowindex')) } : { tag: document.activeElement.tagName };
    });
    check('window: Tab reaches rows beyond the first window', focused.index === windowEnd + 30 && desc[focused.index - 2] === focused.queue,
      JSON.stringify({ windowEnd, focused }));

    // A new document (a poll) rebuilds the rows: the focused row keeps the focus.
    await page.evaluate(() => { state.overview = JSON.parse(JSON.stringify(state.overview)); renderOverviewLive(true); }); // eslint-disable-line no-undef
    const after = await page.evaluate(() => {
      const tr = document.activeElement.closest('#queues-body tr');
      return tr ? tr.dataset.queue : document.activeElement.tagName;
    });
    check('window: a live update keeps the focus on its row', after === focused.queue, after);
    check('window: no console errors', errors.length === 0, JSON.stringify(errors));
    check('window: no console warnings', warnings.length === 0, JSON.stringify(warnings));
  } finally {
    await page.close();
    server.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [modules, chromium, daemonUrl] = process.argv.slice(2);
  const require = createRequire(path.join(modules, 'noop.js'));
  const puppeteer = require('puppeteer-core');
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  let failed = 0;
  const check = (name, ok, why) => { console.log(ok ? 'ok ' + name : 'FAIL ' + name + ': ' + (why || '')); if (!ok) failed++; };
  const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  const axe = async (page, name) => {
    await page.evaluate(axeSource);
    const v = await page.evaluate(async () => (await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })) // eslint-disable-line no-undef
      .violations.map((x) => ({ id: x.id, impact: x.impact })));
    check('axe ' + name, !v.some((x) => x.impact === 'serious' || x.impact === 'critical'), JSON.stringify(v));
  };
  await checkWindowedOverview(browser, daemonUrl, check, axe);
  await browser.close();
  process.exit(failed ? 1 : 0);
}
