// Overview: live rates drawn from the stream, jobs by status, pools with
// in-flight against concurrency, and the slowest targets.
import { api, listAll } from '../api.js';
import { h, fill, fmtNum, fmtMs, badge, throttle, errorBox, ago } from '../dom.js';
import { lineChart } from '../chart.js';
import { seriesDefs } from '../rates.js';

export const needs = 'stream';

const statuses = ['PENDING', 'QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR', 'CANCELLED'];

export function render(root, { ctx }) {
  const stats = {};
  const cards = seriesDefs.map((s) => {
    const value = h('div', { class: 'stat-value' }, '0');
    const rate = h('div', { class: 'stat-sub' }, '0.00/s');
    stats[s.key] = { value, rate };
    return h('div', { class: 'card stat', 'data-stat': s.key },
      h('div', { class: 'stat-label' }, h('span', { class: 'swatch', style: `background:${s.color}` }), s.label),
      value, rate);
  });
  const chartBox = h('div', { class: 'chart-box' });
  const statusBox = h('div', { class: 'status-grid' });
  const poolBox = h('div', {});
  const slowBox = h('div', {});
  const failingBox = h('div', {});
  fill(root,
    h('header', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Overview'), h('p', { class: 'muted' }, 'Last 15 minutes, live from the status stream'))),
    h('section', { class: 'stats' }, cards),
    h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Throughput'), h('span', { class: 'muted small' }, 'per second, 10 s buckets'),
      h('div', { class: 'legend' }, seriesDefs.map((s) => h('span', {}, h('span', { class: 'swatch', style: `background:${s.color}` }), s.label)))), chartBox),
    h('section', { class: 'card', id: 'failing-endpoints' }, h('div', { class: 'card-head' }, h('h2', {}, 'Failing endpoints'),
      h('span', { class: 'muted small' }, 'circuits not closed, subscriptions disabled by the gateway')), failingBox),
    h('div', { class: 'cols' },
      h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Jobs by status')), statusBox),
      h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Dispatch pools'), h('span', { class: 'muted small' }, 'in flight / concurrency')), poolBox)),
    h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Slowest targets'), h('span', { class: 'muted small' }, 'attempts of the 200 most recent jobs')), slowBox));

  const drawRates = () => {
    const tot = ctx.rates.totals();
    const r = ctx.rates.rate(60);
    for (const s of seriesDefs) {
      stats[s.key].value.textContent = fmtNum(tot[s.key]);
      stats[s.key].rate.textContent = r[s.key].toFixed(2) + '/s over the last minute';
    }
    const p = ctx.rates.points(10);
    fill(chartBox, lineChart({ series: seriesDefs.map((s) => ({ ...s, values: p.series[s.key] })), step: p.step }));
  };

  let alive = true;
  const loadTables = async () => {
    try {
      const [counts, pools, subs, inflight, recent] = await Promise.all([
        Promise.all(statuses.map((s) => api('GET', `/api/dispatch-jobs?status=${s}&limit=500`))),
        ctx.can('platform') ? listAll('/api/dispatch-pools', {}, 500) : Promise.resolve({ items: [] }),
        listAll('/api/subscriptions', {}, 1000),
        listAll('/api/dispatch-jobs', { status: 'IN_PROGRESS' }, 1000),
        api('GET', '/api/dispatch-jobs?limit=200'),
      ]);
      if (!alive) return;
      fill(statusBox, statuses.map((s, i) => h('a', { class: 'status-tile', href: '#/jobs?status=' + s, 'data-count-status': s },
        badge(s), h('div', { class: 'tile-num' }, fmtNum(counts[i].items.length) + (counts[i].nextCursor ? '+' : '')))));
      drawPools(poolBox, pools.items, subs.items, inflight.items);
      drawFailing(failingBox, subs.items);
      drawSlowest(slowBox, recent.items);
    } catch (err) {
      if (alive) fill(statusBox, errorBox(err));
    }
  };
  // The tables are read from list endpoints: at most every 3 s while the
  // stream says something changed (a busy gateway changes every instant),
  // and every 10 s anyway.
  const reload = throttle(loadTables, 3000);
  const redraw = throttle(drawRates, 500);
  drawRates();
  loadTables();
  const offRates = ctx.rates.on(() => redraw());
  const offStream = ctx.stream ? ctx.stream.on(() => reload()) : () => {};
  const tick = setInterval(drawRates, 2000);
  const poll = setInterval(reload, 10000);
  return () => {
    alive = false;
    offRates(); offStream(); redraw.cancel(); reload.cancel();
    clearInterval(tick); clearInterval(poll);
  };
}

/** drawPools shows each pool's in-flight jobs (IN_PROGRESS jobs of the subscriptions in it) against its concurrency. */
function drawPools(box, pools, subs, inflight) {
  const poolOfSub = new Map(subs.map((s) => [s.id, s.dispatchPoolId || null]));
  const def = pools.find((p) => p.code === 'default');
  const busy = new Map();
  for (const j of inflight) {
    const pid = j.dispatchPoolId || poolOfSub.get(j.subscriptionId) || (def && def.id);
    busy.set(pid, (busy.get(pid) || 0) + 1);
  }
  if (!pools.length) { fill(box, h('p', { class: 'muted' }, 'No pools.')); return; }
  fill(box, h('table', { class: 'table compact' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Pool'), h('th', {}, 'In flight'), h('th', { class: 'num' }, 'Rate limit'))),
    h('tbody', {}, pools.map((p) => {
      const n = busy.get(p.id) || 0;
      const pct = Math.min(100, (n / p.concurrency) * 100);
      return h('tr', { 'data-pool': p.code },
        h('td', {}, h('div', { class: 'strong' }, p.code), p.name && p.name !== p.code ? h('div', { class: 'muted small' }, p.name) : null),
        h('td', { class: 'meter-cell' }, h('div', { class: 'meter' + (pct >= 90 ? ' hot' : '') }, h('span', { style: `width:${pct}%` })),
          h('span', { class: 'small' }, `${n} / ${p.concurrency}`)),
        h('td', { class: 'num small' }, p.ratePerSecond ? `${p.ratePerSecond}/s (burst ${p.burst})` : 'none'));
    }))));
}

/** drawFailing lists the subscriptions whose circuit is not closed, or that
 * the gateway disabled (statusReason set), longest failing first. */
function drawFailing(box, subs) {
  const rows = subs.filter((s) => (s.circuit && s.circuit.state !== 'CLOSED') || s.statusReason)
    .sort((a, b) => String((a.circuit && a.circuit.openedAt) || a.updatedAt).localeCompare(String((b.circuit && b.circuit.openedAt) || b.updatedAt)));
  if (!rows.length) { fill(box, h('p', { class: 'muted', id: 'no-failing' }, 'None: every circuit is closed.')); return; }
  fill(box, h('table', { class: 'table compact' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Subscription'), h('th', {}, 'Circuit'), h('th', { class: 'num' }, 'Failures'),
      h('th', {}, 'Open since'), h('th', {}, 'Next probe'), h('th', {}, 'Status'))),
    h('tbody', {}, rows.map((s) => {
      const c = s.circuit || { state: 'CLOSED', consecutiveFailures: 0 };
      return h('tr', { class: 'clickable', 'data-failing': s.code, onclick: () => { location.hash = '#/subscriptions/' + s.id; } },
        h('td', {}, h('a', { class: 'strong', href: '#/subscriptions/' + s.id }, s.code), h('div', { class: 'mono small muted ellipsis', title: s.target || '' }, s.target || '')),
        h('td', {}, badge(c.state)), h('td', { class: 'num' }, fmtNum(c.consecutiveFailures)),
        h('td', { class: 'small' }, c.openedAt ? ago(c.openedAt) : '—'), h('td', { class: 'small' }, c.nextProbeAt && c.state !== 'CLOSED' ? ago(c.nextProbeAt) : '—'),
        h('td', { title: s.statusReason || '' }, badge(s.status), s.statusReason ? h('div', { class: 'small muted ellipsis' }, s.statusReason) : null));
    }))));
}

/** drawSlowest ranks targets by the p95 duration of recent attempts. */
function drawSlowest(box, jobs) {
  const by = new Map();
  for (const j of jobs) {
    if (!j.targetUrl) continue;
    for (const a of j.attempts || []) {
      if (a.worker === 'operator' || (!a.durationMs && a.durationMs !== 0)) continue;
      let t = by.get(j.targetUrl);
      if (!t) { t = { url: j.targetUrl, d: [], fails: 0 }; by.set(j.targetUrl, t); }
      t.d.push(a.durationMs);
      if (!(a.statusCode >= 200 && a.statusCode < 300)) t.fails++;
    }
  }
  const rows = [...by.values()].map((t) => {
    t.d.sort((a, b) => a - b);
    t.p95 = t.d[Math.min(t.d.length - 1, Math.floor(t.d.length * 0.95))];
    t.max = t.d[t.d.length - 1];
    t.p50 = t.d[Math.floor(t.d.length / 2)];
    return t;
  }).sort((a, b) => b.p95 - a.p95).slice(0, 6);
  if (!rows.length) { fill(box, h('p', { class: 'muted' }, 'No attempts yet.')); return; }
  const top = rows[0].max || 1;
  fill(box, h('table', { class: 'table compact' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Target'), h('th', { class: 'num' }, 'p50'), h('th', { class: 'num' }, 'p95'), h('th', { class: 'num' }, 'max'), h('th', { class: 'num' }, 'Attempts'), h('th', { class: 'num' }, 'Failed'))),
    h('tbody', {}, rows.map((t) => h('tr', {},
      h('td', { class: 'mono ellipsis', title: t.url }, t.url, h('div', { class: 'bar' }, h('span', { style: `width:${(t.p95 / top) * 100}%` }))),
      h('td', { class: 'num' }, fmtMs(t.p50)), h('td', { class: 'num strong' }, fmtMs(t.p95)), h('td', { class: 'num' }, fmtMs(t.max)),
      h('td', { class: 'num' }, fmtNum(t.d.length)), h('td', { class: 'num' + (t.fails ? ' text-error' : '') }, fmtNum(t.fails)))))));
}
