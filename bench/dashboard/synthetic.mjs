// A stand-in for the daemon's dashboard routes, to time the page in seconds
// instead of bench/dashboard/run.sh's six minutes: serves web/ as the daemon
// does (the same Content-Security-Policy, read from src/dashboard/dashboard.cc)
// and a synthetic /api/overview of QUEUES queues shaped like run.sh's fleet
// (bench/monitor's setup: every 20th queue holds 3 messages and is alarmed,
// with a finished archive run), gzipped and answered with an ETag / 304 like
// the daemon's. Not a substitute for run.sh: the final figures come from the
// real daemon.
//
// As a module: startSynthetic({queues, port, overviewFile, webDir}) -> {url, queues, doc, close()}.
// webDir: serve the page from another directory (a copy of an older web/, to
// compare versions). assetsFrom: a daemon's URL; serve the page it embeds
// (with its Content-Security-Policy) instead of web/.
// overviewFile: serve a saved /api/overview answer (run.sh keeps the real
// daemon's as overview.json) instead of the synthetic one.
// Standalone: node synthetic.mjs [QUEUES|OVERVIEW.json] [PORT]  (prints the URL, serves until killed)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function contentSecurityPolicy() {
  const src = readFileSync(path.join(root, 'src/dashboard/dashboard.cc'), 'utf8');
  const m = src.match(/kContentSecurityPolicy =\s*((?:"[^"]*"\s*)+);/);
  if (!m) throw new Error('kContentSecurityPolicy not found in src/dashboard/dashboard.cc');
  return [...m[1].matchAll(/"([^"]*)"/g)].map((x) => x[1]).join('');
}

// The overview document (DaemonView::OverviewJson's shape, src/monitor/daemon_view.h).
export function overviewDocument(queues, now = Date.now()) {
  const prefix = 'dashbench-synthetic-';
  const out = [];
  for (let i = 0; i < queues; i++) {
    const held = i % 20 === 0;
    const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
    out.push({
      group: 'dashbench', queue: `${prefix}q${String(i).padStart(4, '0')}-dlq`, region: 'us-east-1', fifo: false,
      retention_s: 345600, source_retention_s: 0,
      visible: 0, not_visible: 0, delayed: 0,
      nearest_expiry: held ? iso(now + (345600 - 600 - i) * 1000) : null,
      collect_error: false, archived: held ? 3 : 0, running: false, failing: false, error_code: '',
      last_run: held ? { time: iso(now - 120000 - i * 10), archived: 3, ok: true } : null,
      alarms: [{ kind: 'expiry', state: held ? 'ALARM' : 'OK' }, { kind: 'depth', state: 'OK' }],
    });
  }
  return { queues: out, groups: [{ name: 'dashbench', error: false, problem: '' }] };
}

const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

export function startSynthetic({ queues = 1000, port = 0, overviewFile = '', webDir = path.join(root, 'web'), assetsFrom = '' } = {}) {
  const csp = contentSecurityPolicy();
  const doc = overviewFile ? JSON.parse(readFileSync(overviewFile, 'utf8')) : overviewDocument(queues);
  const overview = gzipSync(JSON.stringify(doc));
  const etag = '"' + createHash('sha256').update(overview).digest('hex').slice(0, 32) + '"';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/api/overview') {
      if (req.headers['if-none-match'] === etag) { res.writeHead(304, { ETag: etag }); res.end(); return; }
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ETag: etag, 'Cache-Control': 'no-cache' });
      res.end(overview);
      return;
    }
    if (url.pathname === '/api/dashboard') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ version: 'synthetic', write: false, poll_interval_s: 10 }));
      return;
    }
    const file = url.pathname === '/' || url.pathname === '/index.html' ? 'index.html' : url.pathname.slice(1);
    if (!['index.html', 'app.js', 'app.css'].includes(file)) { res.writeHead(404); res.end('{"error":"not found"}'); return; }
    if (assetsFrom) {
      fetch(`${assetsFrom}/${file === 'index.html' ? '' : file}`).then(async (r) => {
        res.writeHead(r.status, { 'Content-Type': r.headers.get('content-type'), 'Content-Security-Policy': r.headers.get('content-security-policy') || csp,
          'Cache-Control': 'no-cache' });
        res.end(Buffer.from(await r.arrayBuffer()));
      }, (e) => { res.writeHead(502); res.end(String(e)); });
      return;
    }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)], 'Content-Security-Policy': csp, 'Cache-Control': 'no-cache' });
    res.end(readFileSync(path.join(webDir, file)));
  });
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, queues: doc.queues.length, doc, close: () => server.close() }));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2] || '1000';
  const port = Number(process.argv[3] || 0);
  const s = await startSynthetic(/^\d+$/.test(arg) ? { queues: Number(arg), port } : { overviewFile: arg, port });
  console.log(s.url + ' (' + s.queues + ' queues)');
}
