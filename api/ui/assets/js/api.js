// The REST client: every call goes to the public /api endpoints with the
// session's API key, and a problem+json answer becomes an ApiError.

const keyName = 'hooklane.apiKey';

/** ApiError carries the status and the RFC 9457 problem document. */
export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || 'HTTP ' + status);
    this.status = status;
    this.problem = problem || {};
  }
}

/** getKey returns this browser session's API key ('' when none). */
export function getKey() {
  return sessionStorage.getItem(keyName) || '';
}

/** setKey stores the key for this browser session only ('' forgets it). */
export function setKey(k) {
  if (k) sessionStorage.setItem(keyName, k);
  else sessionStorage.removeItem(keyName);
}

/** api calls the gateway and returns the decoded JSON body (null for 204). */
export async function api(method, path, body, extraHeaders = {}) {
  const headers = { Accept: 'application/json', ...extraHeaders };
  const key = getKey();
  if (key) headers.Authorization = 'Bearer ' + key;
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    if (!headers['Content-Type']) headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, { title: 'Network error', detail: 'the gateway could not be reached: ' + err.message });
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = { detail: text }; }
  }
  if (!resp.ok) {
    if (resp.status === 401) window.dispatchEvent(new CustomEvent('hooklane:unauthorized', { detail: data }));
    throw new ApiError(resp.status, data);
  }
  return data;
}

/** qs builds a query string from the non-empty values of obj. */
export function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, v);
  }
  const s = p.toString();
  return s ? '?' + s : '';
}

/** listAll follows nextCursor up to max items. */
export async function listAll(path, params = {}, max = 1000) {
  const out = [];
  let cursor = '';
  for (;;) {
    const page = await api('GET', path + qs({ ...params, limit: Math.min(500, max - out.length), cursor }));
    out.push(...page.items);
    if (!page.nextCursor || out.length >= max) return { items: out, more: !!page.nextCursor };
    cursor = page.nextCursor;
  }
}
