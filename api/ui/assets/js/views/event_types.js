// Event types: their versions and lifecycle, each schema pretty-printed,
// and a form to try a payload against a version (the API's violations).
import { api, listAll } from '../api.js';
import { h, fill, badge, fmtTime, errorBox, toast, jsonView, placeErrors, clearErrors } from '../dom.js';

export const needs = 'platform';

export function render(root, { parts, ctx }) {
  if (parts[1]) return renderType(root, parts[1], parts[2], ctx);
  const tbody = h('tbody', {}, h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'Loading…')));
  fill(root, h('header', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Event types'), h('p', { class: 'muted' }, 'Registered CloudEvent types and their versioned JSON Schemas.'))),
    h('div', { class: 'card flush' }, h('table', { class: 'table', id: 'event-types-table' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Code'), h('th', {}, 'Name'), h('th', {}, 'Status'), h('th', {}, 'Versions'), h('th', {}, 'Updated'))), tbody)));
  listAll('/api/event-types', {}, 1000).then(({ items }) => {
    fill(tbody, items.length ? items.map((t) => h('tr', { class: 'clickable', 'data-type': t.code, onclick: () => { location.hash = '#/event-types/' + encodeURIComponent(t.code); } },
      h('td', {}, h('a', { class: 'mono strong', href: '#/event-types/' + encodeURIComponent(t.code) }, t.code)),
      h('td', {}, t.name || ''), h('td', {}, badge(t.status)),
      h('td', {}, (t.versions || []).map((v) => h('span', { class: 'ver v-' + v.status.toLowerCase(), title: v.status }, v.version))),
      h('td', { class: 'small' }, fmtTime(t.updatedAt)))) : h('tr', {}, h('td', { colspan: 5, class: 'empty-row' }, 'No event types registered.')));
  }).catch((err) => fill(tbody, h('tr', {}, h('td', { colspan: 5 }, errorBox(err)))));
  return null;
}

const nextStatus = { FINALISING: 'CURRENT', CURRENT: 'DEPRECATED' };

function renderType(root, code, selected, ctx) {
  let alive = true;
  const load = async () => {
    let t;
    try {
      t = await api('GET', '/api/event-types/' + encodeURIComponent(code));
    } catch (err) {
      fill(root, h('a', { class: 'back', href: '#/event-types' }, '← Event types'), errorBox(err));
      return;
    }
    if (!alive) return;
    const versions = [...(t.versions || [])].sort((a, b) => cmpVersion(b.version, a.version));
    const cur = versions.find((v) => v.version === selected) || versions.find((v) => v.status === 'CURRENT') || versions[0];
    const move = async (v, to) => {
      try {
        await api('PATCH', `/api/event-types/${encodeURIComponent(code)}/versions/${v.version}`, { status: to });
        toast(`${v.version} is now ${to}`, 'ok');
        load();
      } catch (err) { toast(err.message, 'error'); }
    };
    const verList = h('div', { class: 'versions', id: 'versions' }, versions.length ? versions.map((v) => h('a', {
      class: 'version-item' + (v === cur ? ' on' : ''), href: `#/event-types/${encodeURIComponent(code)}/${v.version}`, 'data-version': v.version,
    }, h('div', { class: 'ver-head' }, h('span', { class: 'mono strong' }, v.version), badge(v.status)),
    h('div', { class: 'lifecycle' }, ['FINALISING', 'CURRENT', 'DEPRECATED'].map((s) => h('span', { class: 'step' + (s === v.status ? ' here' : '') }, s.toLowerCase()))),
    h('div', { class: 'muted small' }, 'created ' + fmtTime(v.createdAt))))
      : h('p', { class: 'muted' }, 'No versions: events of this type carry any data.'));
    const detail = h('div', {});
    if (cur) {
      const to = nextStatus[cur.status];
      detail.append(h('section', { class: 'card' },
        h('div', { class: 'card-head' }, h('h2', {}, 'Schema ', h('span', { class: 'mono' }, cur.version)), badge(cur.status),
          h('span', { class: 'muted small' }, cur.schemaType + ' · ' + cur.mimeType),
          ctx.can('write') && to ? h('button', { class: 'btn sm push-right', id: 'promote', onclick: () => move(cur, to) }, to === 'CURRENT' ? 'Promote to CURRENT' : 'Deprecate') : null),
        jsonView(cur.schema, 'schema')),
      tryForm(code, cur, ctx));
    }
    fill(root, h('a', { class: 'back', href: '#/event-types' }, '← Event types'),
      h('header', { class: 'page-head' }, h('div', {}, h('div', { class: 'eyebrow' }, 'Event type'), h('h1', { class: 'mono' }, t.code),
        h('div', { class: 'head-meta' }, badge(t.status), t.name ? h('span', {}, t.name) : null, t.description ? h('span', { class: 'muted' }, t.description) : null))),
      h('div', { class: 'cols narrow-left' }, h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Versions')), verList), detail));
  };
  load();
  return () => { alive = false; };
}

/** tryForm validates a payload against the version through the API. */
function tryForm(code, v, ctx) {
  const data = h('textarea', { id: 'try-data', rows: 5, class: 'mono', spellcheck: 'false' }, '{\n  \n}');
  const out = h('div', { class: 'try-out', id: 'try-result' });
  const form = h('form', { class: 'card form', id: 'try-form', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearErrors(form);
    fill(out);
    let d;
    try { d = JSON.parse(data.value); } catch (err) {
      fill(out, h('div', { class: 'alert a-error' }, 'Not valid JSON: ' + err.message));
      return;
    }
    try {
      await api('POST', `/api/event-types/${encodeURIComponent(code)}/versions/${v.version}/validate`, { data: d });
      fill(out, h('div', { class: 'alert a-ok', 'data-valid': 'true' }, h('strong', {}, 'Valid. '), `The data matches ${code} ${v.version}.`));
    } catch (err) {
      const errs = (err.problem && err.problem.errors) || [];
      fill(out, h('div', { class: 'alert a-error', 'data-valid': 'false' }, h('strong', {}, errs.length ? `${errs.length} violation${errs.length === 1 ? '' : 's'}` : 'Rejected'), ' ', err.problem.detail || err.message,
        errs.length ? h('table', { class: 'table compact violations' }, h('tbody', {}, errs.map((x) => h('tr', {}, h('td', { class: 'mono' }, x.pointer || '/'), h('td', {}, x.message))))) : null));
    }
  } },
  h('div', { class: 'card-head' }, h('h2', {}, 'Try a payload'), h('span', { class: 'muted small' }, 'checked by the gateway against this version; nothing is stored')),
  h('div', { class: 'field', 'data-pointer': '/data' }, h('label', { for: 'try-data' }, 'data'), data),
  h('div', { class: 'form-foot' }, h('button', { class: 'btn primary', type: 'submit', id: 'try-validate', disabled: !(ctx.can('read') || ctx.can('postEvents')) }, 'Validate')), out);
  return form;
}

function cmpVersion(a, b) {
  const [am, an] = a.split('.').map(Number);
  const [bm, bn] = b.split('.').map(Number);
  return am - bm || an - bn;
}
