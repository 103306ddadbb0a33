// A job fails (the receiver answers 500, one attempt allowed): a viewer's
// key does not see the retry button; an admin retries it from the job
// page once the receiver is back, and the job completes.
import { scenario, signIn, env, check, postEvent, setReceiver, shot, until, api } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const viewer = env('HOOKLANE_UI_VIEWER_KEY');
const type = env('HOOKLANE_UI_RETRY_TYPE');
const recvPath = env('HOOKLANE_UI_RETRY_PATH');

scenario('retry job', async (viewerPage, newPage) => {
  await setReceiver(recvPath, 500);
  const ev = await postEvent(admin, type, { invoice: 'INV-1001', total: 120.5 });
  const id = ev.dispatchJobs[0].id;
  await until(async () => (await api('GET', '/api/dispatch-jobs/' + id, undefined, admin)).status === 'ERROR', 'the job did not reach ERROR');

  // A viewer sees the failed job but no retry or cancel button, and no
  // write actions elsewhere.
  await signIn(viewerPage, viewer, 'viewer');
  await viewerPage.goto(env('HOOKLANE_UI_BASE') + '/ui/#/jobs/' + id);
  await viewerPage.locator('#job-status [data-status=ERROR]').waitFor();
  check(await viewerPage.locator('#job-retry, #job-cancel').count() === 0, 'the viewer sees retry/cancel');
  await viewerPage.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions');
  await viewerPage.locator('#subscriptions-table tbody tr[data-sub]').first().waitFor();
  check(await viewerPage.locator('#new-subscription').count() === 0, 'the viewer sees "New subscription"');

  const page = await newPage();
  await setReceiver(recvPath, 200);
  await signIn(page, admin, 'admin');
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/jobs/' + id);
  await page.locator('#job-status [data-status=ERROR]').waitFor();
  check(await page.locator('#attempts li').count() === 1, 'the timeline does not show the one failed attempt');
  check((await page.locator('#attempts li').first().textContent()).includes('500'), 'the failed attempt does not show its 500');
  await page.click('#job-retry');
  await page.locator('#job-status [data-status=COMPLETED]').waitFor({ timeout: 30000 });
  await until(async () => (await page.locator('#attempts li:not(.audit)').count()) === 2 && (await page.locator('#attempts li.audit').count()) === 1,
    'the timeline does not show two attempts and the operator\'s retry; the API has ' + JSON.stringify((await api('GET', '/api/dispatch-jobs/' + id, undefined, admin)).attempts));
  check((await page.locator('#attempts li').first().textContent()).includes('200'), 'the newest attempt does not show its 200');
  check(await page.locator('#job-retry').count() === 0, 'the retry button is still offered');
  const j = await api('GET', '/api/dispatch-jobs/' + id, undefined, admin);
  check(j.status === 'COMPLETED' && j.attemptCount === 2, 'the API shows ' + j.status + ' after ' + j.attemptCount + ' attempts');
  await shot(page);

  // Bulk redrive: three more fail; the jobs table filtered to ERROR jobs
  // of this subscription retries them all at once.
  await setReceiver(recvPath, 500);
  const more = [];
  for (let i = 0; i < 3; i++) more.push((await postEvent(admin, type, { invoice: 'INV-20' + i, total: 10 })).dispatchJobs[0].id);
  for (const m of more) await until(async () => (await api('GET', '/api/dispatch-jobs/' + m, undefined, admin)).status === 'ERROR', `job ${m} did not reach ERROR`);
  await setReceiver(recvPath, 200);
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/jobs?status=ERROR&subscription=invoices');
  await until(async () => (await page.locator('#jobs-table tbody tr[data-status=ERROR]').count()) === 3, 'the table does not list the 3 ERROR jobs');
  check((await page.locator('#bulk-retry').textContent()).includes('(3)'), 'the bulk button does not count 3 jobs');
  await page.click('#bulk-retry');
  await page.click('#bulk-retry-confirm');
  await until(async () => (await page.locator('#jobs-table tbody tr[data-job]').count()) === 0, 'the ERROR filter still lists jobs after the redrive');
  for (const m of more) await until(async () => (await api('GET', '/api/dispatch-jobs/' + m, undefined, admin)).status === 'COMPLETED', `job ${m} did not complete after the redrive`);
});
