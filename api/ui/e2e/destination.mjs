// Destinations in the subscription form (API.md §15): the delivery picker
// shows exactly the picked type's fields; a nats destination with a token
// is created through the form, listed with its badge and masked targetUrl
// (and by ?destinationType=), edited keeping its token (the form shows and
// sends "***"), and a moved broker address without the token again gets
// the API's 422 next to the token's field. The job view shows the broker's
// acknowledgement.
import { scenario, signIn, env, check, api, shot, until, postEvent } from './lib.mjs';

const admin = env('HOOKLANE_UI_ADMIN_KEY');
const natsURL = env('HOOKLANE_UI_NATS_URL');
const movedURL = env('HOOKLANE_UI_NATS_MOVED_URL');
const token = env('HOOKLANE_UI_NATS_TOKEN');
const type = env('HOOKLANE_UI_DEST_TYPE');
const code = 'ui-dest-nats';

/** visible lists the ids of the visible inputs of the destination fieldset. */
const visible = (page) => page.$$eval('#destination-fields input, #destination-fields select, #destination-fields textarea',
  (els) => els.filter((e) => e.offsetParent !== null).map((e) => e.id).sort());

scenario('destination', async (page) => {
  await signIn(page, admin, 'admin');
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions/new');
  await page.locator('#deliveryType').waitFor();

  // The picker: a webhook shows the target and its authentication, a
  // broker type exactly its own fields, the required ones marked.
  check(await page.inputValue('#deliveryType') === 'webhook', 'a new subscription does not start as a webhook');
  check(await page.locator('#target').isVisible(), 'the webhook form has no target field');
  check(!(await page.locator('#destination-fields').isVisible()), 'the webhook form shows destination fields');
  await page.selectOption('#deliveryType', 'kafka');
  check(!(await page.locator('#target').isVisible()) && !(await page.locator('#auth-fields').isVisible()), 'a kafka destination shows the webhook target or its auth');
  check(JSON.stringify(await visible(page)) === JSON.stringify(['dest-kafka-brokers', 'dest-kafka-sasl-mechanism', 'dest-kafka-tls', 'dest-kafka-topic']),
    'the kafka fields: ' + JSON.stringify(await visible(page)));
  await page.selectOption('#deliveryType', 'nats');
  const natsFields = ['dest-nats-jetstream', 'dest-nats-password', 'dest-nats-subject', 'dest-nats-token', 'dest-nats-url', 'dest-nats-username'];
  check(JSON.stringify(await visible(page)) === JSON.stringify(natsFields), 'the nats fields: ' + JSON.stringify(await visible(page)));
  check(await page.locator('[data-dest-for=nats] .field[data-pointer="/destination/url"] abbr.req').count() === 1, 'the required url is not marked');
  check(await page.locator('[data-dest-for=nats] .field[data-pointer="/destination/token"] abbr.req').count() === 0, 'the optional token is marked required');
  check(await page.getAttribute('#dest-nats-token', 'type') === 'password', 'the token is not a password input');

  // Create: a url of another scheme and a missing subject get the API's
  // 422 at their fields — the url's at the nats url, not at rabbitmq's
  // (hidden, of the same pointer).
  await page.fill('#code', code);
  await page.fill('#eventTypes', type);
  await page.fill('#dest-nats-url', 'http://127.0.0.1:4222');
  await page.fill('#dest-nats-token', token);
  await page.click('#subscription-save');
  await page.locator('.field[data-pointer="/destination/subject"] .field-error').waitFor();
  check(await page.locator('[data-dest-for=nats] .field[data-pointer="/destination/url"] .field-error').count() === 1, 'the url error is not at the nats url');
  check(await page.locator('.field-error').count() === 2, 'the errors were placed by other fields too');
  await page.fill('#dest-nats-url', natsURL);
  await page.fill('#dest-nats-subject', 'orders.created');
  await page.click('#subscription-save');
  await page.locator('#sub-destination[data-kind=nats]').waitFor();
  check(await page.locator('#secret-value').count() === 0, 'a destination subscription shows a signing secret');
  const created = (await api('GET', '/api/subscriptions?destinationType=nats', undefined, admin)).items.find((x) => x.code === code);
  check(created && created.destination.type === 'nats' && created.destination.token === '***' && created.destination.subject === 'orders.created',
    'the API has another destination: ' + JSON.stringify(created));
  const targetUrl = 'nats://' + new URL(natsURL.replace('nats:', 'http:')).host + '/orders.created';
  check(created.targetUrl === targetUrl, `targetUrl ${created.targetUrl}, want ${targetUrl}`);
  check(!created.target, 'the subscription kept a target: ' + created.target);

  // Listed with its badge and masked targetUrl; filtered by kind.
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions');
  const row = page.locator(`#subscriptions-table tr[data-sub="${code}"]`);
  await row.waitFor();
  check(await row.locator('.tag.dest[data-kind=nats]').textContent() === 'nats', 'the row has no nats badge');
  check((await row.locator('.dest-url').textContent()) === targetUrl, 'the row does not show the masked targetUrl: ' + await row.locator('.dest-url').textContent());
  check(await page.locator('#subscriptions-table tr[data-sub="ui-dest-hook"] .tag.dest[data-kind=webhook]').count() === 1, 'the webhook row has no webhook badge');
  await page.selectOption('#destination-filter', 'nats');
  await until(async () => (await page.locator('#subscriptions-table tr[data-sub="ui-dest-hook"]').count()) === 0 && (await row.count()) === 1,
    'the nats filter does not list the nats subscription alone');
  check(page.url().includes('destinationType=nats'), 'the filter is not in the address: ' + page.url());
  await shot(page, 'list');
  await page.selectOption('#destination-filter', 'kafka');
  await page.locator('#subscriptions-table .empty-row').waitFor();
  check(await row.count() === 0, 'the kafka filter lists the nats subscription');

  // Edit keeping the token: the form shows and sends "***"; the stored
  // token is the one given at creation (the next delivery authenticates
  // to a broker that requires it: the Go side checks it, and the job view
  // shows the broker's acknowledgement).
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions/' + created.id);
  await page.locator('#dest-nats-token').waitFor();
  check(await page.inputValue('#deliveryType') === 'nats', 'the edit form does not show the nats type');
  check(await page.inputValue('#dest-nats-token') === '***', 'the stored token is not shown as ***: ' + await page.inputValue('#dest-nats-token'));
  check(await page.inputValue('#dest-nats-url') === natsURL, 'the edit form shows another url');
  const sent = [];
  page.on('request', (r) => { if (r.method() === 'PATCH') sent.push(r.postDataJSON()); });
  await page.fill('#dest-nats-subject', 'orders.edited');
  await page.click('#subscription-save');
  await until(async () => (await api('GET', '/api/subscriptions/' + created.id, undefined, admin)).destination.subject === 'orders.edited', 'the edit was not saved');
  check(sent.length === 1 && sent[0].destination.token === '***', 'the PATCH did not send the token as ***: ' + JSON.stringify(sent[0] && sent[0].destination));
  const edited = await api('GET', '/api/subscriptions/' + created.id, undefined, admin);
  check(edited.destination.token === '***' && edited.targetUrl.endsWith('/orders.edited'), 'the edited destination: ' + JSON.stringify(edited));

  const ev = await postEvent(admin, type, { orderId: 'o-1' });
  const job = ev.dispatchJobs.find((j) => j.subscription === code);
  check(job, 'the event made no job for the subscription');
  await until(async () => (await api('GET', '/api/dispatch-jobs/' + job.id, undefined, admin)).status === 'COMPLETED', 'the job after the edit was not delivered');
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/jobs/' + job.id);
  const answer = page.locator('#attempts [data-broker-answer="1"]');
  await answer.waitFor();
  const text = await answer.textContent();
  check(/stream \S+ seq 1/.test(text), 'the job view does not show the broker\'s answer: ' + text);
  check(await page.locator('#attempts .tl-item.ok').count() === 1, 'the acknowledged attempt is not shown as a success');
  check(await page.locator('#job-target [data-kind=nats]').count() === 1, 'the job view does not name the destination type');
  await shot(page, 'job');

  // Moving the broker without giving the token again: 422 at its field.
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions/' + created.id);
  await page.locator('#dest-nats-url').waitFor();
  await page.fill('#dest-nats-url', movedURL);
  await page.click('#subscription-save');
  const err = page.locator('.field[data-pointer="/destination/token"] .field-error');
  await err.waitFor();
  check((await err.textContent()).length > 0, 'the token error is empty');
  check(await page.locator('.field-error').count() === 1, 'the moved-address error was placed by other fields too');
  const after = await api('GET', '/api/subscriptions/' + created.id, undefined, admin);
  check(after.destination.url === natsURL, 'the refused PATCH changed the url: ' + after.destination.url);
  await page.locator('#destination-fields').scrollIntoViewIfNeeded();
  await shot(page);

  // Nested fields: a kafka destination with SASL and TLS (system roots),
  // of a type nothing posts; its SASL password comes back as "***".
  await page.goto(env('HOOKLANE_UI_BASE') + '/ui/#/subscriptions/new');
  await page.locator('#deliveryType').waitFor();
  await page.fill('#code', 'ui-dest-kafka');
  await page.fill('#eventTypes', 'ui.dest.unposted');
  await page.selectOption('#deliveryType', 'kafka');
  check(!(await page.locator('#dest-kafka-sasl-password').isVisible()), 'the SASL password shows without a mechanism');
  await page.fill('#dest-kafka-brokers', '127.0.0.1:9, 127.0.0.1:10');
  await page.fill('#dest-kafka-topic', 'orders');
  await page.selectOption('#dest-kafka-sasl-mechanism', 'SCRAM-SHA-256');
  await page.fill('#dest-kafka-sasl-username', 'svc');
  await page.fill('#dest-kafka-sasl-password', 'kafka-s3cret');
  await page.selectOption('#dest-kafka-tls', 'system');
  await page.click('#subscription-save');
  await page.locator('#sub-destination[data-kind=kafka]').waitFor();
  const k = (await api('GET', '/api/subscriptions?destinationType=kafka', undefined, admin)).items[0];
  const kd = k && k.destination;
  check(kd && kd.type === 'kafka' && kd.brokers.join() === '127.0.0.1:9,127.0.0.1:10' && kd.topic === 'orders' && kd.tls === true &&
    kd.sasl.mechanism === 'SCRAM-SHA-256' && kd.sasl.username === 'svc' && kd.sasl.password === '***', 'the kafka destination: ' + JSON.stringify(kd));
  check(k.targetUrl === 'kafka://127.0.0.1:9/orders', 'the kafka targetUrl: ' + k.targetUrl);
  check(await page.inputValue('#dest-kafka-sasl-password') === '***' && await page.inputValue('#dest-kafka-tls') === 'system',
    'the kafka edit form does not show the stored SASL password as *** and TLS on');
});
