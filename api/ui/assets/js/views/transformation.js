// The transformation card of a subscription's page (API.md §16): an editor
// for the handler's code with line numbers, a sample event prefilled from
// the latest event the subscription matches, a "Test" button that runs the
// code on it through POST …/transformation/test (nothing is sent or
// stored) and shows the result or the error at its line, and a save
// through PATCH.
import { api } from '../api.js';
import { h, fill, fmtTime, jsonView, toast, errorBox } from '../dom.js';

/** starter is the code a subscription without a transformation starts from. */
const starter = `function handler(webhook) {
  // webhook: {method, url, headers, payload, eventType, eventId, attempt, cancel}
  return webhook;
}
`;

let styled = false;

/** style loads the card's style sheet once (the CSP allows this origin's sheets only). */
function style() {
  if (styled) return;
  styled = true;
  document.head.append(h('link', { rel: 'stylesheet', href: 'transformation.css' }));
}

/**
 * editor is a textarea with a line-number gutter that follows its lines and
 * its scrolling; mark(line) highlights one line (0: none).
 */
export function editor(id, value, readOnly) {
  const gutter = h('div', { class: 'tx-gutter', 'aria-hidden': 'true' });
  const area = h('textarea', { id, class: 'tx-code', spellcheck: 'false', wrap: 'off', rows: 14, autocomplete: 'off', 'aria-label': 'Transformation code' });
  area.value = value;
  area.readOnly = !!readOnly;
  let marked = 0;
  const draw = () => {
    const n = area.value.split('\n').length;
    if (gutter.childElementCount !== n) {
      fill(gutter, Array.from({ length: n }, (_, i) => h('div', { 'data-line': i + 1, class: i + 1 === marked ? 'tx-err' : null }, String(i + 1))));
    }
    gutter.scrollTop = area.scrollTop;
  };
  area.addEventListener('input', draw);
  area.addEventListener('scroll', () => { gutter.scrollTop = area.scrollTop; });
  draw();
  const mark = (line) => {
    marked = line || 0;
    for (const el of gutter.children) el.classList.toggle('tx-err', Number(el.dataset.line) === marked);
    if (!marked) return;
    // Put the caret at the start of the line and scroll it into view.
    const lines = area.value.split('\n');
    const at = lines.slice(0, Math.min(marked, lines.length) - 1).reduce((n, l) => n + l.length + 1, 0);
    area.setSelectionRange(at, at);
    const lh = parseFloat(getComputedStyle(area).lineHeight) || 18;
    area.scrollTop = Math.max(0, (marked - 3) * lh);
    gutter.scrollTop = area.scrollTop;
  };
  return { el: h('div', { class: 'tx-editor' }, gutter, area), area, mark };
}

/**
 * latestEvent finds the newest stored event the subscription matches:
 * GET /api/events?type=…&limit=1 per exact type (items are newest first),
 * and the newest page filtered by prefix for a glob. null when none.
 */
export async function latestEvent(sub) {
  const found = [];
  for (const et of sub.eventTypes || []) {
    const code = et.eventTypeCode;
    if (!code.includes('*')) {
      const page = await api('GET', '/api/events?type=' + encodeURIComponent(code) + '&limit=1');
      if (page.items.length) found.push(page.items[0]);
      continue;
    }
    const prefix = code.slice(0, code.indexOf('*'));
    const page = await api('GET', '/api/events?limit=50');
    const hit = page.items.find((e) => e.event && e.event.type.startsWith(prefix));
    if (hit) found.push(hit);
  }
  found.sort((a, b) => String(b.receivedAt).localeCompare(String(a.receivedAt)));
  return found[0] || null;
}

/** sampleFor is a CloudEvent to try the code on when no event was stored yet. */
function sampleFor(sub) {
  const exact = (sub.eventTypes || []).map((e) => e.eventTypeCode).find((c) => !c.includes('*'));
  return { specversion: '1.0', id: 'sample-1', source: '/dashboard', type: exact || 'example.created', data: { example: true } };
}

/** transformationCard builds the card; onSaved runs after a save. */
export function transformationCard(sub, ctx, onSaved) {
  style();
  const w = ctx.can('write');
  const t = sub.transformation || null;
  const code = editor('transform-code', t ? t.code : starter, !w);
  const enabled = h('input', { type: 'checkbox', id: 'transform-enabled', checked: t ? t.enabled !== false : true, disabled: !w });
  const event = h('textarea', { id: 'transform-event', class: 'mono tx-event', rows: 8, spellcheck: 'false', readOnly: !w });
  const source = h('div', { class: 'hint', id: 'transform-sample-source' }, 'Looking for the latest matching event…');
  const out = h('div', { id: 'transform-out', class: 'tx-out' });
  const state = h('span', { id: 'transform-state', class: 'tag' }, t ? (t.enabled === false ? 'disabled' : 'on') : 'none');

  latestEvent(sub).then((ev) => {
    if (ev) {
      event.value = JSON.stringify(ev.event, null, 2);
      fill(source, 'The latest matching event: ', h('span', { class: 'mono' }, ev.event.type), ', received ', fmtTime(ev.receivedAt), ' (', h('span', { class: 'mono' }, ev.id), ').');
      source.dataset.from = 'latest';
      source.dataset.eventId = ev.id;
    } else {
      event.value = JSON.stringify(sampleFor(sub), null, 2);
      fill(source, 'No matching event stored yet: a sample to edit.');
      source.dataset.from = 'sample';
    }
  }).catch((err) => {
    event.value = JSON.stringify(sampleFor(sub), null, 2);
    fill(source, 'The latest event could not be read (', err.message, '): a sample to edit.');
    source.dataset.from = 'sample';
  });

  const showError = (msg, line, column) => {
    code.mark(line);
    fill(out, h('div', { class: 'alert a-error', id: 'transform-error', 'data-line': line || '', 'data-column': column || '' },
      line ? h('strong', {}, `Line ${line}, column ${column}: `) : null, msg));
  };
  const test = async () => {
    let ev;
    try { ev = JSON.parse(event.value); } catch (err) {
      showError('the sample event is not valid JSON: ' + err.message, 0, 0);
      return;
    }
    testBtn.disabled = true;
    try {
      const r = await api('POST', `/api/subscriptions/${sub.id}/transformation/test`, { event: ev, code: code.area.value });
      if (r.ok) {
        code.mark(0);
        const res = r.result;
        fill(out, h('div', { id: 'transform-result', 'data-cancel': String(res.cancel) },
          res.cancel ? h('div', { class: 'alert a-warn' }, 'The handler cancels this delivery: nothing would be sent.') : null,
          h('div', { class: 'tx-request mono small' }, h('strong', {}, res.method), ' ', res.url || '(destination)'),
          Object.keys(res.headers || {}).length ? h('div', { class: 'mono small tx-headers' }, Object.entries(res.headers).map(([k, v]) => h('div', {}, `${k}: ${v}`))) : null,
          jsonView(res.payload)));
      } else {
        showError(r.error, r.line, r.column);
      }
    } catch (err) {
      fill(out, errorBox(err));
    } finally {
      testBtn.disabled = false;
    }
  };
  const save = async (transformation) => {
    try {
      await api('PATCH', '/api/subscriptions/' + sub.id, { transformation });
      toast(transformation ? 'Transformation saved' : 'Transformation removed', 'ok');
      if (onSaved) onSaved();
    } catch (err) {
      const e = ((err.problem && err.problem.errors) || []).find((x) => String(x.pointer).startsWith('/transformation'));
      const m = e && /line (\d+), column (\d+)/.exec(e.message);
      if (m) showError(e.message, Number(m[1]), Number(m[2]));
      else fill(out, errorBox(err));
    }
  };
  const testBtn = h('button', { class: 'btn', type: 'button', id: 'transform-test', onclick: test }, 'Test');
  return h('section', { class: 'card', id: 'transformation-card' },
    h('div', { class: 'card-head' }, h('h2', {}, 'Transformation'), state),
    h('p', { class: 'small muted' }, 'JavaScript ', h('code', {}, 'function handler(webhook)'), ' run before each attempt: it may change the method, url, headers and payload, or cancel the delivery. The signature covers the transformed body.'),
    code.el,
    h('div', { class: 'field check' }, h('label', {}, enabled, ' Run it on deliveries')),
    h('div', { class: 'field' }, h('label', { for: 'transform-event' }, 'Sample event'), event, source),
    w ? h('div', { class: 'tx-actions' }, testBtn,
      h('button', { class: 'btn primary', type: 'button', id: 'transform-save', onclick: () => save({ code: code.area.value, enabled: enabled.checked }) }, 'Save transformation'),
      t ? h('button', { class: 'btn warn', type: 'button', id: 'transform-remove', onclick: () => save(null) }, 'Remove') : null) : null,
    out);
}
