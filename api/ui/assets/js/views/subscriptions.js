// Subscriptions: list, create and edit (problem+json errors placed next to
// the field each pointer names), pause / resume, secret rotation, a
// "send test event" button and the transformation's editor
// (transformation.js). The form delivers to a webhook or to a message
// broker (destination.js, API.md §15); the list filters by that kind.
import { api, listAll, qs } from '../api.js';
import { h, fill, badge, fmtTime, fmtMs, fmtNum, ago, errorBox, toast, modal, placeErrors, clearErrors } from '../dom.js';
import { authBody, tlsBody, MASK } from './endpoint.js';
import { openReplay, replayCard } from './replay.js';
import { transformationCard } from './transformation.js';
import { destinationFields, kindOf, kindBadge, TYPES, WEBHOOK } from './destination.js';

export const needs = 'read';

const modes = ['IMMEDIATE', 'NEXT_ON_ERROR', 'BLOCK_ON_ERROR'];

export function render(root, { parts, query, ctx }) {
  if (parts[1] === 'new') return renderForm(root, null, ctx);
  if (parts[1]) return renderDetail(root, parts[1], ctx);
  return renderList(root, ctx, query);
}

/** targetCell shows where a subscription delivers: its kind's badge and
 * its target, or its destination's masked targetUrl. */
function targetCell(s) {
  const kind = kindOf(s);
  const where = s.destination ? s.targetUrl : s.target;
  return [kind === 'pull' ? null : kindBadge(kind), ' ', h('span', { class: 'dest-url', title: where || '' }, where || (kind === 'pull' ? 'pull' : '—'))];
}

function renderList(root, ctx, query) {
  const destinationType = (query && query.get('destinationType')) || '';
  const tbody = h('tbody', {}, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'Loading…')));
  const kindFilter = h('select', { id: 'destination-filter', name: 'destinationType', 'aria-label': 'Delivers to',
    onchange: (e) => { location.hash = '#/subscriptions' + qs({ destinationType: e.target.value }); } },
  h('option', { value: '' }, 'Every kind'),
  [WEBHOOK, ...TYPES.map((t) => t.type)].map((k) => h('option', { value: k, selected: destinationType === k }, k === WEBHOOK ? 'webhook (HTTP)' : k)));
  fill(root,
    h('header', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Subscriptions'), h('p', { class: 'muted' }, 'Where events go, in what order, and how often to retry.')),
      ctx.can('write') ? h('a', { class: 'btn primary', href: '#/subscriptions/new', id: 'new-subscription' }, 'New subscription') : null),
    h('div', { class: 'filters card' }, h('div', { class: 'filter-row' }, h('label', { class: 'muted small', for: 'destination-filter' }, 'Delivers to'), kindFilter)),
    h('div', { class: 'card flush' }, h('table', { class: 'table', id: 'subscriptions-table' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Code'), h('th', {}, 'Target'), h('th', {}, 'Event types'), h('th', {}, 'Mode'), h('th', {}, 'Status'), h('th', {}, 'Updated'))),
      tbody)));
  listAll('/api/subscriptions', { destinationType }, 1000).then(({ items }) => {
    fill(tbody, items.length ? items.map((s) => h('tr', { class: 'clickable', 'data-sub': s.code, 'data-kind': kindOf(s), onclick: () => { location.hash = '#/subscriptions/' + s.id; } },
      h('td', {}, h('a', { class: 'strong', href: '#/subscriptions/' + s.id }, s.code), s.name && s.name !== s.code ? h('div', { class: 'muted small' }, s.name) : null),
      h('td', { class: 'mono small ellipsis target-cell' }, targetCell(s)),
      h('td', { class: 'mono small' }, (s.eventTypes || []).map((e) => e.eventTypeCode + (e.specVersion ? '@' + e.specVersion : '')).join(', ')),
      h('td', {}, h('span', { class: 'tag mode-' + s.mode.toLowerCase() }, s.mode.replaceAll('_', ' '))),
      h('td', {}, badge(s.status), s.circuit && s.circuit.state !== 'CLOSED' ? [' ', circuitBadge(s.circuit)] : null),
      h('td', { class: 'small' }, fmtTime(s.updatedAt)))) :
      h('tr', {}, h('td', { colspan: 6, class: 'empty-row' }, destinationType ? 'No subscription delivers to ' + destinationType + '.' : 'No subscriptions yet.')));
  }).catch((err) => fill(tbody, h('tr', {}, h('td', { colspan: 6 }, errorBox(err)))));
  return null;
}

/** field wraps an input with its label and the pointer its errors carry. */
function field(label, pointer, input, hint) {
  return h('div', { class: 'field', 'data-pointer': pointer }, h('label', { for: input.id }, label), input, hint ? h('div', { class: 'hint' }, hint) : null);
}

function input(id, value, attrs = {}) {
  return h('input', { id, name: id, value: value === undefined || value === null ? '' : String(value), autocomplete: 'off', ...attrs });
}

/** toForm / fromForm convert between a subscription and the form's values. */
function eventTypesText(s) {
  return (s.eventTypes || []).map((e) => e.eventTypeCode + (e.specVersion ? '@' + e.specVersion : '')).join(', ');
}

function headersText(s) {
  return Object.entries(s.headers || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
}

function renderForm(root, sub, ctx, onSaved) {
  const s = sub || { mode: 'IMMEDIATE', retry: { maxAttempts: 8, initialBackoffSeconds: 5, maxBackoffSeconds: 3600 }, timeoutSeconds: 30, maxAgeSeconds: 86400, delaySeconds: 0, sequence: 99 };
  const pool = h('select', { id: 'dispatchPoolId', name: 'dispatchPoolId' }, h('option', { value: '' }, 'default'));
  (ctx.can('platform') ? listAll('/api/dispatch-pools', {}, 500) : Promise.resolve({ items: [] })).then(({ items }) => {
    for (const p of items) if (p.code !== 'default') pool.append(h('option', { value: p.id, selected: s.dispatchPoolId === p.id }, p.code));
  }).catch(() => {});
  const f = {
    code: input('code', s.code, { placeholder: 'order-processor', required: true }),
    name: input('name', s.name, { placeholder: 'Order processor' }),
    description: input('description', s.description),
    eventTypes: input('eventTypes', eventTypesText(s), { placeholder: 'shop.order.*, billing.invoice.paid@1.1' }),
    target: input('target', s.target, { placeholder: 'https://receiver.example.com/hooks', inputmode: 'url', spellcheck: 'false' }),
    mode: h('select', { id: 'mode', name: 'mode' }, modes.map((m) => h('option', { value: m, selected: s.mode === m }, m))),
    maxAttempts: input('maxAttempts', s.retry.maxAttempts, { type: 'number' }),
    initialBackoffSeconds: input('initialBackoffSeconds', s.retry.initialBackoffSeconds, { type: 'number' }),
    maxBackoffSeconds: input('maxBackoffSeconds', s.retry.maxBackoffSeconds, { type: 'number' }),
    timeoutSeconds: input('timeoutSeconds', s.timeoutSeconds, { type: 'number' }),
    maxAgeSeconds: input('maxAgeSeconds', s.maxAgeSeconds, { type: 'number' }),
    delaySeconds: input('delaySeconds', s.delaySeconds, { type: 'number' }),
    sequence: input('sequence', s.sequence, { type: 'number' }),
    dataOnly: h('input', { type: 'checkbox', id: 'dataOnly', name: 'dataOnly', checked: s.dataOnly }),
    headers: h('textarea', { id: 'headers', name: 'headers', rows: 3, placeholder: 'X-Team: orders', spellcheck: 'false' }, headersText(s)),
    filters: h('textarea', { id: 'filters', name: 'filters', rows: 4, class: 'mono', spellcheck: 'false', placeholder: '[{"field": "region", "op": "eq", "value": "eu"}]' }, s.filters && s.filters.length ? JSON.stringify(s.filters, null, 2) : ''),
  };
  const ep = endpointFields(s);
  const { a, t } = ep;
  const dest = destinationFields(s.destination || null, field);
  const targetField = field('Target URL', '/target', f.target, 'http or https; receives signed Standard Webhooks.');
  const num = (el) => (el.value === '' ? undefined : Number(el.value));
  const form = h('form', { class: 'form card', id: 'subscription-form', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearErrors(form);
    const body = {
      code: f.code.value.trim(), name: f.name.value.trim(), description: f.description.value.trim(),
      eventTypes: f.eventTypes.value.split(',').map((x) => x.trim()).filter(Boolean).map((x) => {
        const [code, ver] = x.split('@');
        return ver ? { eventTypeCode: code, specVersion: ver } : { eventTypeCode: code };
      }),
      mode: f.mode.value, dispatchPoolId: pool.value || null,
      retry: { maxAttempts: num(f.maxAttempts), initialBackoffSeconds: num(f.initialBackoffSeconds), maxBackoffSeconds: num(f.maxBackoffSeconds) },
      timeoutSeconds: num(f.timeoutSeconds), maxAgeSeconds: num(f.maxAgeSeconds), delaySeconds: num(f.delaySeconds), sequence: num(f.sequence),
      dataOnly: f.dataOnly.checked, headers: {},
    };
    if (dest.kind() === WEBHOOK) {
      // An HTTP target with its endpoint authentication; a subscription
      // moving off a destination drops it (null).
      body.target = f.target.value.trim();
      body.auth = authBody(Object.fromEntries(Object.entries(a).map(([k, el]) => [k, el.value])), s.auth || null);
      body.tls = tlsBody({ clientCertificate: t.clientCertificate.value, clientKey: t.clientKey.value, caCertificate: t.caCertificate.value }, s.tls || null);
      if (sub && sub.destination) body.destination = null;
    } else {
      // A destination replaces the target, which has no auth or tls;
      // its "***" secrets are sent back as shown (API.md §15).
      body.destination = dest.body();
      body.auth = null;
      body.tls = null;
      if (sub && sub.target) body.target = null;
    }
    for (const line of f.headers.value.split('\n')) {
      const i = line.indexOf(':');
      if (i > 0) body.headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    if (f.filters.value.trim()) {
      try { body.filters = JSON.parse(f.filters.value); } catch (err) {
        placeErrors(form, { problem: { detail: 'filters is not valid JSON', errors: [{ pointer: '/filters', message: 'not valid JSON: ' + err.message }] } });
        return;
      }
    } else body.filters = [];
    submit.disabled = true;
    try {
      const saved = sub ? await api('PATCH', '/api/subscriptions/' + sub.id, body) : await api('POST', '/api/subscriptions', body);
      // A destination's deliveries are not signed (the broker authenticates).
      if (!sub && saved.secret && !saved.destination) showSecret(saved.secret, 'Subscription created');
      else toast(sub ? 'Subscription saved' : 'Subscription created', 'ok');
      if (onSaved) onSaved(saved);
      else location.hash = '#/subscriptions/' + saved.id;
    } catch (err) {
      placeErrors(form, err);
    } finally {
      submit.disabled = false;
    }
  } });
  const submit = h('button', { class: 'btn primary', type: 'submit', id: 'subscription-save' }, sub ? 'Save changes' : 'Create subscription');
  const ro = !ctx.can('write');
  form.append(
    h('div', { class: 'form-alert' }),
    h('div', { class: 'grid2' }, field('Code', '/code', f.code, 'Unique; used in message groups and headers.'), field('Name', '/name', f.name)),
    field('Description', '/description', f.description),
    field('Delivers to', '/destination/type', dest.picker, 'A webhook, or a message broker (the type\'s fields below; * marks the required ones).'),
    targetField, dest.fieldset,
    field('Event types', '/eventTypes', f.eventTypes, 'Comma-separated codes or globs (a final * is a prefix); code@version pins a schema version.'),
    h('div', { class: 'grid3' }, field('Ordering mode', '/mode', f.mode), field('Dispatch pool', '/dispatchPoolId', pool), field('Sequence', '/sequence', f.sequence)),
    h('fieldset', {}, h('legend', {}, 'Retry policy'), h('div', { class: 'grid3' },
      field('Max attempts', '/retry/maxAttempts', f.maxAttempts), field('Initial backoff (s)', '/retry/initialBackoffSeconds', f.initialBackoffSeconds),
      field('Max backoff (s)', '/retry/maxBackoffSeconds', f.maxBackoffSeconds))),
    h('div', { class: 'grid3' }, field('Timeout (s)', '/timeoutSeconds', f.timeoutSeconds), field('Max age (s)', '/maxAgeSeconds', f.maxAgeSeconds), field('Delay (s)', '/delaySeconds', f.delaySeconds)),
    h('div', { class: 'grid2' }, field('Headers', '/headers', f.headers, 'One "Name: value" per line.'), field('Filters (JSON)', '/filters', f.filters, 'ANDed; ops eq, neq, in, prefix, suffix, exists, gt, gte, lt, lte.')),
    h('div', { class: 'field check', 'data-pointer': '/dataOnly' }, h('label', {}, f.dataOnly, ' Send data only (CloudEvents binary mode)')),
    ep.auth, ep.tls,
    ro ? null : h('div', { class: 'form-foot' }, submit));
  dest.onChange((kind) => {
    // The target and its endpoint authentication are the webhook's only.
    targetField.hidden = kind !== WEBHOOK;
    ep.auth.hidden = kind !== WEBHOOK;
    ep.tls.hidden = kind !== WEBHOOK;
  });
  dest.show();
  if (ro) form.querySelectorAll('input,select,textarea').forEach((el) => { el.disabled = true; });
  if (!sub) {
    fill(root, h('a', { class: 'back', href: '#/subscriptions' }, '← Subscriptions'),
      h('header', { class: 'page-head' }, h('div', {}, h('h1', {}, 'New subscription'))), form);
    f.code.focus();
  }
  return form;
}

/**
 * endpointFields builds the auth and TLS parts of the form for
 * subscription s. A stored secret is never shown: its field stays empty,
 * says so, and an empty field keeps it (endpoint.js).
 */
function endpointFields(s) {
  const auth = s.auth || {};
  const tls = s.tls || {};
  const keep = 'Stored; never shown. Leave empty to keep it.';
  const secret = (id, isStored) => input(id, '', { type: 'password', autocomplete: 'new-password', spellcheck: 'false', placeholder: isStored ? '•••••• stored' : '' });
  const hintFor = (isStored, other) => (isStored ? keep : other);
  const a = {
    type: h('select', { id: 'authType', name: 'authType' },
      [['', 'None'], ['bearer', 'Bearer token'], ['basic', 'Basic (username and password)'], ['oauth2', 'OAuth 2.0 client credentials']]
        .map(([v, l]) => h('option', { value: v, selected: (auth.type || '') === v }, l))),
    token: secret('authToken', auth.token === MASK),
    username: input('authUsername', auth.username || '', { autocomplete: 'off' }),
    password: secret('authPassword', auth.password === MASK),
    tokenUrl: input('authTokenUrl', auth.tokenUrl || '', { placeholder: 'https://idp.example.com/oauth/token', inputmode: 'url', spellcheck: 'false' }),
    clientId: input('authClientId', auth.clientId || ''),
    clientSecret: secret('authClientSecret', auth.clientSecret === MASK),
    scopes: input('authScopes', (auth.scopes || []).join(' '), { placeholder: 'hooks:write' }),
    audience: input('authAudience', auth.audience || ''),
  };
  const groups = {
    bearer: h('div', { 'data-auth-for': 'bearer' }, field('Token', '/auth/token', a.token, hintFor(auth.token === MASK, 'Sent as Authorization: Bearer <token>.'))),
    basic: h('div', { class: 'grid2', 'data-auth-for': 'basic' }, field('Username', '/auth/username', a.username),
      field('Password', '/auth/password', a.password, hintFor(auth.password === MASK))),
    oauth2: h('div', { 'data-auth-for': 'oauth2' },
      field('Token URL', '/auth/tokenUrl', a.tokenUrl, 'The token endpoint; checked like the target. Tokens are cached until 10 s before they expire.'),
      h('div', { class: 'grid2' }, field('Client id', '/auth/clientId', a.clientId), field('Client secret', '/auth/clientSecret', a.clientSecret, hintFor(auth.clientSecret === MASK))),
      h('div', { class: 'grid2' }, field('Scopes', '/auth/scopes', a.scopes, 'Space-separated.'), field('Audience', '/auth/audience', a.audience))),
  };
  const show = () => { for (const [type, g] of Object.entries(groups)) g.hidden = a.type.value !== type; };
  a.type.addEventListener('change', show);
  show();
  const pem = (id, value, placeholder) => h('textarea', { id, name: id, rows: 3, class: 'mono', spellcheck: 'false', placeholder }, value || '');
  const t = {
    clientCertificate: pem('tlsClientCertificate', tls.clientCertificate, '-----BEGIN CERTIFICATE-----'),
    clientKey: pem('tlsClientKey', '', tls.clientKey === MASK ? '•••••• stored' : '-----BEGIN PRIVATE KEY-----'),
    caCertificate: pem('tlsCaCertificate', tls.caCertificate, '-----BEGIN CERTIFICATE-----'),
  };
  return {
    a, t,
    auth: h('fieldset', { 'data-pointer': '/auth', id: 'auth-fields' }, h('legend', {}, 'Endpoint authentication'),
      field('Type', '/auth/type', a.type), groups.bearer, groups.basic, groups.oauth2),
    tls: h('fieldset', { 'data-pointer': '/tls', id: 'tls-fields' }, h('legend', {}, 'Mutual TLS (https targets)'),
      h('div', { class: 'grid3' },
        field('Client certificate (PEM)', '/tls/clientCertificate', t.clientCertificate),
        field('Client key (PEM)', '/tls/clientKey', t.clientKey, hintFor(tls.clientKey === MASK, 'Write-only.')),
        field('CA certificate (PEM)', '/tls/caCertificate', t.caCertificate, 'Replaces the system roots for this target and its token URL.'))),
  };
}

function showSecret(secret, title) {
  const close = modal(title, h('div', {},
    h('p', {}, 'The signing secret. It is shown only now and through the secret endpoints; receivers verify ', h('code', {}, 'webhook-signature'), ' with it.'),
    h('pre', { class: 'secret', id: 'secret-value' }, secret)),
  [h('button', { class: 'btn', onclick: () => navigator.clipboard && navigator.clipboard.writeText(secret).then(() => toast('Copied', 'ok')) }, 'Copy'),
    h('button', { class: 'btn primary', onclick: () => close() }, 'Done')]);
}

function renderDetail(root, id, ctx) {
  let alive = true;
  let replays = null;
  const head = h('header', { class: 'page-head' });
  const left = h('div', {});
  const right = h('div', {});
  fill(root, h('a', { class: 'back', href: '#/subscriptions' }, '← Subscriptions'), head, h('div', { class: 'cols wide-left' }, left, right));

  const load = async () => {
    let sub;
    try {
      sub = await api('GET', '/api/subscriptions/' + encodeURIComponent(id));
    } catch (err) {
      fill(head, errorBox(err));
      return;
    }
    if (!alive) return;
    const setStatus = async (what) => {
      try {
        await api('POST', `/api/subscriptions/${sub.id}/${what}`);
        toast(what === 'pause' ? 'Paused: new events no longer match; pending jobs wait' : 'Resumed', 'ok');
        load();
      } catch (err) { toast(err.message, 'error'); }
    };
    const w = ctx.can('write');
    const open = sub.circuit && sub.circuit.state !== 'CLOSED';
    fill(head,
      h('div', {}, h('div', { class: 'eyebrow' }, 'Subscription'), h('h1', {}, sub.code),
        h('div', { class: 'head-meta' }, h('span', { id: 'sub-status' }, badge(sub.status)),
          sub.circuit ? h('span', { id: 'sub-circuit' }, circuitBadge(sub.circuit)) : null,
          h('span', { class: 'tag mode-' + sub.mode.toLowerCase() }, sub.mode.replaceAll('_', ' ')),
          h('span', { class: 'muted small' }, 'id ', h('span', { class: 'mono' }, sub.id))),
        h('div', { class: 'head-meta mono small', id: 'sub-destination', 'data-kind': kindOf(sub) }, targetCell(sub)),
        sub.statusReason ? h('div', { class: 'alert a-error status-reason', id: 'sub-status-reason' }, sub.statusReason) : null),
      h('div', { class: 'actions' },
        w && open && sub.status !== 'PAUSED' ? h('button', { class: 'btn', id: 'close-circuit', title: 'Close the circuit now: the waiting jobs go out at once',
          onclick: () => setStatus('resume') }, 'Close circuit') : null,
        h('a', { class: 'btn', href: '#/lanes/' + sub.id }, 'Lanes'),
        h('a', { class: 'btn', href: '#/jobs?subscription=' + encodeURIComponent(sub.code) }, 'Jobs'),
        ctx.can('postEvents') ? h('button', { class: 'btn', id: 'send-test', onclick: () => sendTest(sub) }, 'Send test event') : null,
        w ? h('button', { class: 'btn', id: 'replay', onclick: () => openReplay(sub, () => replays && replays.reload()) }, 'Replay') : null,
        w ? h('button', { class: 'btn', id: 'rotate-secret', onclick: () => rotate(sub) }, 'Rotate secret') : null,
        w ? (sub.status === 'PAUSED' ? h('button', { class: 'btn primary', id: 'resume', onclick: () => setStatus('resume') }, 'Resume') :
          h('button', { class: 'btn warn', id: 'pause', onclick: () => setStatus('pause') }, 'Pause')) : null));
    fill(left, renderForm(null, sub, ctx, () => load()),
      sub.delivery === 'pull' ? null : transformationCard(sub, ctx, () => load()));
    const secretBox = h('div', {});
    if (replays) replays.stop();
    replays = replayCard(sub);
    fill(right,
      sub.delivery === 'pull' ? null : healthCard(sub, () => alive),
      replays.el,
      sub.destination ? null : h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Signing')),
        h('p', { class: 'small muted' }, 'Deliveries carry Standard Webhooks signatures (', h('code', {}, 'webhook-signature'), '). During a rotation the old secret signs alongside the new one for 24 h.'),
        w ? h('button', { class: 'btn sm', onclick: async () => {
          try {
            const r = await api('GET', `/api/subscriptions/${sub.id}/secret`);
            fill(secretBox, r.secrets.map((x) => h('div', { class: 'secret-row' }, h('code', { class: 'secret' }, x.secret), h('span', { class: 'muted small' }, x.expiresAt ? 'expires ' + fmtTime(x.expiresAt) : 'current'))));
          } catch (err) { fill(secretBox, errorBox(err)); }
        } }, 'Reveal secrets') : null, secretBox),
      h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Record')), h('dl', { class: 'kv' },
        h('dt', {}, 'Created'), h('dd', {}, fmtTime(sub.createdAt)), h('dt', {}, 'Updated'), h('dd', {}, fmtTime(sub.updatedAt)),
        h('dt', {}, 'Delivery'), h('dd', {}, sub.delivery || 'push'), h('dt', {}, 'Client'), h('dd', {}, sub.clientId || '—'))));
  };
  load();
  return () => { alive = false; if (replays) replays.stop(); };
}

/** circuitBadge is the pill of a circuit's state (API.md §12). */
export function circuitBadge(c) {
  const b = badge(c.state, 'circuit');
  b.title = c.state === 'CLOSED' ? 'Circuit closed: deliveries run' :
    `Circuit ${c.state.replace('_', '-').toLowerCase()} after ${c.consecutiveFailures} consecutive failures` + (c.nextProbeAt ? `; next probe ${fmtTime(c.nextProbeAt)}` : '');
  b.prepend('circuit ');
  return b;
}

/** healthCard shows the subscription's circuit and its 1 h / 24 h health,
 * read from GET /api/subscriptions/{id}/health and refreshed every 5 s. */
function healthCard(sub, alive) {
  const body = h('div', {}, h('p', { class: 'muted small' }, 'Loading…'));
  const draw = (hv) => {
    const c = hv.circuit || { state: 'CLOSED', consecutiveFailures: 0 };
    const rate = (w) => (w.successRate === null ? '—' : (w.successRate * 100).toFixed(w.successRate === 1 ? 0 : 1) + '%');
    const lat = (w, k) => (w.latencyMs ? fmtMs(w.latencyMs[k]) : '—');
    fill(body,
      h('dl', { class: 'kv' },
        h('dt', {}, 'Circuit'), h('dd', { id: 'health-circuit', 'data-state': c.state }, circuitBadge(c),
          c.state !== 'CLOSED' && c.nextProbeAt ? h('span', { class: 'muted small' }, ' next probe ', ago(c.nextProbeAt)) : null),
        h('dt', {}, 'Consecutive failures'), h('dd', { id: 'health-failures' }, fmtNum(c.consecutiveFailures)),
        c.openedAt ? [h('dt', {}, 'Opened'), h('dd', {}, fmtTime(c.openedAt))] : null,
        h('dt', {}, 'Last success'), h('dd', {}, hv.lastSuccessAt ? fmtTime(hv.lastSuccessAt) + ' (' + ago(hv.lastSuccessAt) + ')' : '—'),
        h('dt', {}, 'Last failure'), h('dd', {}, hv.lastFailureAt ? fmtTime(hv.lastFailureAt) + ' (' + ago(hv.lastFailureAt) + ')' : '—'),
        hv.lastError ? [h('dt', {}, 'Last error'), h('dd', { class: 'mono small break text-error' }, hv.lastError)] : null),
      h('table', { class: 'table compact', id: 'health-windows' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Last'), h('th', { class: 'num', title: 'attempts' }, 'Sent'), h('th', { class: 'num' }, 'Failed'),
          h('th', { class: 'num', title: 'success rate' }, 'OK'), h('th', { class: 'num' }, 'p50'), h('th', { class: 'num' }, 'p95'), h('th', { class: 'num' }, 'p99'))),
        h('tbody', {}, hv.windows.map((w) => h('tr', { 'data-window': w.window },
          h('td', {}, w.window), h('td', { class: 'num' }, fmtNum(w.attempts)),
          h('td', { class: 'num' + (w.failed ? ' text-error' : ''), 'data-failed': w.failed }, fmtNum(w.failed)),
          h('td', { class: 'num strong' }, rate(w)), h('td', { class: 'num' }, lat(w, 'p50')), h('td', { class: 'num' }, lat(w, 'p95')),
          h('td', { class: 'num' }, lat(w, 'p99')))))),
      h('p', { class: 'small muted' }, 'Per-minute aggregates, up to 2 s behind; latency percentiles are estimated within histogram buckets.'));
  };
  const load = async () => {
    if (!alive()) return;
    try {
      draw(await api('GET', `/api/subscriptions/${sub.id}/health`));
    } catch (err) { fill(body, errorBox(err)); }
    if (alive()) setTimeout(load, 5000);
  };
  load();
  return h('section', { class: 'card', id: 'health-card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Endpoint health')), body);
}

async function rotate(sub) {
  try {
    const r = await api('POST', `/api/subscriptions/${sub.id}/rotate-secret`);
    showSecret(r.secret, 'Secret rotated');
    toast('The previous secret keeps signing until ' + fmtTime(r.previousExpiresAt), 'ok');
  } catch (err) { toast(err.message, 'error'); }
}

/** sendTest posts a real event of one of the subscription's types (every
 * subscription it matches gets it) and shows the jobs it created, or the
 * API's violations. */
function sendTest(sub) {
  const exact = (sub.eventTypes || []).map((e) => e.eventTypeCode).filter((c) => !c.includes('*'));
  const type = h('input', { id: 'test-type', value: exact[0] || '', list: 'test-types', placeholder: 'event type code', spellcheck: 'false' });
  const data = h('textarea', { id: 'test-data', rows: 6, class: 'mono', spellcheck: 'false' }, '{\n  "test": true\n}');
  const subject = h('input', { id: 'test-subject', value: 'test', spellcheck: 'false' });
  const out = h('div', { class: 'test-out' });
  const form = h('form', { class: 'form', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearErrors(form);
    let d;
    try { d = JSON.parse(data.value); } catch (err) {
      placeErrors(form, { problem: { detail: 'data is not valid JSON', errors: [{ pointer: '/data', message: err.message }] } });
      return;
    }
    const ev = { specversion: '1.0', id: 'ui-test-' + Date.now().toString(36) + Math.random().toString(36).slice(2, 8), source: '/dashboard', type: type.value.trim(), subject: subject.value.trim() || undefined, data: d };
    try {
      const r = await api('POST', '/api/events', ev, { 'Content-Type': 'application/cloudevents+json' });
      const mine = r.dispatchJobs.filter((j) => j.subscription === sub.code);
      fill(out, h('div', { class: 'alert a-ok' }, h('strong', {}, 'Accepted '), h('span', { class: 'mono' }, r.id), '. ',
        mine.length ? ['Job for this subscription: ', mine.map((j) => h('a', { class: 'mono', href: '#/jobs/' + j.id }, j.id))] :
          'It matched no job of this subscription (is it paused, or filtered out?).',
        r.dispatchJobs.length > mine.length ? h('div', { class: 'small muted' }, `${r.dispatchJobs.length - mine.length} other subscription(s) matched too.`) : null));
    } catch (err) {
      placeErrors(form, err);
    }
  } },
  h('div', { class: 'form-alert' }),
  h('datalist', { id: 'test-types' }, exact.map((c) => h('option', { value: c }))),
  h('div', { class: 'grid2' }, field('Event type', '/type', type), field('Subject', '/subject', subject)),
  field('Data', '/data', data, 'Validated against the type\'s current schema version.'),
  out,
  h('div', { class: 'modal-foot' }, h('button', { class: 'btn primary', type: 'submit', id: 'test-send' }, 'Send event')));
  modal('Send a test event', h('div', {}, h('p', { class: 'small muted' }, 'Posts a real CloudEvent to ', h('code', {}, 'POST /api/events'), ' from source ', h('code', {}, '/dashboard'), '.'), form));
}

