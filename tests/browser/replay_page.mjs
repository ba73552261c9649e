// The replay page (#/replays/ID) of the daemon with the write token, driven
// through a guarded redrive that a synthetic /api/replays/ID plays out
// (request interception): a ramp paused for backlog, then a stop on
// re-failures found in the canary's window. A real guarded redrive on a stand-in
// waits whole processing windows; the page only renders what the API says, so
// the API is what the test plays. Checks the phase in the live region, the
// progress bar, the reason, the re-failures linked to the archived messages,
// Stop, the summary, axe; writes doc/img/replay-guarded.png.
//
// Used by dashboard.mjs: checkReplayPage(browser, base, token, queue, check, axe, shots).

const ID = '20261128T051500Z-99';

function status(queue, over) {
  return Object.assign({
    replay_id: ID, queue, fingerprint: '3f9a0c2b71de', ids: 0,
    started_by: 'dlq-archive dashboard, client 127.0.0.1', started_at: '2026-11-28T05:15:00.000Z', finished_at: null,
    done: false, stop_requested: false, state: 'running', exit_code: null, outcome: null, guarded: true,
    phase: 'canary', reason: '', step: 0, steps: 3, total: 1200, sent: 0, refailed: 0, dlq_receives: 0,
    backlog: 3, backlog_age_s: null, paused_s: 0, refailures: [], output: '', errors: '',
  }, over);
}

function refailure(n, queue) {
  return { message_id: `0b5e2f7c-4a1d-4c8e-9f3b-00000000000${n}`, new_message_id: `7d41c9a2-88e0-4f6b-b1d3-00000000000${n}`,
    destination: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders',
    dlq: `https://sqs.us-east-1.amazonaws.com/123456789012/${queue}`, found_at: '2026-11-28T05:16:4' + n + '.000Z' };
}

export async function checkReplayPage(browser, base, token, queue, check, axe, shots) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  // The script of the redrive: each poll gets the current act.
  const acts = {
    paused: status(queue, { phase: 'paused', step: 2, sent: 300, backlog: 412, backlog_age_s: 95, paused_s: 14.5,
      reason: 'destination backlog over its bound: backlog 412 (bound 400, resume at 200)', dlq_receives: 6 }),
    ramp: status(queue, { phase: 'ramp', step: 2, sent: 340, backlog: 120, paused_s: 31, dlq_receives: 6 }),
    stopped: status(queue, { phase: 'stopped', step: 0, sent: 12, total: 1200, refailed: 3, dlq_receives: 14, backlog: 9,
      reason: '3 of 12 messages sent failed again in the canary (bound 0)', done: true, state: 'finished',
      exit_code: 5, outcome: 'refailures', finished_at: '2026-11-28T05:16:50.000Z',
      refailures: [refailure(1, queue), refailure(2, queue), refailure(3, queue)],
      output: 'replayed to source: selected 1200, sent 12, failed 0, 110.4 s, 0 msg/s (sending: 0.03 s, 400 msg/s)\n' +
        'guard: stopped: canary 12, ramp 5,25,100 %, window 100 s, re-failed 3, 14 DLQ messages received to look, paused 0.0 s\n' +
        'audit: s3://dlq-archive-prod/dlq-archive/_audit/20261128T051500Z-5b0c9e1d2a7f4e31.json',
      errors: 'stopped: 3 of 12 messages sent failed again in the canary (bound 0)\n' +
        'stopped: sent 12, re-failed 3, not sent 1188 (still in the archive)' }),
  };
  let act = 'paused';
  let stops = 0;
  let polls = 0;
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    const p = new URL(r.url()).pathname;
    const json = (body, st = 200) => r.respond({ status: st, contentType: 'application/json', body: JSON.stringify(body) });
    if (p === `/api/replays/${ID}`) {
      polls++;
      json(acts[act]);
    }
    else if (p === `/api/replays/${ID}/stop` && r.method() === 'POST') {
      stops++;
      json({ replay_id: ID, stop_requested: true, note: 'the replay finishes the batch it has in flight, then stops (exit 130)' }, 202);
    } else r.continue();
  });
  await page.goto(base + '/#/replays/' + ID, { waitUntil: 'domcontentloaded' });
  await page.evaluate((t) => sessionStorage.setItem('dlq-token', t), token);
  await page.reload({ waitUntil: 'domcontentloaded' });
  const text = (sel) => page.$eval(sel, (e) => e.textContent).catch(() => '');
  await page.waitForFunction(() => (document.getElementById('replay-phase') || {}).textContent.includes('paused'), { timeout: 15000 });
  check('replay page: the phase is in a live region', await page.$eval('#replay-phase', (e) => e.getAttribute('role') === 'status' &&
    e.getAttribute('aria-live') === 'polite'));
  const bar = await page.$eval('#replay-progress', (e) => [e.max, e.value, e.getAttribute('aria-label')]);
  check('replay page: the progress bar says how many of how many were sent', bar[0] === 1200 && bar[1] === 300 &&
    bar[2] === 'Sent 300 of 1200 messages', JSON.stringify(bar));
  check('replay page: a pause says the backlog and its bound', (await text('#replay-reason')).includes('backlog 412 (bound 400, resume at 200)'),
    await text('#replay-reason'));
  check('replay page: the backlog with its oldest message\'s age', (await text('#replay-backlog')) === '412, oldest 1m 35s',
    await text('#replay-backlog'));
  check('replay page: the ramp step', (await text('#replay-step')) === '2 of 3', await text('#replay-step'));
  const stopShown = () => page.$eval('#replay-stop', (e) => e.getClientRects().length > 0).catch(() => false);
  check('replay page: a Stop button while it runs', await stopShown());
  await axe(page, 'replay page (paused)');

  // The phase moves on: the live region says so once (not at every poll).
  act = 'ramp';
  await page.waitForFunction(() => document.getElementById('replay-phase').textContent.includes('ramp, step 2 of 3'), { timeout: 5000 });
  check('replay page: the live region follows the phase', true);
  await page.click('#replay-stop');
  await page.waitForFunction(() => document.getElementById('replay-stop-result').textContent.includes('Stop requested'), { timeout: 5000 });
  check('replay page: Stop posts to /api/replays/ID/stop once', stops === 1, String(stops));

  // The canary's window found re-failures: stopped, exit 5.
  act = 'stopped';
  await page.waitForSelector('#replay-output', { timeout: 5000 });
  const phase = await text('#replay-phase');
  check('replay page: stopped on re-failures says so', phase.includes('messages failed again (exit 5)'), phase);
  const links = await page.$$eval('#replay-refailures tbody a', (as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
  check('replay page: each message that failed again links to the archived message', links.length === 3 &&
    links.every(([t, href]) => href === `#/queue/${encodeURIComponent(queue)}/message/${t}`), JSON.stringify(links));
  check('replay page: the summary names the audit record', (await text('#replay-output')).includes('_audit/'));
  check('replay page: no Stop once finished', !(await stopShown()));
  await axe(page, 'replay page (stopped on re-failures)');
  await page.screenshot({ path: shots + '/replay-guarded.png', fullPage: true });
  const before = polls;
  await new Promise((r) => setTimeout(r, 2500));
  check('replay page: polling ends once the replay is done', polls === before, `${before} -> ${polls}`);
  check('replay page: no console errors or warnings', errors.length === 0, JSON.stringify(errors));
  await page.close();
}
