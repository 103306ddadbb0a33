// The dashboard shell: API key entry, the role's capabilities, the status
// stream shared by every view, and the hash router.
import { api, getKey, setKey, ApiError } from './api.js';
import { StatusStream } from './sse.js';
import { Rates } from './rates.js';
import { h, fill, modal } from './dom.js';
import * as overview from './views/overview.js';
import * as lanes from './views/lanes.js';
import * as jobs from './views/jobs.js';
import * as job from './views/job.js';
import * as subscriptions from './views/subscriptions.js';
import * as eventTypes from './views/event_types.js';

/** capabilities of each role (API.md conventions): admin does everything. */
const roleCan = {
  admin: ['read', 'stream', 'jobs', 'write', 'postEvents', 'platform'],
  viewer: ['read', 'stream', 'jobs', 'platform'],
  producer: ['jobs', 'postEvents'],
  worker: ['jobs'],
};

/**
 * Portal mode (API.md §11): the dashboard opened as /ui/?token=hlt_… for
 * one client. The token is kept for the browser session and removed from
 * the address bar; what is platform-wide (pools, the event type catalogue's
 * writes, bulk redrive) is not offered: a client-scoped key may not use it.
 */
const portalToken = new URLSearchParams(location.search).get('token');
if (portalToken) {
  setKey(portalToken);
  const url = new URL(location.href);
  url.searchParams.delete('token');
  history.replaceState(null, '', url.pathname + url.search + url.hash);
}

const ctx = {
  who: null,
  portal: false,
  can: (what) => !!(ctx.who && (roleCan[ctx.who.role] || []).includes(what) && !(ctx.portal && what === 'platform')),
  stream: null,
  rates: new Rates(15 * 60),
};

let cleanup = null;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, q] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(q || '') };
}

function route() {
  const view = document.getElementById('view');
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  if (!ctx.who) return;
  let { parts, query } = parseHash();
  if (parts.length === 0) {
    location.replace(ctx.can('stream') ? '#/overview' : '#/jobs');
    return;
  }
  const [top, arg] = parts;
  document.querySelectorAll('#nav a').forEach((a) => a.classList.toggle('active', a.dataset.nav === top));
  let mod = null;
  if (top === 'overview') mod = overview;
  else if (top === 'lanes') mod = lanes;
  else if (top === 'jobs') mod = arg ? job : jobs;
  else if (top === 'subscriptions') mod = subscriptions;
  else if (top === 'event-types') mod = eventTypes;
  fill(view);
  if (!mod) {
    view.append(h('div', { class: 'empty' }, h('h2', {}, 'Not found'), h('p', {}, 'No page at ', h('code', {}, location.hash))));
    return;
  }
  if (mod.needs && !ctx.can(mod.needs)) {
    view.append(h('div', { class: 'empty' }, h('h2', {}, 'Not available to your key'),
      h('p', {}, `The key “${ctx.who.name}” has the role ${ctx.who.role}, which may not read this page.`)));
    return;
  }
  window.scrollTo(0, 0);
  const c = mod.render(view, { parts, query, ctx });
  cleanup = typeof c === 'function' ? c : null;
}

/** brand shows the client's name in portal mode (title and side bar). */
function brand() {
  const name = ctx.portal ? ((ctx.who.client && ctx.who.client.name) || ctx.who.clientId) : 'Hooklane';
  document.title = ctx.portal ? `${name} — webhooks` : 'Hooklane';
  document.body.classList.toggle('portal', ctx.portal);
  const label = document.querySelector('.brand span');
  if (label) label.textContent = name;
  if (ctx.portal) document.querySelector('.brand').dataset.client = ctx.who.clientId;
}

function renderWho() {
  const who = document.getElementById('who');
  fill(who);
  if (!ctx.who) return;
  who.append(h('div', { class: 'who-name', title: 'API key name' }, ctx.who.name),
    h('span', { class: 'role r-' + ctx.who.role, 'data-role': ctx.who.role }, ctx.who.role));
  if (ctx.who.authEnabled || ctx.portal) {
    who.append(h('button', { class: 'link-btn', onclick: signOut }, 'Change key'));
  }
  document.querySelectorAll('#nav a').forEach((a) => { a.hidden = !ctx.can(a.dataset.needs); });
}

function signOut() {
  setKey('');
  ctx.who = null;
  if (ctx.stream) ctx.stream.stop();
  askKey('');
}

/** askKey shows the key dialog until a key the gateway accepts is given. */
function askKey(message) {
  const view = document.getElementById('view');
  fill(view);
  renderWho();
  const input = h('input', { type: 'password', id: 'api-key', name: 'api-key', autocomplete: 'off', placeholder: 'API key', required: true });
  const err = h('div', { class: 'field-error', hidden: !message }, message || '');
  const form = h('form', { class: 'key-form', id: 'key-form', onsubmit: async (e) => {
    e.preventDefault();
    setKey(input.value.trim());
    try {
      await signIn();
      close();
    } catch (ex) {
      setKey('');
      err.hidden = false;
      err.textContent = ex instanceof ApiError && ex.status === 401 ? 'The gateway does not know this key.' : ex.message;
    }
  } },
  h('p', { class: 'muted' }, 'This gateway requires an API key. It is kept for this browser session only (sessionStorage) and sent as ',
    h('code', {}, 'Authorization: Bearer …'), '. What the key\'s role may not do is hidden.'),
  h('label', { for: 'api-key' }, 'API key'), input, err,
  h('div', { class: 'modal-foot' }, h('button', { class: 'btn primary', type: 'submit' }, 'Sign in')));
  const close = modal('Sign in to Hooklane', form, [], { dismissable: false });
  input.focus();
}

async function signIn() {
  ctx.who = await api('GET', '/api/auth/whoami');
  ctx.portal = !!ctx.who.clientId;
  brand();
  renderWho();
  if (ctx.can('stream')) {
    if (!ctx.stream) {
      ctx.stream = new StatusStream({
        url: (lastId) => '/api/stream?types=event.accepted,dispatch.*' +
          (lastId ? '' : '&since=' + encodeURIComponent(new Date(Date.now() - ctx.rates.window * 1000).toISOString())),
        key: getKey,
      });
      ctx.stream.on((ce) => ctx.rates.add(ce));
      ctx.stream.onState(renderConn);
    }
    ctx.stream.restart();
  } else {
    renderConn('off');
  }
  route();
}

function renderConn(state, info = {}) {
  const el = document.getElementById('conn');
  const text = {
    idle: 'Offline', connecting: 'Connecting…', live: 'Live',
    reconnecting: 'Reconnecting…', unauthorized: 'Stream refused', off: 'No stream (role)',
  }[state] || state;
  el.className = 'conn conn-' + state;
  el.dataset.state = state;
  el.title = info.error ? `${info.error}; retry in ${Math.round((info.delay || 0) / 1000)} s` : '';
  el.querySelector('.conn-text').textContent = text;
  const banner = document.getElementById('conn-banner');
  banner.hidden = state !== 'reconnecting' && state !== 'unauthorized';
  banner.className = 'conn-banner ' + (state === 'unauthorized' ? 'bad' : 'warn');
  banner.textContent = state === 'unauthorized' ?
    'The status stream refused this key: live updates are off.' :
    `The status stream dropped: live updates are paused while it reconnects${info.delay ? ` (next try in ${Math.max(1, Math.round(info.delay / 1000))} s)` : ''}. Nothing is missed: it resumes from the last event seen.`;
}

window.addEventListener('hashchange', route);
window.addEventListener('hooklane:unauthorized', () => {
  // A portal's token may be revoked or expire even with API keys off.
  if (ctx.who && (ctx.who.authEnabled || ctx.portal)) {
    ctx.who = null;
    if (ctx.stream) ctx.stream.stop();
    askKey(ctx.portal ? 'Your access token was refused (expired or revoked); enter a new one.' : 'The key was refused; enter it again.');
  }
});

(async function boot() {
  try {
    await signIn();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setKey('');
      askKey(getKey() ? 'The stored key was refused.' : '');
      return;
    }
    fill(document.getElementById('view'), h('div', { class: 'empty' }, h('h2', {}, 'The gateway is not reachable'), h('p', {}, err.message)));
  }
})();
