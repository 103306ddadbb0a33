// Replay (API.md §13): send a subscription the stored events of a time
// range. A dialog starts one; a card on the subscription page lists its
// replays with their progress, refreshed while one runs.
import { api } from '../api.js';
import { h, fill, badge, fmtTime, fmtNum, errorBox, toast, modal, placeErrors, clearErrors } from '../dom.js';

/** localInput formats a Date for an <input type=datetime-local>. */
function localInput(d) {
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** toISO reads a datetime-local value as local time; '' stays ''. */
function toISO(v) {
  return v ? new Date(v).toISOString() : '';
}

/** openReplay opens the dialog that starts a replay of sub; onStarted gets
 * the replay the API answered. */
export function openReplay(sub, onStarted) {
  const since = h('input', { id: 'replay-since', type: 'datetime-local', value: localInput(new Date(Date.now() - 24 * 3600 * 1000)) });
  const until = h('input', { id: 'replay-until', type: 'datetime-local', value: '' });
  const types = h('input', { id: 'replay-types', placeholder: 'all the subscription binds', spellcheck: 'false' });
  const redeliver = h('input', { id: 'replay-redeliver', type: 'checkbox' });
  const f = (label, pointer, el, hint) => h('div', { class: 'field', 'data-pointer': pointer }, h('label', { for: el.id }, label), el, hint ? h('div', { class: 'hint' }, hint) : null);
  let close = () => {};
  const form = h('form', { class: 'form', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearErrors(form);
    const body = { since: toISO(since.value) || undefined, until: toISO(until.value) || undefined, redeliver: redeliver.checked };
    const codes = types.value.split(',').map((s) => s.trim()).filter(Boolean);
    if (codes.length) body.eventTypes = codes;
    try {
      const r = await api('POST', `/api/subscriptions/${sub.id}/replay`, body);
      toast('Replay started', 'ok');
      close();
      if (onStarted) onStarted(r);
    } catch (err) {
      placeErrors(form, err);
    }
  } },
  h('div', { class: 'form-alert' }),
  h('div', { class: 'grid2' },
    f('Since', '/since', since, 'Received at or after (your local time).'),
    f('Until', '/until', until, 'Received before; empty: now.')),
  f('Event types', '/eventTypes', types, 'Optional: codes or patterns, comma-separated, to narrow the replay.'),
  h('div', { class: 'field check', 'data-pointer': '/redeliver' }, h('label', {}, redeliver, ' Redeliver events that already have a job of this subscription (new webhook-id)')),
  h('div', { class: 'modal-foot' }, h('button', { class: 'btn primary', type: 'submit', id: 'replay-start' }, 'Start replay')));
  close = modal('Replay stored events', h('div', {},
    h('p', { class: 'small muted' }, 'Matches the stored events of the range against ', h('strong', {}, sub.code),
      ' as it is now and creates a job for each that has none. Runs in the background and survives restarts.'), form));
}

/** progress is how far through its time range the replay is: the
 * receive time of the last event it handled (position) within [since, until). */
function progress(r) {
  let pct = 0;
  if (r.status !== 'RUNNING') pct = 100;
  else if (r.position) {
    const s = Date.parse(r.since); const u = Date.parse(r.until);
    pct = u > s ? Math.max(0, Math.min(99, Math.floor(100 * (Date.parse(r.position) - s) / (u - s)))) : 0;
  }
  return h('div', { class: 'replay-bar', title: pct + '%', 'data-pct': String(pct) },
    h('div', { class: 'replay-fill' + (r.status === 'RUNNING' ? ' running' : ''), style: `width:${Math.max(pct, r.status === 'RUNNING' ? 4 : 0)}%` }));
}

/** replayRow shows one replay with its range and counters. */
function replayRow(r) {
  return h('div', { class: 'replay-row', 'data-replay': r.id, 'data-status': r.status },
    h('div', { class: 'replay-head' }, badge(r.status), h('span', { class: 'small' }, fmtTime(r.since), ' → ', fmtTime(r.until)),
      r.redeliver ? h('span', { class: 'tag' }, 'redeliver') : null),
    progress(r),
    h('div', { class: 'small muted replay-counts' },
      h('span', { class: 'replay-scanned' }, fmtNum(r.scanned)), ' scanned · ',
      h('span', { class: 'replay-matched' }, fmtNum(r.matched)), ' matched · ',
      h('span', { class: 'replay-created' }, fmtNum(r.created)), ' jobs created',
      r.error ? h('div', { class: 'field-error' }, r.error) : null));
}

/** replayCard returns the subscription page's Replays card, refreshed
 * every second while a replay runs; stop() ends the refresh. It returns
 * { el, reload, stop }. */
export function replayCard(sub) {
  const list = h('div', { id: 'replays' }, h('p', { class: 'muted small' }, 'Loading…'));
  const el = h('section', { class: 'card', id: 'replay-card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Replays')),
    h('p', { class: 'small muted' }, 'Backfills from stored history; an event that already has a job gets none unless redelivered.'), list);
  let timer = null;
  let stopped = false;
  const reload = async () => {
    clearTimeout(timer);
    if (stopped) return;
    try {
      const { items } = await api('GET', `/api/subscriptions/${sub.id}/replays?limit=10`);
      fill(list, items.length ? items.map(replayRow) : h('p', { class: 'muted small' }, 'No replay yet.'));
      if (items.some((r) => r.status === 'RUNNING')) timer = setTimeout(reload, 1000);
    } catch (err) {
      fill(list, errorBox(err));
    }
  };
  reload();
  return { el, reload, stop: () => { stopped = true; clearTimeout(timer); } };
}
