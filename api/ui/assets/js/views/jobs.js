// Jobs: a filterable table that follows the stream, and the bulk redrive
// of the filtered ERROR or CANCELLED jobs.
import { api, listAll, qs } from '../api.js';
import { h, fill, badge, codeBadge, fmtTime, fmtMs, ago, shortId, throttle, errorBox, toast, modal } from '../dom.js';
import { kindOfTarget, kindBadge, WEBHOOK } from './destination.js';

export const needs = 'jobs';

const statuses = ['PENDING', 'QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR', 'CANCELLED'];
const windows = { '': 'Any time', 15: 'Last 15 min', 60: 'Last hour', 1440: 'Last 24 h' };

export function render(root, { query, ctx }) {
  const f = {
    status: query.get('status') || '', subscription: query.get('subscription') || '',
    eventType: query.get('eventType') || '', messageGroup: query.get('messageGroup') || '', window: query.get('window') || '',
  };
  const setFilter = (k, v) => {
    const next = { ...f, [k]: v };
    location.hash = '#/jobs' + qs(next);
  };
  const subSelect = h('select', { name: 'subscription', 'aria-label': 'Subscription', onchange: (e) => setFilter('subscription', e.target.value) },
    h('option', { value: '' }, 'All subscriptions'), f.subscription ? h('option', { value: f.subscription, selected: true }, f.subscription) : null);
  const text = (k, ph) => h('input', { type: 'search', name: k, value: f[k], placeholder: ph, 'aria-label': ph,
    onchange: (e) => setFilter(k, e.target.value.trim()) });
  const summary = h('span', { class: 'muted small', id: 'jobs-summary' });
  const bulk = h('div', { class: 'bulk' });
  const tbody = h('tbody', {});
  const more = h('div', { class: 'table-foot' });
  fill(root,
    h('header', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Jobs'), h('p', { class: 'muted' }, 'Dispatch jobs, newest first; the table follows the status stream.')), bulk),
    h('div', { class: 'filters card' },
      h('div', { class: 'chips', role: 'group', 'aria-label': 'Status' },
        ['', ...statuses].map((s) => h('button', { class: 'chip' + (f.status === s ? ' on' : ''), 'data-filter-status': s || 'ALL', onclick: () => setFilter('status', s) }, s ? s.replace('_', ' ') : 'All'))),
      h('div', { class: 'filter-row' }, subSelect, text('eventType', 'Event type'), text('messageGroup', 'Message group'),
        h('select', { name: 'window', 'aria-label': 'Created', onchange: (e) => setFilter('window', e.target.value) },
          Object.entries(windows).map(([k, v]) => h('option', { value: k, selected: f.window === k }, v))),
        summary)),
    h('div', { class: 'card flush' }, h('table', { class: 'table jobs-table', id: 'jobs-table' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Status'), h('th', {}, 'Job'), h('th', {}, 'Subscription'), h('th', {}, 'Event type'),
        h('th', {}, 'Group'), h('th', { class: 'num' }, 'Attempts'), h('th', {}, 'Last answer'), h('th', {}, 'Created'))),
      tbody), more));

  if (ctx.can('read')) {
    listAll('/api/subscriptions', {}, 1000).then(({ items }) => {
      for (const s of items) if (s.code !== f.subscription) subSelect.append(h('option', { value: s.code }, s.code));
    }).catch(() => {});
  }

  let pages = 1;
  let alive = true;
  let seen = new Map();
  const params = () => {
    const p = { status: f.status, subscription: f.subscription, eventType: f.eventType, messageGroup: f.messageGroup };
    if (f.window) p.since = new Date(Date.now() - Number(f.window) * 60000).toISOString();
    return p;
  };
  const load = async () => {
    try {
      const { items, more: hasMore } = await listAll('/api/dispatch-jobs', params(), 100 * pages);
      if (!alive) return;
      // Rows whose job is new or changed status since the last load flash.
      const rows = items.map((j) => {
        const r = row(j);
        if (seen.size && seen.get(j.id) !== j.status) r.classList.add('flash');
        return r;
      });
      seen = new Map(items.map((j) => [j.id, j.status]));
      fill(tbody, rows.length ? rows : h('tr', {}, h('td', { colspan: 8, class: 'empty-row' }, 'No jobs match these filters.')));
      summary.textContent = `${items.length}${hasMore ? '+' : ''} job${items.length === 1 ? '' : 's'}`;
      fill(more, hasMore ? h('button', { class: 'btn', onclick: () => { pages++; load(); } }, 'Load more') : null);
      drawBulk(items.length, hasMore);
    } catch (err) {
      if (alive) fill(tbody, h('tr', {}, h('td', { colspan: 8 }, errorBox(err))));
    }
  };
  const drawBulk = (n, hasMore) => {
    fill(bulk);
    if (!ctx.can('write') || !ctx.can('platform') || (f.status !== 'ERROR' && f.status !== 'CANCELLED') || n === 0) return;
    bulk.append(h('button', { class: 'btn primary', id: 'bulk-retry', onclick: () => {
      const close = modal('Redrive jobs', h('p', {}, `Retry every ${f.status} job matching these filters (${n}${hasMore ? '+' : ''})? Each goes back to PENDING with a fresh set of attempts.`), [
        h('button', { class: 'btn', onclick: () => close() }, 'Cancel'),
        h('button', { class: 'btn primary', id: 'bulk-retry-confirm', onclick: async () => {
          close();
          try {
            const p = params();
            const r = await api('POST', '/api/dispatch-jobs/retry', { status: f.status, subscription: p.subscription || undefined, eventType: p.eventType || undefined, since: p.since });
            toast(`${r.count} job${r.count === 1 ? '' : 's'} sent back to the queue`, 'ok');
            load();
          } catch (err) { toast(err.message, 'error'); }
        } }, 'Retry all')]);
    } }, `Retry all (${n}${hasMore ? '+' : ''})`));
  };
  load();
  const reload = throttle(load, 800);
  const off = ctx.stream ? ctx.stream.on((ce) => { if (ce.type.startsWith('dispatch.')) reload(); }) : () => {};
  const poll = setInterval(reload, ctx.stream ? 15000 : 3000);
  const ages = setInterval(() => tbody.querySelectorAll('[data-ago]').forEach((e) => { e.textContent = ago(e.dataset.ago); }), 5000);
  return () => { alive = false; off(); reload.cancel(); clearInterval(poll); clearInterval(ages); };
}

function row(j) {
  const atts = j.attempts || [];
  const last = atts.filter((a) => a.worker !== 'operator').pop();
  const group = j.messageGroup && j.subscription && j.messageGroup.startsWith(j.subscription + ':') ? j.messageGroup.slice(j.subscription.length + 1) : j.messageGroup;
  return h('tr', { 'data-job': j.id, 'data-status': j.status, class: 'clickable', onclick: (e) => { if (!e.target.closest('a')) location.hash = '#/jobs/' + j.id; } },
    h('td', {}, badge(j.status), j.blockedBy ? h('span', { class: 'tag warn', title: 'held back by ' + j.blockedBy }, 'held') : null),
    h('td', { class: 'mono' }, h('a', { href: '#/jobs/' + j.id, title: j.id }, shortId(j.id))),
    h('td', {}, j.subscription || h('span', { class: 'muted' }, j.kind === 'TASK' ? 'task' : '—')),
    h('td', { class: 'mono small' }, j.code),
    h('td', { class: 'mono small ellipsis', title: j.messageGroup || '' }, group || h('span', { class: 'muted' }, '—')),
    h('td', { class: 'num' }, `${j.attemptCount}/${j.maxAttempts}`),
    h('td', { class: 'nowrap' }, last ? [brokerKind(j) ? kindBadge(brokerKind(j)) : codeBadge(last.statusCode), h('span', { class: 'small muted' }, ' ' + fmtMs(last.durationMs))] : h('span', { class: 'muted' }, '—'), last && last.error ? h('span', { class: 'small muted ellipsis err-snippet', title: last.error }, ' ' + last.error) : null),
    h('td', { class: 'small', title: fmtTime(j.createdAt) }, h('span', { 'data-ago': j.createdAt }, ago(j.createdAt))));
}

/** brokerKind is the broker type a job publishes to ('' for a webhook or
 * a pull job): its last answer has no HTTP status (API.md §15). */
function brokerKind(j) {
  const k = kindOfTarget(j.targetUrl);
  return k === WEBHOOK ? '' : k;
}
