// Rates keeps per-second counts of stream events over a sliding window,
// for the overview's chart and counters. Events are counted once by id
// (a replay after a reconnect may repeat some).

/** series counted, and the stream events that feed each. */
export const seriesDefs = [
  { key: 'accepted', label: 'Events accepted', color: '#6366f1' },
  { key: 'completed', label: 'Delivered', color: '#16a34a' },
  { key: 'failed', label: 'Failed attempts', color: '#dc2626' },
  { key: 'retried', label: 'Retried', color: '#d97706' },
];

/** classify names the series a status CloudEvent counts in, or null. */
export function classify(ce) {
  switch (ce.type) {
    case 'event.accepted': return 'accepted';
    case 'dispatch.completed': return 'completed';
    case 'dispatch.failed': return 'failed';
    case 'dispatch.queued': return ce.data && ce.data.attempt > 0 ? 'retried' : null;
    default: return null;
  }
}

export class Rates {
  constructor(windowSeconds) {
    this.window = windowSeconds;
    this.buckets = new Map(); // second → {accepted, completed, failed, retried}
    this.seen = new Set();
    this.seenOrder = [];
    this.listeners = new Set();
    this.latency = []; // recent completed durations, ms
  }

  on(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  add(ce) {
    const k = classify(ce);
    if (!k || !ce.id || this.seen.has(ce.id)) return;
    this.seen.add(ce.id);
    this.seenOrder.push(ce.id);
    if (this.seenOrder.length > 200000) this.seen.delete(this.seenOrder.shift());
    const sec = Math.floor(new Date(ce.time || Date.now()).getTime() / 1000);
    if (sec < Math.floor(Date.now() / 1000) - this.window) return;
    let b = this.buckets.get(sec);
    if (!b) { b = { accepted: 0, completed: 0, failed: 0, retried: 0 }; this.buckets.set(sec, b); }
    b[k]++;
    for (const fn of this.listeners) fn(k, ce);
  }

  prune(nowSec) {
    for (const s of this.buckets.keys()) if (s < nowSec - this.window) this.buckets.delete(s);
  }

  /** totals over the window. */
  totals() {
    const now = Math.floor(Date.now() / 1000);
    this.prune(now);
    const t = { accepted: 0, completed: 0, failed: 0, retried: 0 };
    for (const b of this.buckets.values()) for (const k in t) t[k] += b[k];
    return t;
  }

  /** rate per second of each series over the last `seconds`. */
  rate(seconds = 60) {
    const now = Math.floor(Date.now() / 1000);
    const t = { accepted: 0, completed: 0, failed: 0, retried: 0 };
    for (const [s, b] of this.buckets) if (s > now - seconds) for (const k in t) t[k] += b[k];
    for (const k in t) t[k] /= seconds;
    return t;
  }

  /** points of each series: the mean rate per second in `step`-second buckets over the window, oldest first. */
  points(step = 10) {
    const now = Math.floor(Date.now() / 1000);
    const n = Math.floor(this.window / step);
    const out = { accepted: [], completed: [], failed: [], retried: [] };
    const start = now - n * step + 1;
    const sums = Array.from({ length: n }, () => ({ accepted: 0, completed: 0, failed: 0, retried: 0 }));
    for (const [s, b] of this.buckets) {
      const i = Math.floor((s - start) / step);
      if (i < 0 || i >= n) continue;
      for (const k in b) sums[i][k] += b[k];
    }
    for (const s of sums) for (const k in out) out[k].push(s[k] / step);
    return { series: out, start, step, now };
  }
}
