// A receiver fails in BLOCK_ON_ERROR mode: the lane shows the group held by
// the failing job; the cancel button unblocks it and the held jobs go out.
import { scenario, signIn, env, check, postEvent, setReceiver, shot, until, api } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const type = env('HOOKLANE_UI_BLOCK_TYPE');
const subId = env('HOOKLANE_UI_BLOCK_SUB_ID');
const recvPath = env('HOOKLANE_UI_BLOCK_PATH');

const lane = (page, group) => page.locator(`.lane[data-group="payments:${group}"]`);

scenario('blocked lane', async (page) => {
  await setReceiver(recvPath, 200);
  // Healthy groups first, so the view has traffic to show.
  for (let i = 0; i < 16; i++) await postEvent(admin, type, { amount: i }, { messagegroup: 'customer:' + (200 + (i % 5)) });
  await signIn(page, admin, 'admin');
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/lanes/' + subId);
  await until(async () => (await page.locator('.job-chip[data-status=COMPLETED]').count()) === 16, 'the 16 healthy jobs are not all COMPLETED in the lanes');

  // The receiver fails: the head job of customer:777 ends in ERROR and
  // holds the two jobs behind it.
  await setReceiver(recvPath, 500);
  const head = await postEvent(admin, type, { amount: 1 }, { messagegroup: 'customer:777' });
  const headJob = head.dispatchJobs[0].id;
  await until(async () => (await api('GET', '/api/dispatch-jobs/' + headJob, undefined, admin)).status === 'ERROR', 'the failing job did not reach ERROR');
  await setReceiver(recvPath, 200);
  const held = [];
  for (let i = 0; i < 2; i++) held.push((await postEvent(admin, type, { amount: 2 + i }, { messagegroup: 'customer:777' })).dispatchJobs[0].id);

  const blocked = lane(page, 'customer:777');
  await until(async () => (await blocked.getAttribute('data-blocked')) === 'true', 'the lane of customer:777 is not marked blocked');
  check(await page.locator('.lane[data-blocked=true]').count() === 1, 'other lanes are marked blocked');
  check(await page.locator('.lane').first().getAttribute('data-group') === 'payments:customer:777', 'the blocked lane is not listed first');
  check((await blocked.locator('.lane-alert').textContent()).includes('500'), 'the lane does not show the failing answer');
  check(await blocked.locator(`.lane-alert a[href="#/jobs/${headJob}"]`).count() === 1, 'the lane does not link the failing job');
  check((await page.locator('#blocked-count .sum-num').textContent()) === '1', 'the summary does not count one blocked group');
  for (const id of held) {
    const j = await api('GET', '/api/dispatch-jobs/' + id, undefined, admin);
    check(j.status !== 'COMPLETED', `held job ${id} was delivered past the failing one`);
  }
  await shot(page, 'blocked');

  await blocked.locator('button[data-action=cancel]').click();
  await until(async () => (await blocked.getAttribute('data-blocked')) === 'false', 'the lane is still blocked after the cancel');
  await until(async () => (await blocked.locator('.job-chip[data-status=COMPLETED]').count()) === 2, 'the held jobs did not reach COMPLETED in the lane');
  check(await blocked.locator(`.job-chip[data-job="${headJob}"][data-status=CANCELLED]`).count() === 1, 'the failing job is not shown CANCELLED');
  for (const id of held) {
    await until(async () => (await api('GET', '/api/dispatch-jobs/' + id, undefined, admin)).status === 'COMPLETED', `held job ${id} did not complete`);
  }
  await shot(page);
});
