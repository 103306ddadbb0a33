// A job page: its event, the attempts timeline and the retry / cancel
// actions, refreshed live from the stream.
import { api } from '../api.js';
import { h, fill, badge, codeBadge, fmtTime, fmtMs, ago, jsonView, throttle, errorBox, toast } from '../dom.js';
import { kindOfTarget, kindBadge, WEBHOOK } from './destination.js';

export const needs = 'jobs';

const retryable = ['ERROR', 'CANCELLED'];
const cancellable = ['PENDING', 'QUEUED', 'ERROR', 'IN_PROGRESS'];

export function render(root, { parts, ctx }) {
  const id = parts[1];
  let alive = true;
  let eventShown = false;
  const head = h('header', { class: 'page-head' });
  const facts = h('section', { class: 'card' });
  const timeline = h('section', { class: 'card' });
  const eventBox = h('section', { class: 'card' });
  const historyBox = h('section', { class: 'card' });
  fill(root, h('a', { class: 'back', href: '#/jobs' }, '← Jobs'), head, h('div', { class: 'cols wide-left' }, h('div', {}, timeline, eventBox), h('div', {}, facts, historyBox)));

  const act = async (what) => {
    try {
      const j = await api('POST', `/api/dispatch-jobs/${id}/${what}`);
      toast(what === 'retry' ? 'Job sent back to the queue' : 'Job cancelled', 'ok');
      draw(j);
      load();
    } catch (err) { toast(err.message, 'error'); }
  };

  const draw = (j) => {
    // A job to a message broker (API.md §15): its attempts have no HTTP
    // status; success is the broker's acknowledgement, which the attempt
    // keeps as its responseBody ("stream ORDERS seq 7", "partition 2 offset 41").
    const kind = kindOfTarget(j.targetUrl);
    const broker = kind !== '' && kind !== WEBHOOK;
    fill(head,
      h('div', {}, h('div', { class: 'eyebrow' }, j.kind === 'TASK' ? 'Task job' : 'Dispatch job'),
        h('h1', { class: 'mono', id: 'job-id' }, j.id),
        h('div', { class: 'head-meta' }, h('span', { id: 'job-status' }, badge(j.status, 'lg')),
          j.blockedBy ? h('span', { class: 'tag warn' }, j.blockedBy === 'subscription-paused' ? 'held: subscription paused' : j.blockedBy === 'circuit-open' ? 'held: circuit open, waiting for its probe' : h('span', {}, 'held by ', h('a', { href: '#/jobs/' + j.blockedBy, class: 'mono' }, j.blockedBy))) : null,
          j.nextAttemptAt && (j.status === 'PENDING' || j.status === 'QUEUED') ? h('span', { class: 'muted' }, 'next attempt ' + ago(j.nextAttemptAt)) : null)),
      ctx.can('write') ? h('div', { class: 'actions' },
        retryable.includes(j.status) ? h('button', { class: 'btn primary', id: 'job-retry', onclick: () => act('retry') }, 'Retry') : null,
        cancellable.includes(j.status) ? h('button', { class: 'btn danger', id: 'job-cancel', onclick: () => act('cancel') }, 'Cancel') : null) : null);

    const kv = (k, v) => [h('dt', {}, k), h('dd', {}, v === undefined || v === null || v === '' ? h('span', { class: 'muted' }, '—') : v)];
    fill(facts, h('div', { class: 'card-head' }, h('h2', {}, 'Details')), h('dl', { class: 'kv' },
      kv('Subscription', j.subscription ? (ctx.can('read') && j.subscriptionId ? h('a', { href: '#/subscriptions/' + j.subscriptionId }, j.subscription) : j.subscription) : null),
      kv('Event type', j.code ? h('span', { class: 'mono' }, j.code) : null),
      kv(broker ? 'Destination' : 'Target', j.targetUrl ? h('span', { id: 'job-target', 'data-kind': kind }, kind ? [kindBadge(kind), ' '] : null, h('span', { class: 'mono break' }, j.targetUrl)) : (j.delivery === 'pull' ? 'pull worker' : null)),
      kv('Mode', j.mode),
      kv('Message group', j.messageGroup ? (ctx.can('read') && j.subscriptionId ? h('a', { class: 'mono', href: '#/lanes/' + j.subscriptionId }, j.messageGroup) : h('span', { class: 'mono' }, j.messageGroup)) : null),
      kv('Attempts', `${j.attemptCount} of ${j.maxAttempts}`),
      kv('Retry policy', `${j.retry.maxAttempts} attempt${j.retry.maxAttempts === 1 ? '' : 's'}, backoff ${j.retry.initialBackoffSeconds}s → ${j.retry.maxBackoffSeconds}s`),
      kv('Timeout', j.timeoutSeconds + ' s'),
      kv('Correlation', j.correlationId ? h('span', { class: 'mono' }, j.correlationId) : null),
      kv('Last error', j.lastError ? h('span', { class: 'text-error' }, j.lastError) : null),
      kv('Created', fmtTime(j.createdAt)),
      kv('Updated', fmtTime(j.updatedAt)),
      kv('Completed', j.completedAt ? fmtTime(j.completedAt) : null)));

    // Operator actions are not attempts (API.md §5): they come from the
    // status history, merged into the timeline by time (jobs written before
    // that kept them in attempts, by worker "operator").
    const operatorActions = (j.history || []).filter((e) => e.data && typeof e.data.error === 'string' && / by an operator$/.test(e.data.error))
      .map((e) => ({ worker: 'operator', action: e.type === 'dispatch.cancelled' ? 'CANCELLED' : 'RETRIED', startedAt: e.time }));
    const attempts = [...(j.attempts || []), ...operatorActions]
      .sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0)).reverse();
    fill(timeline, h('div', { class: 'card-head' }, h('h2', {}, 'Attempts'), h('span', { class: 'muted small' }, `${(j.attempts || []).filter((a) => a.worker !== 'operator').length} of ${j.maxAttempts} used`)),
      attempts.length ? h('ol', { class: 'timeline', id: 'attempts' }, attempts.map((a) => {
        if (a.worker === 'operator') {
          // An operator's action recorded in the audit log, not a delivery.
          return h('li', { class: 'tl-item audit', 'data-action': a.action || '' }, h('div', { class: 'tl-dot' }),
            h('div', { class: 'tl-body' }, h('div', { class: 'tl-head' }, h('strong', {}, (a.action || 'Changed').toLowerCase().replace(/^./, (c) => c.toUpperCase()) + ' by an operator'),
              h('span', { class: 'muted small' }, fmtTime(a.startedAt))), a.error ? h('div', { class: 'small muted' }, a.error) : null));
        }
        const ok = broker ? !a.error : a.statusCode >= 200 && a.statusCode < 300 && !a.error;
        return h('li', { class: 'tl-item ' + (ok ? 'ok' : 'fail'), 'data-attempt': a.attempt },
          h('div', { class: 'tl-dot' }),
          h('div', { class: 'tl-body' },
            h('div', { class: 'tl-head' }, h('strong', {}, `Attempt ${a.attempt}`), a.action ? h('span', { class: 'tag' }, a.action) : null,
              broker ? kindBadge(kind) : codeBadge(a.statusCode), h('span', { class: 'muted small' }, fmtMs(a.durationMs)),
              h('span', { class: 'muted small' }, fmtTime(a.startedAt)), a.worker ? h('span', { class: 'muted small mono' }, a.worker) : null),
            a.error ? h('div', { class: 'text-error small' }, a.error) : null,
            broker && a.responseBody ? h('div', { class: 'broker-answer', 'data-broker-answer': a.attempt }, h('span', { class: 'muted' }, ok ? 'Broker acknowledged: ' : 'Broker answered: '), h('code', {}, a.responseBody)) : null,
            !broker && a.responseBody ? h('details', {}, h('summary', { class: 'small' }, 'Response body'), h('pre', { class: 'body' }, a.responseBody)) : null));
      })) : h('p', { class: 'muted' }, j.status === 'QUEUED' || j.status === 'PENDING' ? 'Not attempted yet.' : 'No attempts.'));

    if (j.history) {
      fill(historyBox, h('div', { class: 'card-head' }, h('h2', {}, 'Status history')),
        h('ul', { class: 'history' }, j.history.map((e) => h('li', {}, h('span', { class: 'mono small ev-type' }, e.type.replace('dispatch.', '')),
          h('span', { class: 'muted small' }, fmtTime(e.time)),
          e.data && e.data.statusCode ? codeBadge(e.data.statusCode) : null,
          e.data && e.data.error ? h('span', { class: 'small text-error ellipsis' }, e.data.error) : null))));
    }
    if (!eventShown) {
      eventShown = true;
      if (j.eventId) {
        fill(eventBox, h('div', { class: 'card-head' }, h('h2', {}, 'Event'), h('span', { class: 'mono small muted' }, j.eventId)), h('p', { class: 'muted' }, 'Loading…'));
        api('GET', '/api/events/' + j.eventId).then((ev) => {
          if (alive) fill(eventBox, h('div', { class: 'card-head' }, h('h2', {}, 'Event'), h('span', { class: 'mono small muted' }, ev.id)), jsonView(ev.event));
        }).catch((err) => { if (alive) fill(eventBox, h('div', { class: 'card-head' }, h('h2', {}, 'Event')), errorBox(err)); });
      } else if (j.payload !== undefined) {
        let payload = j.payload;
        try { payload = JSON.parse(atob(j.payload)); } catch { /* shown as stored */ }
        fill(eventBox, h('div', { class: 'card-head' }, h('h2', {}, 'Payload')), jsonView(payload));
      } else {
        eventBox.remove();
      }
    }
  };

  const load = async () => {
    try {
      const j = await api('GET', `/api/dispatch-jobs/${encodeURIComponent(id)}?include=history`);
      if (alive) draw(j);
    } catch (err) {
      if (alive) fill(head, errorBox(err));
    }
  };
  load();
  const reload = throttle(load, 400);
  const off = ctx.stream ? ctx.stream.on((ce) => { if (ce.subject === id) reload(); }) : () => {};
  const poll = setInterval(reload, ctx.stream ? 15000 : 3000);
  return () => { alive = false; off(); reload.cancel(); clearInterval(poll); };
}
