// The stream drops: the dashboard shows it is reconnecting, resumes with
// the Last-Event-ID header, and misses none of the events of the outage.
import { scenario, signIn, env, check, postEvent, shot, until } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const type = env('HOOKLANE_UI_LIVE_TYPE');
const proxy = env('HOOKLANE_UI_BASE');

const stat = (page, k) => page.locator(`[data-stat=${k}] .stat-value`).textContent().then((t) => Number(t.replace(/,/g, '')));
const control = async (what) => {
  const r = await fetch(proxy + '/__proxy/' + what, { method: 'POST' });
  check(r.ok, `proxy ${what} answered ${r.status}`);
  return r.json();
};

scenario('stream resume', async (page) => {
  await signIn(page, admin, 'admin');
  await page.locator('#conn[data-state=live]').waitFor({ timeout: 30000 });
  // Let the replay of the last 15 minutes settle, then count one event.
  const settled = async () => {
    let last = -1;
    return until(async () => {
      const v = (await stat(page, 'accepted')) * 1e6 + (await stat(page, 'completed'));
      const same = v === last;
      last = v;
      return same;
    }, 'the counters never settled', 15000, 700);
  };
  await settled();
  const start = { accepted: await stat(page, 'accepted'), completed: await stat(page, 'completed') };
  await postEvent(admin, type, { amount: 1, currency: 'EUR' });
  await until(async () => (await stat(page, 'accepted')) === start.accepted + 1 && (await stat(page, 'completed')) === start.completed + 1,
    'the event before the drop was not counted once');
  const accepted = start.accepted + 1;
  const before = start.completed + 1;

  // Drop every open stream and refuse new ones (503) until released.
  const dropped = await control('drop');
  check(dropped.closed >= 1, 'the proxy had no open stream to drop');
  await page.locator('#conn[data-state=reconnecting]').waitFor({ timeout: 30000 });
  check((await page.locator('#conn .conn-text').textContent()).startsWith('Reconnecting'), 'no reconnecting indicator');
  check(await page.locator('#conn-banner').isVisible(), 'no reconnecting banner');
  await shot(page, 'reconnecting');

  const n = 4;
  for (let i = 0; i < n; i++) await postEvent(admin, type, { amount: 50 + i, currency: 'USD' });
  // The page cannot see them yet.
  check(await stat(page, 'accepted') === accepted, 'events arrived while the stream was down');

  // Wait for a reconnect attempt to be refused, so the page has truly
  // been cut off, then let it back.
  await until(async () => (await control('log')).refused >= 1, 'the page did not try to reconnect', 30000, 250);
  check((await page.locator('#conn').getAttribute('data-state')) === 'reconnecting', 'the indicator left "reconnecting" while refused');
  const released = await control('release');
  await page.locator('#conn[data-state=live]').waitFor({ timeout: 30000 });
  check(!(await page.locator('#conn-banner').isVisible()), 'the reconnecting banner stays after the stream is back');
  await until(async () => {
    const got = await stat(page, 'accepted');
    if (got !== accepted + n) throw new Error(`accepted shows ${got}; stream ${await page.locator('#conn').getAttribute('data-state')}`);
    return true;
  }, `the accepted counter did not catch up from ${accepted} to ${accepted + n}`);
  await until(async () => (await stat(page, 'completed')) === before + n, `the delivered counter did not catch up from ${before} to ${before + n}`);
  const log = await control('log');
  const resumed = log.lastEventIds.slice(1).filter(Boolean);
  check(released.refused >= 1, 'no reconnect attempt was refused during the outage');
  check(resumed.length >= 1, 'no reconnect sent Last-Event-ID: ' + JSON.stringify(log));
  check(/^[0-9A-HJKMNP-TV-Z]{26}$/.test(resumed[resumed.length - 1]), 'Last-Event-ID is not a stream event id: ' + resumed[resumed.length - 1]);
  await shot(page);
});
