// With no API keys configured (loopback default) the dashboard asks for no
// key: the caller is an anonymous admin and the stream opens at once.
import { scenario, env, check, shot } from './lib.mjs';

scenario('auth off', async (page) => {
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui');
  await page.locator('.who [data-role=admin]').waitFor({ timeout: 30000 });
  check((await page.locator('.who-name').textContent()) === 'anonymous', 'the caller is not anonymous');
  check(await page.locator('#api-key').count() === 0, 'a key was asked for');
  check(await page.locator('.who .link-btn').count() === 0, '"Change key" is offered without auth');
  check(page.url().endsWith('/ui/#/overview'), 'not redirected to the overview: ' + page.url());
  await page.locator('#conn[data-state=live]').waitFor({ timeout: 30000 });
  await page.locator('[data-count-status=COMPLETED]').waitFor();
  await shot(page);
});
