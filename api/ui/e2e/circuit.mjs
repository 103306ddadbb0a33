// Endpoint health: a subscription's receiver fails; after ten failed
// attempts its circuit opens. The overview lists it under "Failing
// endpoints"; its page shows the open circuit and, in the health card, the
// failed attempts of the last hour; a viewer sees no "Close circuit"
// button; an admin, once the receiver is back, closes the circuit from the
// page and the panel empties.
import { scenario, signIn, env, check, postEvent, setReceiver, shot, until, api } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const viewer = env('HOOKLANE_UI_VIEWER_KEY');
const type = env('HOOKLANE_UI_CIRCUIT_TYPE');
const subID = env('HOOKLANE_UI_CIRCUIT_SUB_ID');
const recvPath = env('HOOKLANE_UI_CIRCUIT_PATH');
const ui = env('HOOKLANE_UI_BASE') + '/ui/';

scenario('circuit', async (page, newPage) => {
  await setReceiver(recvPath, 503);
  for (let i = 0; i < 10; i++) await postEvent(admin, type, { ping: i });
  await until(async () => ['OPEN', 'HALF_OPEN'].includes((await api('GET', '/api/subscriptions/' + subID, undefined, admin)).circuit.state),
    'the circuit did not open after ten failed attempts');

  // The overview's panel lists the failing endpoint.
  await signIn(page, admin, 'admin');
  const row = page.locator('#failing-endpoints tr[data-failing=flaky]');
  await row.waitFor({ timeout: 30000 });
  check(/OPEN/.test(await row.textContent()), 'the panel row does not show the open circuit: ' + await row.textContent());
  await page.locator('#failing-endpoints').scrollIntoViewIfNeeded();
  await shot(page, 'overview');

  // Its page: the circuit badge and the health of the last hour.
  await row.click();
  await page.locator('#sub-circuit [data-status]').waitFor();
  check(/OPEN/.test(await page.locator('#sub-circuit').textContent()), 'the page does not show the open circuit');
  await until(async () => (await page.locator('#health-windows tr[data-window="1h"] td[data-failed]').getAttribute('data-failed')) === '10',
    'the health card does not show the 10 failed attempts of the last hour', 30000);
  check(['OPEN', 'HALF_OPEN'].includes(await page.locator('#health-circuit').getAttribute('data-state')), 'the health card does not show the circuit');
  check((await page.locator('#health-card').textContent()).includes('503'), 'the health card does not show the last error');
  await shot(page);

  // A viewer sees it all, but cannot close the circuit.
  const view = await newPage();
  await signIn(view, viewer, 'viewer');
  await view.goto(ui + '#/subscriptions/' + subID);
  await view.locator('#health-circuit').waitFor();
  check(await view.locator('#close-circuit').count() === 0, 'the viewer sees "Close circuit"');
  await view.close();

  // The receiver is back: the admin closes the circuit from the page.
  await setReceiver(recvPath, 200);
  await page.click('#close-circuit');
  await page.locator('#health-circuit[data-state=CLOSED]').waitFor({ timeout: 30000 });
  check((await api('GET', '/api/subscriptions/' + subID, undefined, admin)).circuit.state === 'CLOSED', 'the API still shows the circuit open');
  const ev = await postEvent(admin, type, { ping: 'after' });
  await until(async () => (await api('GET', '/api/dispatch-jobs/' + ev.dispatchJobs[0].id, undefined, admin)).status === 'COMPLETED',
    'a delivery after the circuit closed did not complete');
  await page.goto(ui + '#/');
  await page.locator('#failing-endpoints #no-failing').waitFor({ timeout: 30000 });
});
