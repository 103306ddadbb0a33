// Post events through the API and watch the overview counters move and
// the jobs reach COMPLETED in the live table, without reloading the page.
import { scenario, signIn, env, check, postEvent, shot, until } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const type = env('HOOKLANE_UI_LIVE_TYPE');
const sub = env('HOOKLANE_UI_LIVE_SUB');

const stat = (page, k) => page.locator(`[data-stat=${k}] .stat-value`).textContent().then((t) => Number(t.replace(/,/g, '')));

scenario('jobs live', async (page) => {
  await signIn(page, admin, 'admin');
  await page.locator('[data-stat=accepted]').waitFor();
  await page.locator('#conn[data-state=live]').waitFor({ timeout: 30000 });
  const before = { accepted: await stat(page, 'accepted'), completed: await stat(page, 'completed') };

  const n = 12;
  for (let i = 0; i < n; i++) {
    await postEvent(admin, type, { amount: 10 + i, currency: 'EUR' }, { subject: 'order:' + (1000 + (i % 4)) });
  }
  await until(async () => (await stat(page, 'accepted')) >= before.accepted + n, `the accepted counter did not move by ${n} from ${before.accepted}`);
  await until(async () => (await stat(page, 'completed')) >= before.completed + n, `the delivered counter did not move by ${n} from ${before.completed}`);
  await until(async () => Number((await page.locator('[data-count-status=COMPLETED] .tile-num').textContent()).replace(/\D/g, '')) >= n,
    'jobs by status does not count the completed jobs');
  const line = await page.locator('polyline[data-series=completed]').getAttribute('points');
  check(line && line.split(' ').length > 10, 'the chart has no line');
  await shot(page, 'overview');

  // The table follows the stream: the jobs posted while it is open appear
  // and reach COMPLETED without a reload.
  await page.click('#nav a[data-nav=jobs]');
  await page.selectOption('select[name=subscription]', sub);
  await page.locator('#jobs-table tbody tr[data-job]').first().waitFor();
  const rowsBefore = await page.locator('#jobs-table tbody tr[data-job]').count();
  check(rowsBefore === n, `the table shows ${rowsBefore} jobs of ${sub}, want ${n}`);
  const marker = await page.evaluate(() => { window.__noReload = true; return true; });
  const m = 5;
  for (let i = 0; i < m; i++) await postEvent(admin, type, { amount: 99, currency: 'USD' }, { subject: 'order:live' });
  await until(async () => (await page.locator('#jobs-table tbody tr[data-status=COMPLETED]').count()) === n + m,
    `the table did not show ${n + m} COMPLETED jobs`);
  check(marker && await page.evaluate(() => window.__noReload === true), 'the page reloaded');
  const statuses = await page.locator('#jobs-table tbody tr[data-job]').evaluateAll((rows) => rows.map((r) => r.dataset.status));
  check(statuses.every((s) => s === 'COMPLETED'), 'not every row is COMPLETED: ' + statuses.join(','));
  await shot(page);
});
