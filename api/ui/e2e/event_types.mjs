// Event types: versions and their lifecycle, the schema pretty-printed, and
// a payload tried against a version showing the API's violations.
import { scenario, signIn, env, check, api, shot, until } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const type = env('HOOKLANE_UI_LIVE_TYPE');

scenario('event types', async (page) => {
  await api('POST', `/api/event-types/${type}/versions`, { version: '1.1', schema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number', minimum: 0 } } } }, admin);
  await signIn(page, admin, 'admin');
  await page.click('#nav a[data-nav="event-types"]');
  await page.click(`#event-types-table tr[data-type="${type}"] a`);
  await page.locator('#versions [data-version="1.0"] [data-status=CURRENT]').waitFor();
  await page.locator('#versions [data-version="1.1"] [data-status=FINALISING]').waitFor();
  const schemaText = await page.locator('pre.schema').textContent();
  check(schemaText.includes('"currency"') && schemaText.includes('\n'), 'the schema of 1.0 is not shown pretty-printed');

  await page.fill('#try-data', '{"amount": "ten", "currency": "GBP"}');
  await page.click('#try-validate');
  await page.locator('#try-result [data-valid=false]').waitFor();
  const rows = await page.locator('#try-result .violations tr').evaluateAll((trs) => trs.map((tr) => tr.cells[0].textContent));
  check(JSON.stringify(rows) === JSON.stringify(['/data/amount', '/data/currency']), 'violations shown: ' + JSON.stringify(rows));
  await page.locator('#try-result').scrollIntoViewIfNeeded();
  await shot(page, 'violations');
  await page.fill('#try-data', '{"amount": 10, "currency": "EUR"}');
  await page.click('#try-validate');
  await page.locator('#try-result [data-valid=true]').waitFor();

  // Lifecycle: promote 1.1 from FINALISING to CURRENT.
  await page.click('#versions [data-version="1.1"]');
  await page.locator('#promote').waitFor();
  check((await page.locator('#promote').textContent()).includes('CURRENT'), 'the FINALISING version does not offer promotion');
  await page.click('#promote');
  await page.locator('#versions [data-version="1.1"] [data-status=CURRENT]').waitFor();
  await until(async () => (await api('GET', `/api/event-types/${type}/versions/1.1`, undefined, admin)).status === 'CURRENT', 'the API does not show 1.1 CURRENT');
  await shot(page);
});
