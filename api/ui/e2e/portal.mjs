// Portal mode (API.md §11): the dashboard opened as /ui/?token=hlt_… shows
// only the token's client, branded with its name; a viewer token cannot
// write; a revoked token is asked for again.
import { scenario, env, check, shot, api, until } from './lib.mjs';

const base = () => env('HOOKLANE_UI_BASE');

scenario('portal', async (page, newPage) => {
  const clientName = env('HOOKLANE_UI_CLIENT_NAME');
  const own = env('HOOKLANE_UI_OWN_SUB');
  const others = env('HOOKLANE_UI_OTHER_SUBS').split(',');

  // An admin token of the client: the token leaves the address bar, the
  // page is branded, only the client's subscriptions are listed.
  await page.goto(base() + '/ui/?token=' + env('HOOKLANE_UI_ADMIN_TOKEN'));
  await page.locator('.who [data-role=admin]').waitFor({ timeout: 30000 });
  check(!page.url().includes('token='), 'the token stayed in the address bar: ' + page.url());
  check((await page.title()).includes(clientName), 'the title does not name the client: ' + await page.title());
  check((await page.locator('.brand span').textContent()) === clientName, 'the side bar does not name the client');
  check(!(await page.locator('#nav a[data-nav=event-types]').isVisible()), 'the platform catalogue is offered');
  await page.goto(base() + '/ui/#/subscriptions');
  await page.locator('#subscriptions-table').getByText(own).first().waitFor();
  const text = await page.locator('#view').textContent();
  for (const o of others) check(!text.includes(o), `another client's or the platform's subscription ${o} is shown`);
  check(await page.locator('#new-subscription').count() === 1, 'an admin token cannot create a subscription');

  // The customer creates its endpoint, pauses it and sends a test event.
  await page.click('#new-subscription');
  await page.fill('#code', 'portal-created');
  await page.fill('#eventTypes', env('HOOKLANE_UI_TYPE'));
  await page.fill('#target', env('HOOKLANE_UI_TARGET'));
  await page.click('#subscription-save');
  const secret = await page.locator('#secret-value').textContent({ timeout: 30000 });
  check(secret.startsWith('whsec_'), `the secret shown is "${secret}"`);
  await page.click('.modal-foot .btn.primary');
  await page.locator('#sub-status [data-status=ACTIVE]').waitFor();
  const subs = await api('GET', '/api/subscriptions?clientId=' + env('HOOKLANE_UI_CLIENT_ID'), undefined, env('HOOKLANE_UI_ADMIN_KEY'));
  const created = subs.items.find((x) => x.code === 'portal-created');
  check(created, 'the subscription created in the portal is not the client\'s');
  await page.click('#pause');
  await page.locator('#sub-status [data-status=PAUSED]').waitFor();
  await page.click('#resume');
  await page.locator('#sub-status [data-status=ACTIVE]').waitFor();
  await page.click('#send-test');
  await page.fill('#test-type', env('HOOKLANE_UI_TYPE'));
  await page.click('#test-send');
  await until(async () => {
    const evs = await api('GET', '/api/events?source=/dashboard&clientId=' + env('HOOKLANE_UI_CLIENT_ID'), undefined, env('HOOKLANE_UI_ADMIN_KEY'));
    return evs.items.length === 1 && evs.items[0].event.clientid === env('HOOKLANE_UI_CLIENT_ID');
  }, 'the test event was not posted as the client\'s', 30000);
  await page.goto(base() + '/ui/#/subscriptions');
  await page.locator('#subscriptions-table').getByText(own).first().waitFor();
  await page.goto(base() + '/ui/#/jobs');
  await page.locator('#view table').first().waitFor();
  const jobs = await page.locator('#view').textContent();
  for (const o of others) check(!jobs.includes(o), `a job of ${o} is shown`);
  await shot(page);

  // A viewer token: reads, no write action.
  const viewer = await newPage();
  await viewer.goto(base() + '/ui/?token=' + env('HOOKLANE_UI_VIEWER_TOKEN') + '#/subscriptions');
  await viewer.locator('.who [data-role=viewer]').waitFor({ timeout: 30000 });
  await viewer.locator('#subscriptions-table').getByText(own).first().waitFor();
  check(await viewer.locator('#new-subscription').count() === 0, 'a viewer token is offered "New subscription"');
  await viewer.locator('#subscriptions-table a').getByText(own).first().click();
  await viewer.locator('#sub-status').waitFor();
  for (const id of ['#pause', '#resume', '#rotate-secret', '#send-test']) {
    check(await viewer.locator(id).count() === 0, `a viewer token is offered ${id}`);
  }
  await shot(viewer, 'viewer');

  // A revoked token is asked for again.
  const revoked = await newPage();
  await revoked.goto(base() + '/ui/?token=' + env('HOOKLANE_UI_REVOKE_TOKEN'));
  await revoked.locator('.who [data-role=viewer]').waitFor({ timeout: 30000 });
  await api('DELETE', '/api/clients/' + env('HOOKLANE_UI_CLIENT_ID') + '/tokens/' + env('HOOKLANE_UI_REVOKE_TOKEN_ID'), undefined, env('HOOKLANE_UI_ADMIN_KEY'));
  await revoked.reload();
  await until(async () => (await revoked.locator('#api-key').count()) === 1, 'the revoked token was not asked for again', 30000);
  await shot(revoked, 'revoked');
});
