// Lanes: the message groups of a subscription as horizontal lanes of jobs,
// oldest on the left, following the stream. A BLOCK_ON_ERROR group held by a
// failing job is marked, with that job and one click to retry or cancel it.
import { api, listAll } from '../api.js';
import { h, fill, badge, shortId, throttle, errorBox, toast, ago } from '../dom.js';

export const needs = 'read';

const done = (s) => s === 'COMPLETED' || s === 'CANCELLED';
const maxChips = 36;

export function render(root, { parts, ctx }) {
  if (!parts[1]) return renderPicker(root);
  return renderLanes(root, parts[1], ctx);
}

function renderPicker(root) {
  const list = h('div', { class: 'pick-grid' }, h('p', { class: 'muted' }, 'Loading…'));
  fill(root, h('header', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Lanes'), h('p', { class: 'muted' }, 'Pick a subscription to see its message groups.'))), list);
  listAll('/api/subscriptions', {}, 1000).then(({ items }) => {
    fill(list, items.length ? items.map((s) => h('a', { class: 'card pick', href: '#/lanes/' + s.id, 'data-sub': s.code },
      h('div', { class: 'strong' }, s.code), h('div', { class: 'muted small' }, s.name || s.target || ''),
      h('div', { class: 'pick-foot' }, h('span', { class: 'tag mode-' + s.mode.toLowerCase() }, s.mode.replaceAll('_', ' ')), badge(s.status)))) :
      h('div', { class: 'empty' }, h('p', {}, 'No subscriptions yet. ', h('a', { href: '#/subscriptions/new' }, 'Create one'), '.')));
  }).catch((err) => fill(list, errorBox(err)));
  return null;
}

/** laneState finds the head of a lane (its first unfinished job) and whether it holds the group. */
export function laneState(mode, jobs) {
  const head = jobs.find((j) => !done(j.status));
  if (!head || mode !== 'BLOCK_ON_ERROR') return { head, blocked: false };
  const failing = head.status === 'ERROR' || (head.attemptCount > 0 && !!head.lastError && head.status !== 'IN_PROGRESS');
  const holding = jobs.some((j) => j.blockedBy === head.id);
  return { head, blocked: failing || holding, waiting: jobs.filter((j) => j !== head && !done(j.status)).length };
}

function renderLanes(root, subId, ctx) {
  let alive = true;
  let sub = null;
  let filter = '';
  const head = h('header', { class: 'page-head' });
  const summary = h('div', { class: 'lane-summary' });
  const box = h('div', { class: 'lanes', id: 'lanes' }, h('p', { class: 'muted' }, 'Loading…'));
  fill(root, h('a', { class: 'back', href: '#/lanes' }, '← Lanes'), head, summary,
    h('div', { class: 'lane-tools' }, h('input', { type: 'search', placeholder: 'Filter groups', 'aria-label': 'Filter groups',
      oninput: (e) => { filter = e.target.value.trim(); load(); } }),
    h('div', { class: 'legend' }, ['PENDING', 'QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR', 'CANCELLED'].map((s) =>
      h('span', {}, h('span', { class: 'chip-dot s-' + s.toLowerCase() }), s.replace('_', ' '))))), box);

  const act = async (jobId, what) => {
    try {
      await api('POST', `/api/dispatch-jobs/${jobId}/${what}`);
      toast(what === 'retry' ? 'Job sent back to the queue' : 'Job cancelled: the group moves on', 'ok');
      load();
    } catch (err) { toast(err.message, 'error'); }
  };

  const load = async () => {
    try {
      if (!sub) {
        sub = await api('GET', '/api/subscriptions/' + encodeURIComponent(subId));
        fill(head, h('div', {}, h('div', { class: 'eyebrow' }, 'Lanes'), h('h1', {}, sub.code),
          h('div', { class: 'head-meta' }, h('span', { class: 'tag mode-' + sub.mode.toLowerCase() }, sub.mode.replaceAll('_', ' ')), badge(sub.status),
            h('span', { class: 'muted mono small' }, sub.target || ''))),
        h('div', { class: 'actions' }, h('a', { class: 'btn', href: '#/jobs?subscription=' + encodeURIComponent(sub.code) }, 'Jobs table'),
          h('a', { class: 'btn', href: '#/subscriptions/' + sub.id }, 'Subscription')));
      }
      const { items, more } = await listAll('/api/dispatch-jobs', { subscription: sub.code }, 1000);
      if (!alive) return;
      const groups = new Map();
      for (const j of items) {
        const g = j.messageGroup || '';
        if (!groups.has(g)) groups.set(g, []);
        groups.get(g).push(j);
      }
      let lanes = [...groups.entries()].map(([g, js]) => {
        js.sort((a, b) => (a.id < b.id ? -1 : 1));
        return { group: g, jobs: js, ...laneState(sub.mode, js), last: js[js.length - 1].id };
      });
      const blockedCount = lanes.filter((l) => l.blocked).length;
      const inflight = items.filter((j) => j.status === 'IN_PROGRESS').length;
      fill(summary,
        h('div', { class: 'sum' }, h('div', { class: 'sum-num' }, String(lanes.length)), h('div', { class: 'muted small' }, 'groups')),
        h('div', { class: 'sum' + (blockedCount ? ' bad' : '') , id: 'blocked-count' }, h('div', { class: 'sum-num' }, String(blockedCount)), h('div', { class: 'muted small' }, 'blocked')),
        h('div', { class: 'sum' }, h('div', { class: 'sum-num' }, String(inflight)), h('div', { class: 'muted small' }, 'in flight')),
        h('div', { class: 'sum' }, h('div', { class: 'sum-num' }, items.length + (more ? '+' : '')), h('div', { class: 'muted small' }, 'recent jobs')));
      if (filter) lanes = lanes.filter((l) => l.group.includes(filter));
      lanes.sort((a, b) => (a.blocked !== b.blocked ? (a.blocked ? -1 : 1) : a.last < b.last ? 1 : -1));
      const prefix = sub.code + ':';
      fill(box, lanes.length ? lanes.slice(0, 60).map((l) => lane(l, prefix, ctx, act)) :
        h('div', { class: 'empty' }, h('p', {}, 'No jobs for this subscription yet.')));
    } catch (err) {
      if (alive) fill(box, errorBox(err));
    }
  };
  load();
  const reload = throttle(load, 1000);
  const off = ctx.stream.on((ce) => {
    if (!ce.type.startsWith('dispatch.')) return;
    if (!sub || (ce.data && ce.data.subscription === sub.code)) reload();
  });
  const poll = setInterval(reload, 15000);
  return () => { alive = false; off(); reload.cancel(); clearInterval(poll); };
}

function lane(l, prefix, ctx, act) {
  const name = l.group ? (l.group.startsWith(prefix) ? l.group.slice(prefix.length) : l.group) : '(no group)';
  const shown = l.jobs.slice(-maxChips);
  const hidden = l.jobs.length - shown.length;
  const counts = { done: l.jobs.filter((j) => j.status === 'COMPLETED').length, total: l.jobs.length };
  const track = h('div', { class: 'track' },
    hidden > 0 ? h('span', { class: 'more-chips muted small' }, `+${hidden}`) : null,
    shown.map((j) => h('a', {
      class: 'job-chip s-' + j.status.toLowerCase() + (l.head === j ? ' head' : '') + (j.blockedBy ? ' held' : ''),
      href: '#/jobs/' + j.id, title: `${j.id}\n${j.status}${j.attemptCount ? ` · attempt ${j.attemptCount}/${j.maxAttempts}` : ''}${j.lastError ? '\n' + j.lastError : ''}`,
      'data-job': j.id, 'data-status': j.status, 'aria-label': `job ${shortId(j.id)} ${j.status}`,
    })));
  const el = h('div', { class: 'lane' + (l.blocked ? ' blocked' : ''), 'data-group': l.group, 'data-blocked': l.blocked ? 'true' : 'false' },
    h('div', { class: 'lane-label' }, h('div', { class: 'mono strong ellipsis', title: l.group }, name),
      h('div', { class: 'muted small' }, `${counts.done}/${counts.total} delivered`), l.blocked ? h('span', { class: 'tag bad' }, 'BLOCKED') : null),
    track);
  if (l.blocked) {
    const j = l.head;
    el.append(h('div', { class: 'lane-alert', role: 'alert' },
      h('div', {}, h('strong', {}, 'Held by failing job '), h('a', { class: 'mono', href: '#/jobs/' + j.id }, shortId(j.id)), ' ', badge(j.status),
        h('span', { class: 'small' }, ` attempt ${j.attemptCount}/${j.maxAttempts}`),
        j.lastError ? h('div', { class: 'small text-error' }, j.lastError) : null,
        h('div', { class: 'small muted' }, `${l.waiting} job${l.waiting === 1 ? '' : 's'} waiting behind it`, j.nextAttemptAt && j.status !== 'ERROR' ? ` · next attempt ${ago(j.nextAttemptAt)}` : '')),
      ctx.can('write') ? h('div', { class: 'actions' },
        j.status === 'ERROR' ? h('button', { class: 'btn primary sm', 'data-action': 'retry', onclick: () => act(j.id, 'retry') }, 'Retry') : null,
        h('button', { class: 'btn danger sm', 'data-action': 'cancel', onclick: () => act(j.id, 'cancel') }, 'Cancel job')) : null));
  }
  return el;
}
