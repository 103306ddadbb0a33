// Transformation editor (API.md §16): the subscription page prefills the
// sample with the latest matching event, "Test" shows the transformed
// request or the error at its line (the gutter marks it), and the code is
// saved through PATCH.
import { scenario, signIn, env, check, api, shot, until, postEvent } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const type = env('HOOKLANE_UI_TX_TYPE');
const subId = env('HOOKLANE_UI_TX_SUB_ID');

const renaming = `function handler(webhook) {
  const d = webhook.payload.data;
  webhook.method = "PUT";
  webhook.url = webhook.url + "/" + d.orderId;
  webhook.payload = {order_id: d.orderId, amount: d.total};
  return webhook;
}`;

const throwing = `function handler(webhook) {
  const d = webhook.payload.data;
  if (!d.customer) throw new Error("no customer on " + d.orderId);
  return webhook;
}`;

scenario('transformation', async (page) => {
  await postEvent(admin, type, { orderId: 'o-older', total: 1 });
  await postEvent(admin, type, { orderId: 'o-7', total: 42 });
  await signIn(page, admin, 'admin');
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions/' + subId);
  await page.locator('#transformation-card').waitFor();
  await page.locator('#transform-sample-source[data-from="latest"]').waitFor();
  const sample = await page.inputValue('#transform-event');
  check(sample.includes('"o-7"') && !sample.includes('o-older'), 'the sample is not the latest matching event: ' + sample);
  check(await page.locator('.tx-gutter [data-line="3"]').count() === 1, 'the starter code has no line numbers');

  // Typed code, tested: the transformed request is shown.
  await page.fill('#transform-code', '');
  await page.locator('#transform-code').pressSequentially(renaming.replaceAll('\n  ', '\n'), { delay: 0 });
  check(await page.locator('.tx-gutter [data-line="7"]').count() === 1, 'the gutter does not follow the typed lines');
  await page.click('#transform-test');
  await page.locator('#transform-result').waitFor();
  const result = await page.locator('#transform-result').textContent();
  check(result.includes('PUT') && result.includes('/o-7') && result.includes('order_id') && result.includes('42'), 'the result is not the transformed request: ' + result);
  await shot(page, 'result');

  // A handler that throws: the error, its line, the gutter marks it.
  await page.fill('#transform-code', throwing);
  await page.click('#transform-test');
  await page.locator('#transform-error').waitFor();
  const line = await page.locator('#transform-error').getAttribute('data-line');
  const text = await page.locator('#transform-error').textContent();
  check(line === '3', 'the error is not at line 3: ' + line + ' ' + text);
  check(text.includes('no customer on o-7') && text.includes('Line 3'), 'the error text: ' + text);
  check(await page.locator('.tx-gutter .tx-err').getAttribute('data-line') === '3', 'the gutter does not mark line 3');
  await shot(page, 'error');

  // Saved through PATCH: the API has it.
  await page.fill('#transform-code', renaming);
  await page.click('#transform-save');
  await until(async () => {
    const s = await api('GET', '/api/subscriptions/' + subId, undefined, admin);
    return s.transformation && s.transformation.code === renaming && s.transformation.enabled === true;
  }, 'the saved transformation is not on the subscription');
  await page.locator('#transform-state').waitFor();
  await until(async () => (await page.locator('#transform-state').textContent()) === 'on', 'the card does not show the transformation on');
  await page.locator('#transformation-card').scrollIntoViewIfNeeded();
  await shot(page);
});
