// Replay: a subscription created after its events is backfilled from the
// subscription page. The dialog places a refused field's error next to it;
// the Replays card follows the replay to COMPLETED with its counters.
import { scenario, signIn, env, check, postEvent, shot, until, api } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const type = env('HOOKLANE_UI_REPLAY_TYPE');
const recvPath = env('HOOKLANE_UI_REPLAY_PATH');

scenario('replay', async (page) => {
  // History no subscription received.
  for (let i = 0; i < 6; i++) await postEvent(admin, type, { n: i }, { messagegroup: 'account:' + (i % 2) });
  const sub = await api('POST', '/api/subscriptions', {
    code: 'ui-replay', name: 'Late subscriber', eventTypes: [{ eventTypeCode: type }],
    target: env('HOOKLANE_UI_RECEIVER') + recvPath, mode: 'BLOCK_ON_ERROR',
  }, admin);
  await signIn(page, admin, 'admin');
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions/' + sub.id);
  await page.locator('#replay-card').waitFor();
  // The card loads its list after it is drawn: wait for the answer, then read it.
  const first = await until(async () => {
    const text = await page.locator('#replays').textContent();
    return text.includes('Loading') ? '' : text;
  }, 'the Replays card never finished loading');
  check(first.includes('No replay yet'), 'the card lists a replay before any started');

  await page.click('#replay');
  const since = await page.inputValue('#replay-since');
  check(since !== '', 'the dialog proposes no start');
  // A range that ends before it starts is refused next to the field.
  await page.fill('#replay-until', '2000-01-01T00:00');
  await page.click('#replay-start');
  await page.locator('.field-error[data-error-for="/until"]').waitFor();
  await page.fill('#replay-until', '');
  await shot(page, 'dialog');
  await page.click('#replay-start');
  await page.locator('.modal').waitFor({ state: 'detached' });

  const row = page.locator('#replays .replay-row').first();
  await until(async () => (await row.getAttribute('data-status')) === 'COMPLETED', 'the replay did not show COMPLETED');
  check((await row.locator('.replay-created').textContent()) === '6', 'the card does not show 6 jobs created');
  check((await row.locator('.replay-matched').textContent()) === '6', 'the card does not show 6 events matched');
  check(await row.locator('.replay-bar').getAttribute('data-pct') === '100', 'the progress bar is not full');
  const list = await api('GET', `/api/dispatch-jobs?subscription=ui-replay`, undefined, admin);
  check(list.items.length === 6, `the replay created ${list.items.length} jobs, want 6`);
  await until(async () => (await api('GET', `/api/dispatch-jobs?subscription=ui-replay&status=COMPLETED`, undefined, admin)).items.length === 6,
    'the replayed jobs were not all delivered');

  // The same range again creates nothing.
  await page.click('#replay');
  await page.click('#replay-start');
  await until(async () => (await page.locator('#replays .replay-row').count()) === 2 &&
    (await page.locator('#replays .replay-row').first().getAttribute('data-status')) === 'COMPLETED', 'the second replay did not complete');
  check((await page.locator('#replays .replay-row').first().locator('.replay-created').textContent()) === '0', 'a repeated replay created jobs');
  await shot(page);
});
