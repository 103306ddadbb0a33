// Not a check: the README's screenshots, taken after a minute and a half of
// mixed traffic (steady orders, a receiver outage that retries, a slow
// partner pool, and a BLOCK_ON_ERROR group held by a failing job).
import { scenario, signIn, env, postEvent, setReceiver, shot, until, api } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const live = env('HOOKLANE_UI_LIVE_TYPE');
const pay = env('HOOKLANE_UI_BLOCK_TYPE');
const inv = env('HOOKLANE_UI_RETRY_TYPE');
const subId = env('HOOKLANE_UI_BLOCK_SUB_ID');
const seconds = Number(process.env.HOOKLANE_UI_DOCS_SECONDS || 90);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

scenario('docs screenshots', async (page) => {
  const pool = await api('POST', '/api/dispatch-pools', { code: 'partners', name: 'Partner webhooks', concurrency: 8, ratePerSecond: 20, burst: 5 }, admin);
  const subs = await api('GET', '/api/subscriptions', undefined, admin);
  const invoices = subs.items.find((s) => s.code === 'invoices');
  await api('PATCH', '/api/subscriptions/' + invoices.id, { dispatchPoolId: pool.id, retry: { maxAttempts: 5, initialBackoffSeconds: 2, maxBackoffSeconds: 30 } }, admin);
  await setReceiver('/hooks/live', 200, 40);
  await setReceiver('/hooks/payments', 200, 120);
  await setReceiver(env('HOOKLANE_UI_RETRY_PATH'), 200, 1800);

  await signIn(page, admin, 'admin');
  const start = Date.now();
  for (let t = 0; t < seconds; t++) {
    if (t === Math.round(seconds * 0.4)) await setReceiver('/hooks/live', 503, 40);
    if (t === Math.round(seconds * 0.5)) await setReceiver('/hooks/live', 200, 40);
    const n = Math.max(1, Math.round(3 + 2 * Math.sin(t / 9)));
    for (let i = 0; i < n; i++) {
      await postEvent(admin, live, { amount: Math.round(Math.random() * 500), currency: 'EUR' }, { subject: 'order:' + (4000 + Math.floor(Math.random() * 40)) });
    }
    await postEvent(admin, pay, { amount: t }, { messagegroup: 'customer:' + (200 + (t % 6)) });
    for (let i = 0; i < 2; i++) await postEvent(admin, inv, { invoice: 'INV-' + (5000 + 2 * t + i), total: 99.5 });
    const wait = start + (t + 1) * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
  }
  await shot(page, 'overview');

  await setReceiver('/hooks/payments', 500, 120);
  const head = await postEvent(admin, pay, { amount: 1 }, { messagegroup: 'customer:777' });
  await until(async () => (await api('GET', '/api/dispatch-jobs/' + head.dispatchJobs[0].id, undefined, admin)).status === 'ERROR', 'no failing job');
  await setReceiver('/hooks/payments', 200, 120);
  for (let i = 0; i < 3; i++) await postEvent(admin, pay, { amount: 2 + i }, { messagegroup: 'customer:777' });
  for (let i = 0; i < 6; i++) await postEvent(admin, pay, { amount: i }, { messagegroup: 'customer:' + (200 + i) });
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/lanes/' + subId);
  await page.locator('.lane[data-blocked=true]').waitFor();
  await sleep(1500);
  await shot(page, 'lanes');

  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/jobs/' + head.dispatchJobs[0].id);
  await page.locator('#job-cancel').waitFor();
  await shot(page, 'job');
});
