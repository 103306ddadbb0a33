// Unit checks of the dashboard's browser-independent modules, run by Node
// (go test ./ui runs this file): the SSE parser, the reconnecting stream
// client against a real HTTP server that drops it, the rate counters and
// the lane logic. Exits 1 with the failed checks.
import http from 'node:http';
import assert from 'node:assert/strict';
import { SSEParser, StatusStream, backoffDelay } from '../assets/js/sse.js';
import { Rates, classify } from '../assets/js/rates.js';
import { laneState } from '../assets/js/views/lanes.js';
import { authBody, tlsBody } from '../assets/js/views/endpoint.js';

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('parser: fields, multi-line data, comments, CRLF and CR, split chunks', () => {
  const got = [];
  const retries = [];
  const p = new SSEParser((m) => got.push(m), (ms) => retries.push(ms));
  const text = 'retry: 1500\n\n: ping\n\nid: 01A\nevent: dispatch.completed\ndata: {"a":\ndata: 1}\n\r\nid: 01B\r\ndata:x\r\rdata: no id\n\nevent: empty\n\n';
  for (let i = 0; i < text.length; i += 3) p.push(text.slice(i, i + 3));
  assert.deepEqual(retries, [1500]);
  assert.deepEqual(got, [
    { id: '01A', event: 'dispatch.completed', data: '{"a":\n1}' },
    { id: '01B', event: 'message', data: 'x' },
    { id: null, event: 'message', data: 'no id' },
  ]);
});

test('backoff doubles from the base, with jitter, up to the cap', () => {
  assert.equal(backoffDelay(0, 1000, 30000, () => 0), 500);
  assert.equal(backoffDelay(0, 1000, 30000, () => 1), 1000);
  assert.equal(backoffDelay(3, 1000, 30000, () => 1), 8000);
  assert.equal(backoffDelay(12, 1000, 30000, () => 1), 30000);
  assert.equal(backoffDelay(12, 1000, 30000, () => 0), 15000);
});

/** serve answers each stream request with handlers[n] (the n-th connection). */
function serve(handlers) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    seen.push({ auth: req.headers.authorization, lastId: req.headers['last-event-id'] || '' });
    const h = handlers[Math.min(seen.length - 1, handlers.length - 1)];
    h(req, res);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({ srv, seen, url: `http://127.0.0.1:${srv.address().port}/api/stream` })));
}

const ev = (id, type) => `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ id, type, subject: 'job-' + id })}\n\n`;

test('the stream client resumes after a drop with Last-Event-ID and the key', async () => {
  const { srv, seen, url } = await serve([
    (req, res) => { // first connection: two events, then the connection dies
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('retry: 40\n\n' + ev('01A', 'dispatch.created') + ev('01B', 'dispatch.queued'));
      setTimeout(() => req.socket.destroy(), 50);
    },
    (req, res) => { res.writeHead(503); res.end(); }, // refused once
    (req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(ev('01C', 'dispatch.completed'));
    },
  ]);
  const s = new StatusStream({ url, key: () => 'k-123' });
  const got = [];
  const states = [];
  s.onState((st) => states.push(st));
  const done = new Promise((resolve) => s.on((ce) => { got.push(ce.id); if (ce.id === '01C') resolve(); }));
  s.start();
  await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error('no 01C after the drop; states ' + states.join(','))), 5000))]);
  s.stop();
  srv.close();
  assert.deepEqual(got, ['01A', '01B', '01C']);
  assert.deepEqual(seen.map((x) => x.lastId), ['', '01B', '01B']);
  assert.ok(seen.every((x) => x.auth === 'Bearer k-123'), 'the key was not sent on every connection');
  const live = states.indexOf('live');
  assert.ok(live >= 0 && states.indexOf('reconnecting', live) > live && states.lastIndexOf('live') > states.indexOf('reconnecting', live), 'states ' + states.join(','));
});

test('the stream client stops on 401 and says so', async () => {
  const { srv, seen, url } = await serve([(req, res) => { res.writeHead(401); res.end(); }]);
  const s = new StatusStream({ url, key: () => '' });
  const st = await new Promise((resolve) => {
    s.onState((x) => { if (x === 'unauthorized') resolve(x); });
    s.start();
  });
  await new Promise((r) => setTimeout(r, 200));
  srv.close();
  assert.equal(st, 'unauthorized');
  assert.equal(seen.length, 1, 'it retried a refused key');
  assert.equal(seen[0].auth, undefined, 'an empty key was sent');
});

test('rates: which events count, each id once, per-second totals', () => {
  const now = new Date().toISOString();
  assert.equal(classify({ type: 'event.accepted' }), 'accepted');
  assert.equal(classify({ type: 'dispatch.queued', data: { attempt: 0 } }), null);
  assert.equal(classify({ type: 'dispatch.queued', data: { attempt: 2 } }), 'retried');
  assert.equal(classify({ type: 'dispatch.started' }), null);
  const r = new Rates(900);
  r.add({ id: '1', type: 'dispatch.completed', time: now });
  r.add({ id: '1', type: 'dispatch.completed', time: now }); // replayed
  r.add({ id: '2', type: 'dispatch.failed', time: now });
  r.add({ id: '3', type: 'dispatch.completed', time: new Date(Date.now() - 3600e3).toISOString() }); // outside the window
  assert.deepEqual(r.totals(), { accepted: 0, completed: 1, failed: 1, retried: 0 });
  const p = r.points(10);
  assert.equal(p.series.completed.length, 90);
  assert.equal(p.series.completed.reduce((a, b) => a + b, 0), 0.1);
});

test('lanes: a BLOCK_ON_ERROR group is blocked by its failing head only', () => {
  const j = (id, status, extra = {}) => ({ id, status, attemptCount: 0, lastError: null, ...extra });
  const failing = j('02', 'ERROR', { attemptCount: 1, lastError: 'receiver answered 500' });
  const held = j('03', 'PENDING', { blockedBy: '02' });
  let st = laneState('BLOCK_ON_ERROR', [j('01', 'COMPLETED'), failing, held]);
  assert.equal(st.head, failing);
  assert.equal(st.blocked, true);
  assert.equal(st.waiting, 1);
  assert.equal(laneState('NEXT_ON_ERROR', [j('01', 'COMPLETED'), failing, held]).blocked, false);
  assert.equal(laneState('BLOCK_ON_ERROR', [j('01', 'COMPLETED'), j('02', 'IN_PROGRESS'), j('03', 'QUEUED')]).blocked, false);
  // A head waiting for its retry holds the group too.
  st = laneState('BLOCK_ON_ERROR', [j('01', 'PENDING', { attemptCount: 2, lastError: 'timeout' }), j('02', 'PENDING')]);
  assert.equal(st.blocked, true);
  assert.equal(laneState('BLOCK_ON_ERROR', [j('01', 'CANCELLED'), j('02', 'COMPLETED')]).blocked, false);
});

test('endpoint auth: an empty secret field keeps a stored secret of the same type only', () => {
  const v = (o) => ({ type: '', token: '', username: '', password: '', tokenUrl: '', clientId: '', clientSecret: '', scopes: '', audience: '', ...o });
  assert.equal(authBody(v({}), { type: 'bearer', token: '***' }), null, 'None removes auth');
  assert.deepEqual(authBody(v({ type: 'bearer' }), { type: 'bearer', token: '***' }), { type: 'bearer', token: '***' });
  assert.deepEqual(authBody(v({ type: 'bearer', token: 'new' }), { type: 'bearer', token: '***' }), { type: 'bearer', token: 'new' });
  assert.deepEqual(authBody(v({ type: 'basic', username: ' u ' }), { type: 'bearer', token: '***' }), { type: 'basic', username: 'u', password: '' },
    'another type keeps nothing');
  assert.deepEqual(authBody(v({ type: 'oauth2', tokenUrl: 'https://idp/t', clientId: 'c', scopes: 'a, b  c', audience: ' x ' }),
    { type: 'oauth2', clientSecret: '***' }),
  { type: 'oauth2', tokenUrl: 'https://idp/t', clientId: 'c', clientSecret: '***', scopes: ['a', 'b', 'c'], audience: 'x' });
  assert.deepEqual(authBody(v({ type: 'oauth2', clientSecret: 's' }), null), { type: 'oauth2', tokenUrl: '', clientId: '', clientSecret: 's' });
});

test('endpoint tls: null when empty; an empty key with a certificate keeps the stored key', () => {
  const v = (o) => ({ clientCertificate: '', clientKey: '', caCertificate: '', ...o });
  assert.equal(tlsBody(v({}), { clientKey: '***' }), null);
  assert.deepEqual(tlsBody(v({ clientCertificate: 'CERT\n' }), { clientCertificate: 'CERT', clientKey: '***' }), { clientCertificate: 'CERT', clientKey: '***' });
  assert.deepEqual(tlsBody(v({ clientCertificate: 'CERT', clientKey: 'KEY' }), null), { clientCertificate: 'CERT', clientKey: 'KEY' });
  assert.deepEqual(tlsBody(v({ caCertificate: 'CA' }), { clientKey: '***' }), { caCertificate: 'CA' });
});

let failed = 0;
for (const t of tests) {
  try {
    await t.fn();
    console.log('ok   ' + t.name);
  } catch (err) {
    failed++;
    console.log('FAIL ' + t.name + '\n' + (err.stack || err));
  }
}
console.log(failed ? `${failed} of ${tests.length} failed` : `all ${tests.length} passed`);
process.exit(failed ? 1 : 0);
