// browser_check.mjs — loads an `ecocompute report` HTML file in headless Chromium through the
// DevTools protocol (over --remote-debugging-pipe: no port, no npm package) and fails on any
// console error, uncaught exception, network request other than the file itself, or a view that
// renders nothing. Saves a PNG screenshot of every view.
//
// usage: node browser_check.mjs --chromium PATH --out DIR --name NAME [--width W --height H]
//                               [--views a,b] [--max-height PX] REPORT.html
// exit 0 ok, 1 a check failed (each failure on its own line on stderr), 2 usage.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = { chromium: '/usr/bin/chromium', out: '.', name: 'report', width: 1366, height: 768,
              'max-height': 6000,
              views: null };
let file = null;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a.startsWith('--') && i + 1 < args.length) opt[a.slice(2)] = args[++i];
  else if (!a.startsWith('--')) file = a;
  else { console.error(`browser_check: ${a} needs a value`); process.exit(2); }
}
if (!file) { console.error('browser_check: name the report file'); process.exit(2); }
const url = pathToFileURL(realpathSync(file)).href;
const failures = [];
const fail = (msg) => { failures.push(msg); console.error(`FAIL ${opt.name}: ${msg}`); };

const profile = mkdtempSync(join(tmpdir(), 'ec-chromium-'));
const browser = spawn(opt.chromium, [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
  '--disable-extensions', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-default-apps', '--mute-audio', '--hide-scrollbars',
  '--disable-dev-shm-usage',
  `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderrTail = '';
browser.stderr.on('data', (d) => { stderrTail = (stderrTail + d).slice(-4000); });

// The whole check is bounded: a hung browser fails the test instead of hanging it.
const watchdog = setTimeout(() => {
  fail('timed out after 90 s');
  finish();
}, 90000);

const toBrowser = browser.stdio[3], fromBrowser = browser.stdio[4];
let nextId = 1, buffered = Buffer.alloc(0);
const pending = new Map();
const listeners = [];
fromBrowser.on('data', (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  let nul;
  while ((nul = buffered.indexOf(0)) >= 0) {
    const msg = JSON.parse(buffered.subarray(0, nul).toString('utf8'));
    buffered = buffered.subarray(nul + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${msg.error.message} (${msg.error.code})`));
      else resolve(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  toBrowser.write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let finished = false;
function finish() {
  if (finished) return;
  finished = true;
  clearTimeout(watchdog);
  try { browser.kill('SIGKILL'); } catch { /* already gone */ }
  try { rmSync(profile, { recursive: true, force: true }); } catch { /* best effort */ }
  if (failures.length) console.error(`browser_check ${opt.name}: ${failures.length} failure(s)`);
  else console.log(`browser_check ${opt.name}: ok`);
  process.exit(failures.length ? 1 : 0);
}

async function main() {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId: s } = await send('Target.attachToTarget', { targetId, flatten: true });
  listeners.push((m) => {
    if (m.sessionId !== s) return;
    if (m.method === 'Runtime.exceptionThrown')
      fail(`uncaught exception: ${m.params.exceptionDetails.exception?.description ||
                                   m.params.exceptionDetails.text}`);
    else if (m.method === 'Runtime.consoleAPICalled' &&
             (m.params.type === 'error' || m.params.type === 'assert'))
      fail(`console.${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description).join(' ')}`);
    else if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error')
      fail(`browser log error: ${m.params.entry.text} ${m.params.entry.url || ''}`);
    else if (m.method === 'Network.requestWillBeSent' && m.params.request.url !== url)
      fail(`network request: ${m.params.request.url}`);
  });
  for (const d of ['Runtime', 'Log', 'Network', 'Page'])
    await send(`${d}.enable`, {}, s);
  await send('Emulation.setDeviceMetricsOverride', { width: +opt.width, height: +opt.height,
                                                     deviceScaleFactor: 1, mobile: false }, s);
  const loaded = new Promise((resolve) => listeners.push((m) => {
    if (m.sessionId === s && m.method === 'Page.loadEventFired') resolve();
  }));
  await send('Page.navigate', { url }, s);
  await loaded;
  await sleep(200);
  const evaluate = async (expr) => {
    const r = await send('Runtime.evaluate', { expression: expr, returnByValue: true }, s);
    if (r.exceptionDetails) throw new Error(`evaluating: ${r.exceptionDetails.text}`);
    return r.result.value;
  };
  const marker = await evaluate(
    `document.querySelector('meta[name=generator]')?.content || ''`);
  if (!marker.startsWith('ecocompute report ')) fail(`no generator marker (got '${marker}')`);
  const ids = await evaluate(`[...document.querySelectorAll('section.view')].map(v => v.id)`);
  if (ids.length !== 8) fail(`expected 8 views, found ${ids.length}`);
  const only = opt.views ? opt.views.split(',') : null;
  for (const id of ids) {
    await evaluate(`location.hash = '#${id}'`);
    await sleep(100);
    await evaluate('window.scrollTo(0, 0)');
    const v = await evaluate(`(() => {
      const s = document.getElementById('${id}');
      const r = s.getBoundingClientRect();
      const empty = s.querySelector('.empty');
      const shapes = s.querySelectorAll('svg circle, svg rect:not(.plot), svg path').length;
      const rows = [...s.querySelectorAll('table tbody tr')].length;
      const others = [...document.querySelectorAll('section.view')].filter(o => o !== s && !o.hidden).length;
      return { hidden: s.hidden, height: r.height, width: r.width, shapes, rows,
               empty: empty ? empty.textContent.trim() : '', others,
               docHeight: document.documentElement.scrollHeight,
               docWidth: document.documentElement.scrollWidth };
    })()`);
    const what = `${id}: ${v.shapes} chart shapes, ${v.rows} table rows` +
                 (v.empty ? `, empty: "${v.empty.slice(0, 80)}..."` : '');
    console.log(`${opt.name} ${what}`);
    if (v.hidden || v.others) fail(`${id}: the tab does not show exactly this view`);
    if (v.height < 60) fail(`${id}: renders nothing (height ${v.height}px)`);
    if (!v.shapes && !v.rows && v.empty.length < 30)
      fail(`${id}: renders nothing (no chart, no table row, no reason why it is empty)`);
    if (v.docWidth > +opt.width + 2) fail(`${id}: page is ${v.docWidth}px wide, wider than the ${opt.width}px screen`);
    if (!only || only.includes(id.replace('view-', ''))) {
      const h = Math.min(v.docHeight, +opt['max-height']);
      const shot = await send('Page.captureScreenshot', {
        format: 'png', captureBeyondViewport: true,
        clip: { x: 0, y: 0, width: +opt.width, height: h, scale: 1 } }, s);
      writeFileSync(join(opt.out, `${opt.name}-${id.replace('view-', '')}.png`),
                    Buffer.from(shot.data, 'base64'));
    }
  }
  // Interactions: the runs search filters, the compare table shows the picked configurations.
  const runs = await evaluate(`(() => {
    location.hash = '#view-runs';
    const q = document.getElementById('runs-search');
    if (!q) return null;
    const before = document.querySelectorAll('#runs-table tbody tr').length;
    q.value = 'no-such-run-zzz'; q.dispatchEvent(new Event('input'));
    const none = document.querySelectorAll('#runs-table tbody tr').length;
    const msg = document.getElementById('runs-count').textContent;
    q.value = ''; q.dispatchEvent(new Event('input'));
    const th = document.querySelector('#runs-table thead th:nth-child(12)');
    th.click(); th.click();
    return { before, none, msg, after: document.querySelectorAll('#runs-table tbody tr').length };
  })()`);
  if (runs) {
    if (runs.before < 1 || runs.none !== 0 || runs.after !== runs.before || !/no run/.test(runs.msg))
      fail(`runs search does not filter: ${JSON.stringify(runs)}`);
  }
  const cmp = await evaluate(`(() => {
    const out = document.getElementById('compare-out');
    if (!out) return null;
    return document.querySelectorAll('#compare-out table thead th').length;
  })()`);
  if (cmp !== null && cmp < 3) fail(`compare shows ${cmp} header cells, expected metric + 2 configurations`);
  // Print: every view is laid out, the controls are not.
  await send('Emulation.setEmulatedMedia', { media: 'print' }, s);
  const print = await evaluate(`(() => ({
    shown: [...document.querySelectorAll('section.view')].filter(v => getComputedStyle(v).display !== 'none').length,
    nav: getComputedStyle(document.querySelector('nav')).display }))()`);
  if (print.shown !== ids.length || print.nav !== 'none')
    fail(`print stylesheet: ${print.shown} of ${ids.length} views shown, nav display ${print.nav}`);
  await sleep(100);
}

browser.on('exit', (code) => {
  if (!finished) { fail(`chromium exited (${code}): ${stderrTail.slice(-500)}`); finish(); }
});
main().then(finish, (e) => { fail(`protocol: ${e.message}`); finish(); });
