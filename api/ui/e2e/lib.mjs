// Shared helpers of the dashboard's browser tests: launch Debian's
// Chromium through playwright-core (never a downloaded browser), sign in
// through the key dialog, call the API, wait for visible state, and save a
// screenshot. A scenario exits 0 when every check passed; otherwise it
// prints why, saves a screenshot of the failure and exits 1.
import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** env reads a required environment variable. */
export function env(name, fallback) {
  const v = process.env[name] ?? fallback;
  if (v === undefined || v === '') {
    console.error(`missing environment variable ${name}`);
    process.exit(2);
  }
  return v;
}

export const base = () => env('HOOKLANE_UI_BASE');

function chromiumPath() {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch { /* next */ }
  }
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (existsSync(p)) return p;
  throw new Error('chromium not found: run scripts/install-chromium.sh');
}

/** fail stops the scenario with a message. */
export class Check extends Error {}
export function check(cond, msg) {
  if (!cond) throw new Check(msg);
}

/** api calls the gateway directly (the test's side, not the page's). */
export async function api(method, p, body, key) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers.Authorization = 'Bearer ' + key;
  const resp = await fetch(base() + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!resp.ok) throw new Error(`${method} ${p} answered ${resp.status}: ${text}`);
  return data;
}

/** postEvent posts one structured CloudEvent through the API. */
export async function postEvent(key, type, data, ext = {}) {
  const id = 'e2e-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 10);
  return api('POST', '/api/events', { specversion: '1.0', id, source: '/e2e', type, data, ...ext }, key);
}

/** setReceiver switches the answer of the test receiver for one path. */
export async function setReceiver(p, status, delayMs = 0) {
  const resp = await fetch(env('HOOKLANE_UI_RECEIVER') + '/control?path=' + encodeURIComponent(p) + '&status=' + status + '&delayMs=' + delayMs, { method: 'POST' });
  check(resp.ok, 'the receiver refused the switch: ' + resp.status);
}

/** until polls fn until it returns a truthy value, or fails with msg after ms. */
export async function until(fn, msg, ms = 45000, every = 200) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Check(`${msg} (waited ${ms / 1000} s; last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** signIn opens the dashboard and enters the key in the key dialog. */
export async function signIn(page, key, expectRole) {
  await page.goto(base() + '/ui/');
  await page.locator('#api-key').waitFor({ timeout: 30000 });
  await page.fill('#api-key', key);
  await page.click('#key-form button[type=submit]');
  await page.locator('.who [data-role]').waitFor({ timeout: 30000 });
  const role = await page.locator('.who [data-role]').getAttribute('data-role');
  check(role === expectRole, `signed in with role ${role}, want ${expectRole}`);
}

/** shot saves a screenshot under the scenario's screenshot path. */
export async function shot(page, suffix = '', fullPage = false) {
  const p = env('HOOKLANE_UI_SCREENSHOT');
  const out = suffix ? p.replace(/\.png$/, `-${suffix}.png`) : p;
  await page.screenshot({ path: out, fullPage });
  console.log('screenshot ' + path.resolve(out));
  return out;
}

/**
 * scenario launches one browser, runs fn(page, browser) and exits: 0 when
 * it passed, 1 with the reason and a failure screenshot otherwise.
 */
export async function scenario(name, fn) {
  const started = Date.now();
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const errors = [];
  const newPage = async () => {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
    const page = await ctx.newPage();
    page.setDefaultTimeout(45000);
    page.on('pageerror', (e) => errors.push('page error: ' + e.message));
    // "Failed to load resource" is how Chromium logs every non-2xx answer;
    // the scenarios provoke 401s and 422s on purpose and check the page.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push('console error: ' + m.text());
    });
    return page;
  };
  let page;
  let code = 0;
  const track = async () => { page = await newPage(); return page; };
  try {
    await fn(await track(), track);
    check(errors.length === 0, 'the page logged errors:\n' + errors.join('\n'));
    console.log(`PASS ${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (err) {
    code = 1;
    console.error(`FAIL ${name}: ${err instanceof Check ? err.message : err.stack || err}`);
    if (errors.length) console.error(errors.join('\n'));
    if (page) { try { await shot(page, 'failure'); } catch { /* best effort */ } }
  } finally {
    await browser.close();
  }
  process.exit(code);
}
