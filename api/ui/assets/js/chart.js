// A hand-drawn SVG line chart of rates (no library).
import { h } from './dom.js';

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  // Multiples whose quarters (the grid lines) read well: 0.25, 0.5, 1, 1.5, 2, 2.5.
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmtRate(v) {
  if (v >= 10) return Math.round(v).toLocaleString('en-US');
  return String(Number(v.toFixed(2)));
}

/**
 * lineChart draws series (each {label, color, values}) sampled every
 * `step` seconds, the last at "now", as an SVG of the given size.
 */
export function lineChart({ series, step, width = 900, height = 240 }) {
  const pad = { l: 44, r: 12, t: 12, b: 26 };
  const w = width - pad.l - pad.r;
  const hh = height - pad.t - pad.b;
  const n = series[0].values.length;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)) * 1.1);
  const x = (i) => pad.l + (n <= 1 ? 0 : (i / (n - 1)) * w);
  const y = (v) => pad.t + hh - (v / max) * hh;
  const svg = h('svg:svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': 'Rates per second, last 15 minutes', preserveAspectRatio: 'none' });
  for (let g = 0; g <= 4; g++) {
    const v = (max / 4) * g;
    svg.append(h('svg:line', { x1: pad.l, x2: width - pad.r, y1: y(v), y2: y(v), class: 'grid' }));
    svg.append(h('svg:text', { x: pad.l - 8, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' }, fmtRate(v)));
  }
  const span = (n - 1) * step;
  for (let m = 0; m <= span / 60; m += 5) {
    const i = (n - 1) - (m * 60) / step;
    if (i < 0) continue;
    svg.append(h('svg:text', { x: x(i), y: height - 6, class: 'axis', 'text-anchor': m === 0 ? 'end' : 'middle' }, m === 0 ? 'now' : `−${m} min`));
  }
  series.forEach((s, si) => {
    const pts = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    if (si === 0) {
      svg.append(h('svg:polygon', { points: `${x(0)},${y(0)} ${pts} ${x(n - 1)},${y(0)}`, fill: s.color, 'fill-opacity': 0.08 }));
    }
    svg.append(h('svg:polyline', { points: pts, fill: 'none', stroke: s.color, 'stroke-width': 2, 'stroke-linejoin': 'round', 'vector-effect': 'non-scaling-stroke', 'data-series': s.key }));
  });
  return svg;
}
