// Small DOM helpers and formatters shared by the views.

/** h builds an element: h('div', {class: 'x', onclick: fn}, child, 'text', [more]). */
export function h(tag, props, ...kids) {
  const el = tag.includes(':') ? document.createElementNS('http://www.w3.org/2000/svg', tag.split(':')[1]) : document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'style') el.style.cssText = v; // CSSOM: allowed by the CSP, unlike a style attribute
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' && 'value' in el) el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const c of kids) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** clear empties an element and fills it with kids. */
export function fill(el, ...kids) {
  el.replaceChildren();
  append(el, kids);
  return el;
}

/** fmtTime shows an RFC 3339 time in local time, with the date when not today. */
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  const t = d.toLocaleTimeString([], { hour12: false });
  if (d.toDateString() === new Date().toDateString()) return t;
  return d.toLocaleDateString([], { month: 'short', day: 'numeric' }) + ' ' + t;
}

/** ago shows how long ago an RFC 3339 time was. */
export function ago(iso) {
  if (!iso) return '—';
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 0) return 'in ' + dur(-s);
  if (s < 5) return 'just now';
  return dur(s) + ' ago';
}

function dur(s) {
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}

/** fmtMs shows a duration in milliseconds. */
export function fmtMs(ms) {
  if (ms === undefined || ms === null) return '—';
  if (ms < 1000) return ms + ' ms';
  return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
}

/** fmtNum shows a number with thousands separators. */
export function fmtNum(n) {
  return Number(n).toLocaleString('en-US');
}

/** badge is the colored pill of a status. */
export function badge(status, extra = '') {
  return h('span', { class: 'badge s-' + String(status).toLowerCase() + (extra ? ' ' + extra : ''), 'data-status': status }, status.replace('_', ' '));
}

/** codeBadge colors an HTTP status code. */
export function codeBadge(code) {
  if (!code) return h('span', { class: 'code c-none' }, '—');
  const k = code >= 200 && code < 300 ? 'ok' : code >= 500 || code === 429 || code === 408 ? 'retry' : 'fail';
  return h('span', { class: 'code c-' + k }, String(code));
}

/** shortId shows the last characters of a ULID. */
export function shortId(id) {
  return id ? '…' + id.slice(-8) : '—';
}

/** jsonView pretty-prints JSON with light syntax coloring. */
export function jsonView(value, cls = '') {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const pre = h('pre', { class: 'json ' + cls });
  const re = /("(?:\\u[a-fA-F0-9]{4}|\\[^u]|[^\\"])*"(\s*:)?|\b(?:true|false|null)\b|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) pre.append(text.slice(last, m.index));
    let k = 'num';
    if (m[0].startsWith('"')) k = m[2] ? 'key' : 'str';
    else if (/true|false/.test(m[0])) k = 'bool';
    else if (m[0] === 'null') k = 'null';
    pre.append(h('span', { class: 'j-' + k }, m[0]));
    last = m.index + m[0].length;
  }
  pre.append(text.slice(last));
  return pre;
}

/** toast shows a short message in the corner. */
export function toast(msg, kind = 'info') {
  const box = document.getElementById('toasts');
  const t = h('div', { class: 'toast t-' + kind, role: 'status' }, msg);
  box.append(t);
  setTimeout(() => t.classList.add('out'), 4200);
  setTimeout(() => t.remove(), 4800);
}

/** debounce calls fn at most once per ms, trailing. */
export function debounce(fn, ms) {
  let timer = null;
  const d = (...a) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...a), ms);
  };
  d.cancel = () => clearTimeout(timer);
  return d;
}

/** throttle calls fn at most once per ms, and once more after the last call. */
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  const t = () => {
    const now = Date.now();
    clearTimeout(timer);
    if (now - last >= ms) {
      last = now;
      fn();
    } else {
      timer = setTimeout(t, ms - (now - last));
    }
  };
  t.cancel = () => clearTimeout(timer);
  return t;
}

/** errorBox renders an ApiError (or any error) as an alert. */
export function errorBox(err) {
  const p = (err && err.problem) || {};
  return h('div', { class: 'alert a-error', role: 'alert' },
    h('strong', {}, p.title || 'Error' + (err.status ? ' ' + err.status : '')), ' ', p.detail || err.message,
    p.errors && p.errors.length ? h('ul', {}, p.errors.map((e) => h('li', {}, h('code', {}, e.pointer || '(body)'), ' ', e.message))) : null);
}

/** modal opens a dialog with a title and content; it returns the close function. A dialog
 * that is not dismissable closes only through that function (the key dialog). */
export function modal(title, content, actions = [], { dismissable = true } = {}) {
  const close = () => back.remove();
  const back = h('div', { class: 'modal-back', onclick: (e) => { if (dismissable && e.target === back) close(); } },
    h('div', { class: 'modal', role: 'dialog', 'aria-modal': 'true', 'aria-label': title },
      h('div', { class: 'modal-head' }, h('h3', {}, title), dismissable ? h('button', { class: 'icon-btn', 'aria-label': 'Close', onclick: close }, '×') : null),
      h('div', { class: 'modal-body' }, content),
      actions.length ? h('div', { class: 'modal-foot' }, actions) : null));
  document.body.append(back);
  return close;
}

/** placeErrors puts each problem+json error next to the field its pointer
 * names (the field with the longest data-pointer that prefixes it, among
 * the shown ones: a hidden part of the form, such as another destination
 * type's fields, may have fields of the same pointer); the rest go to the
 * form's alert. It returns how many were placed. */
export function placeErrors(form, err) {
  clearErrors(form);
  const p = (err && err.problem) || {};
  const fields = [...form.querySelectorAll('[data-pointer]')].filter((f) => !f.closest('[hidden]'));
  const rest = [];
  let placed = 0;
  for (const e of p.errors || []) {
    const ptr = e.pointer || '';
    let best = null;
    for (const f of fields) {
      const fp = f.dataset.pointer;
      if (ptr === fp || ptr.startsWith(fp + '/')) {
        if (!best || fp.length > best.dataset.pointer.length) best = f;
      }
    }
    if (!best) { rest.push(e); continue; }
    best.classList.add('invalid');
    const msg = h('div', { class: 'field-error', 'data-error-for': best.dataset.pointer },
      ptr !== best.dataset.pointer ? h('code', {}, ptr.slice(best.dataset.pointer.length)) : null,
      ptr !== best.dataset.pointer ? ' ' : null, e.message);
    best.append(msg);
    placed++;
  }
  const alert = form.querySelector('.form-alert');
  if (alert && (rest.length || !placed)) {
    fill(alert, errorBox(new Error(p.detail || err.message)));
    if (rest.length) alert.firstChild.append(h('ul', {}, rest.map((e) => h('li', {}, h('code', {}, e.pointer || '(body)'), ' ', e.message))));
  }
  return placed;
}

/** clearErrors removes the messages placeErrors put in form. */
export function clearErrors(form) {
  form.querySelectorAll('.field-error').forEach((e) => e.remove());
  form.querySelectorAll('.invalid').forEach((e) => e.classList.remove('invalid'));
  const alert = form.querySelector('.form-alert');
  if (alert) alert.replaceChildren();
}
