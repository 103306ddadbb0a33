// Create a subscription through the form: a bad target URL gets the API's
// problem+json error placed by the URL field; the fixed form creates it.
import { scenario, signIn, env, check, api, shot, until } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const target = env('HOOKLANE_UI_RECEIVER') + '/hooks/form';

scenario('subscription form', async (page) => {
  // With keys configured the page asks for one before anything else.
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions');
  await page.locator('#api-key').waitFor();
  check(await page.locator('#subscriptions-table').count() === 0, 'the page shows data before a key is given');
  await page.fill('#api-key', 'not-a-key');
  await page.click('#key-form button[type=submit]');
  await page.locator('#key-form .field-error:not([hidden])').waitFor();
  check((await page.locator('#key-form .field-error').textContent()).includes('does not know'), 'an unknown key is not refused visibly');
  await shot(page, 'sign-in');
  await signIn(page, admin, 'admin');
  await page.click('#nav a[data-nav=subscriptions]');
  await page.click('#new-subscription');
  await page.fill('#code', 'ui-form-orders');
  await page.fill('#name', 'Orders (created in the UI)');
  await page.fill('#eventTypes', 'ui.form.order.*');
  await page.fill('#target', 'ftp://receiver.example.com/hooks');
  await page.selectOption('#mode', 'NEXT_ON_ERROR');
  await page.click('#subscription-save');

  const err = page.locator('.field[data-pointer="/target"] .field-error');
  await err.waitFor({ timeout: 30000 });
  const text = await err.textContent();
  check(/http/i.test(text), `the error by the URL field says "${text}", want the API's message about http/https`);
  check(await page.locator('.field[data-pointer="/target"]').evaluate((e) => e.classList.contains('invalid')), 'the URL field is not marked invalid');
  check(await page.locator('.field-error').count() === 1, 'errors were placed by other fields too');
  await shot(page, 'error');

  await page.fill('#target', target);
  await page.click('#subscription-save');
  const secret = await page.locator('#secret-value').textContent({ timeout: 30000 });
  check(secret.startsWith('whsec_'), `the secret shown is "${secret}"`);
  await page.click('.modal-foot .btn.primary');
  await page.locator('#sub-status [data-status=ACTIVE]').waitFor();
  check((await page.locator('h1').textContent()) === 'ui-form-orders', 'the detail page shows another subscription');

  const subs = await api('GET', '/api/subscriptions', undefined, admin);
  const s = subs.items.find((x) => x.code === 'ui-form-orders');
  check(s, 'the API does not list the subscription');
  check(s.target === target && s.mode === 'NEXT_ON_ERROR' && s.eventTypes[0].eventTypeCode === 'ui.form.order.*', 'the stored subscription differs: ' + JSON.stringify(s));

  // Edit it: a timeout above the maximum gets the API's error by its field;
  // a valid one is saved.
  await page.fill('#timeoutSeconds', '900');
  await page.click('#subscription-save');
  await page.locator('.field[data-pointer="/timeoutSeconds"] .field-error').waitFor();
  check(await page.locator('.field-error').count() === 1, 'the edit error was placed by other fields too');
  await page.fill('#timeoutSeconds', '12');
  await page.click('#subscription-save');
  await until(async () => (await api('GET', '/api/subscriptions/' + s.id, undefined, admin)).timeoutSeconds === 12, 'the edit was not saved');
  await until(async () => (await page.locator('.field-error').count()) === 0, 'the error stays after a good save');

  // Endpoint authentication: TLS towards an http target gets the API's
  // error on the TLS fieldset; a bearer token is saved, never shown again,
  // and kept by a later save that leaves its field empty.
  // The form may still be redrawn by the live refresh after the save above,
  // which would drop a value filled in meanwhile: fill and save until the
  // error shows (a save without the value is harmless).
  const tlsErr = page.locator('[data-pointer="/tls"] .field-error');
  await until(async () => {
    await page.fill('#tlsCaCertificate', 'not a certificate');
    await page.click('#subscription-save');
    await tlsErr.waitFor({ timeout: 2000 });
    return true;
  }, 'the TLS error never showed');
  check((await tlsErr.textContent()).includes('https'), 'the TLS error does not say https');
  check(await page.locator('.field-error').count() === 1, 'the TLS error was placed by other fields too');
  await page.fill('#tlsCaCertificate', '');
  await page.selectOption('#authType', 'bearer');
  check(await page.locator('#authToken').isVisible(), 'the token field is not shown for bearer');
  check(!(await page.locator('#authClientSecret').isVisible()), 'the OAuth 2.0 fields are shown for bearer');
  await page.fill('#authToken', 'ui-form-token-secret');
  await page.click('#subscription-save');
  await until(async () => {
    const got = await api('GET', '/api/subscriptions/' + s.id, undefined, admin);
    return got.auth && got.auth.type === 'bearer' && got.auth.token === '***';
  }, 'the bearer auth was not saved (or its token was shown)');
  await until(async () => (await page.locator('#authToken').getAttribute('placeholder') || '').includes('stored'), 'the form does not say the token is stored');
  check(await page.locator('#authToken').inputValue() === '', 'the form shows the stored token');
  check(!(await page.content()).includes('ui-form-token-secret'), 'the page holds the secret after the save');
  await page.locator('#auth-fields').scrollIntoViewIfNeeded();
  await shot(page, 'auth');
  await page.fill('#name', 'Orders (with a bearer token)');
  await page.click('#subscription-save');
  await until(async () => (await api('GET', '/api/subscriptions/' + s.id, undefined, admin)).name === 'Orders (with a bearer token)', 'the second save failed');
  await until(async () => (await page.locator('#authToken').getAttribute('placeholder') || '').includes('stored'), 'the form was not reloaded');

  // Pause and resume from its page.
  await page.click('#pause');
  await page.locator('#sub-status [data-status=PAUSED]').waitFor();
  await until(async () => (await api('GET', '/api/subscriptions/' + s.id, undefined, admin)).status === 'PAUSED', 'the API does not show it paused');
  await page.click('#resume');
  await page.locator('#sub-status [data-status=ACTIVE]').waitFor();

  // Send a test event: its job for this subscription is linked.
  await page.click('#send-test');
  await page.fill('#test-type', 'ui.form.order.created');
  await page.click('#test-send');
  const link = page.locator('.test-out a[href^="#/jobs/"]');
  await link.waitFor({ timeout: 30000 });
  const jobId = (await link.getAttribute('href')).split('/').pop();
  await until(async () => (await api('GET', '/api/dispatch-jobs/' + jobId, undefined, admin)).status === 'COMPLETED', 'the test event was not delivered');
  await page.click('.modal-head .icon-btn');

  // Rotate the secret: a new one is shown.
  await page.click('#rotate-secret');
  const rotated = await page.locator('#secret-value').textContent({ timeout: 30000 });
  check(rotated.startsWith('whsec_') && rotated !== secret, 'rotation did not show a new secret');
  const secrets = await api('GET', `/api/subscriptions/${s.id}/secret`, undefined, admin);
  check(secrets.secrets.some((x) => x.secret === rotated) && secrets.secrets.length === 2, 'the API does not hold the new and the old secret');
  await page.click('.modal-foot .btn.primary');
  await shot(page);
});
