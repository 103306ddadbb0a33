// Status stream client (API.md §7). EventSource cannot send an
// Authorization header, so the stream is read with fetch() and a streaming
// body reader, parsed here. On a drop it reconnects with exponential
// backoff and the Last-Event-ID header, so it misses nothing the server
// still retains; listeners of onState see "connecting", "live",
// "reconnecting" (with the delay) and "unauthorized".

/** SSEParser turns chunks of text into messages {id, event, data}. */
export class SSEParser {
  constructor(onMessage, onRetry) {
    this.onMessage = onMessage;
    this.onRetry = onRetry || (() => {});
    this.buf = '';
    this.reset();
  }

  reset() {
    this.data = [];
    this.event = '';
    this.id = null;
  }

  /** push feeds a chunk of decoded text; complete lines are processed. */
  push(chunk) {
    this.buf += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) return;
      // A lone \r at the very end may be the first half of \r\n.
      if (m[0] === '\r' && m.index === this.buf.length - 1) return;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.data.length > 0) {
        this.onMessage({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      }
      this.reset();
      return;
    }
    if (line.startsWith(':')) return; // comment (": ping")
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data': this.data.push(value); break;
      case 'event': this.event = value; break;
      case 'id': if (!value.includes('\0')) this.id = value; break;
      case 'retry': if (/^\d+$/.test(value)) this.onRetry(Number(value)); break;
      default: break;
    }
  }
}

/** backoffDelay is the wait before reconnect attempt n (0-based): doubling from base, capped, with jitter. */
export function backoffDelay(n, base = 1000, cap = 30000, rand = Math.random) {
  const d = Math.min(cap, base * 2 ** n);
  return Math.round(d / 2 + rand() * (d / 2));
}

/**
 * StatusStream keeps one connection to /api/stream open and hands every
 * CloudEvent it carries to the listeners.
 */
export class StatusStream {
  /**
   * @param {object} o
   * @param {string} o.url       stream URL with its filter query
   * @param {() => string} o.key the API key ('' when auth is off)
   * @param {typeof fetch} [o.fetch]
   * @param {number} [o.baseDelay] first reconnect delay, ms
   */
  constructor(o) {
    this.url = o.url;
    this.key = o.key;
    this.fetch = o.fetch || ((...a) => fetch(...a));
    this.baseDelay = o.baseDelay || 1000;
    this.lastId = '';
    this.failures = 0;
    this.listeners = new Set();
    this.stateListeners = new Set();
    this.state = 'idle';
    this.stopped = true;
    this.abort = null;
    this.timer = null;
  }

  /** on registers a listener for every event; it returns the unsubscribe function. */
  on(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  /** onState registers a listener for connection state changes. */
  onState(fn) { this.stateListeners.add(fn); fn(this.state, {}); return () => this.stateListeners.delete(fn); }

  setState(state, info = {}) {
    this.state = state;
    for (const fn of this.stateListeners) fn(state, info);
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.abort) this.abort.abort();
    this.setState('idle');
  }

  /** restart drops the connection and reconnects at once (after a key change). */
  restart() {
    this.stop();
    this.failures = 0;
    this.start();
  }

  async connect() {
    this.setState(this.failures === 0 && !this.lastId ? 'connecting' : 'reconnecting', { attempt: this.failures });
    const ctrl = new AbortController();
    this.abort = ctrl;
    const headers = { Accept: 'text/event-stream' };
    const key = this.key();
    if (key) headers.Authorization = 'Bearer ' + key;
    if (this.lastId) headers['Last-Event-ID'] = this.lastId;
    let url = this.url;
    if (typeof url === 'function') url = url(this.lastId);
    try {
      const resp = await this.fetch(url, { headers, signal: ctrl.signal, cache: 'no-store' });
      if (resp.status === 401 || resp.status === 403) {
        this.stopped = true;
        this.setState('unauthorized', { status: resp.status });
        return;
      }
      if (!resp.ok || !resp.body) throw new Error('stream answered ' + resp.status);
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let opened = false;
      const parser = new SSEParser((m) => this.message(m), (ms) => { this.baseDelay = Math.max(250, ms); });
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (!opened) {
          opened = true;
          this.failures = 0;
          this.setState('live');
        }
        parser.push(decoder.decode(value, { stream: true }));
      }
      throw new Error('stream ended');
    } catch (err) {
      if (this.stopped || ctrl.signal.aborted) return;
      const delay = backoffDelay(this.failures, this.baseDelay);
      this.failures++;
      this.setState('reconnecting', { delay, error: String(err && err.message || err), attempt: this.failures });
      this.timer = setTimeout(() => { if (!this.stopped) this.connect(); }, delay);
    }
  }

  message(m) {
    if (m.id) this.lastId = m.id;
    let ce;
    try { ce = JSON.parse(m.data); } catch { return; }
    for (const fn of this.listeners) {
      try { fn(ce, m); } catch (e) { console.error('stream listener', e); }
    }
  }
}
