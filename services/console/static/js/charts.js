// Plots drawn as inline SVG strings: bars (labelled categories), histograms, a line, percentiles.
import { esc, fmt } from "./util.js";

const W = 360, H = 170, PAD = { l: 40, r: 8, t: 16, b: 38 };

function frame(inner, w = W, h = H) {
  return `<svg viewBox="0 0 ${w} ${h}" width="100%" role="img">${inner}</svg>`;
}

function yAxis(max, h = H) {
  const y0 = h - PAD.b;
  return `<line class="axis" x1="${PAD.l}" y1="${PAD.t}" x2="${PAD.l}" y2="${y0}"/>
    <line class="axis" x1="${PAD.l}" y1="${y0}" x2="${W - PAD.r}" y2="${y0}"/>
    <text x="${PAD.l - 4}" y="${PAD.t + 8}" text-anchor="end">${fmt(max, 2)}</text>
    <text x="${PAD.l - 4}" y="${y0}" text-anchor="end">0</text>`;
}

// items: [{label, value, key?}]; bars carry data-key so a click can select one.
export function bars(items, { empty = "no data", selected = null } = {}) {
  if (!items.length) return `<p class="muted">${esc(empty)}</p>`;
  const max = Math.max(...items.map((i) => i.value), 1e-9);
  const span = (W - PAD.l - PAD.r) / items.length;
  const bw = Math.max(2, span * 0.75);
  const y0 = H - PAD.b, hh = y0 - PAD.t;
  const fit = Math.max(3, Math.floor(span / 6.2)); // characters of a label that fit under its bar
  const body = items.map((it, i) => {
    const x = PAD.l + i * span + (span - bw) / 2;
    const bh = (it.value / max) * hh;
    const label = String(it.label);
    const cls = it.key !== undefined && it.key === selected ? "bar sel" : "bar";
    return `<g><rect class="${cls}" data-key="${esc(it.key ?? label)}" x="${x.toFixed(1)}" y="${(y0 - bh).toFixed(1)}"
        width="${bw.toFixed(1)}" height="${Math.max(bh, 0.5).toFixed(1)}"><title>${esc(label)}: ${fmt(it.value)}</title></rect>
      <text x="${(x + bw / 2).toFixed(1)}" y="${y0 + 12}" text-anchor="middle">${esc(label.length > fit ? label.slice(0, fit - 1) + "…" : label)}</text>
      <text x="${(x + bw / 2).toFixed(1)}" y="${(y0 - bh - 2).toFixed(1)}" text-anchor="middle">${fmt(it.value, 2)}</text></g>`;
  }).join("");
  return frame(yAxis(max) + body);
}

// hist: {edges: [...], counts: [...]} with edges one longer than counts.
export function histogram(hist, { empty = "no data" } = {}) {
  if (!hist || !hist.counts || !hist.counts.length) return `<p class="muted">${esc(empty)}</p>`;
  const max = Math.max(...hist.counts, 1);
  const n = hist.counts.length, y0 = H - PAD.b, hh = y0 - PAD.t;
  const bw = (W - PAD.l - PAD.r) / n;
  const body = hist.counts.map((c, i) => {
    const bh = (c / max) * hh;
    const x = PAD.l + i * bw;
    const lo = hist.edges[i], hi = hist.edges[i + 1];
    return `<rect class="bar" x="${(x + 0.5).toFixed(1)}" y="${(y0 - bh).toFixed(1)}" width="${Math.max(bw - 1, 1).toFixed(1)}"
      height="${Math.max(bh, c ? 0.5 : 0).toFixed(1)}"><title>[${fmt(lo, 3)}, ${fmt(hi, 3)}]: ${c}</title></rect>`;
  }).join("");
  const ends = `<text x="${PAD.l}" y="${y0 + 12}" text-anchor="start">${fmt(hist.edges[0], 2)}</text>
    <text x="${W - PAD.r}" y="${y0 + 12}" text-anchor="end">${fmt(hist.edges[hist.edges.length - 1], 2)}</text>`;
  return frame(yAxis(max) + body + ends);
}

// values: numbers (null skipped) plotted in order, e.g. mean reward per finished group.
export function line(values, { empty = "no data" } = {}) {
  const pts = values.map((v, i) => [i, v]).filter(([, v]) => v !== null && v !== undefined);
  if (!pts.length) return `<p class="muted">${esc(empty)}</p>`;
  const lo = Math.min(0, ...pts.map(([, v]) => v)), hi = Math.max(...pts.map(([, v]) => v), lo + 1e-9);
  const y0 = H - PAD.b, hh = y0 - PAD.t, span = Math.max(values.length - 1, 1);
  const xy = pts.map(([i, v]) => [PAD.l + (i / span) * (W - PAD.l - PAD.r), y0 - ((v - lo) / (hi - lo)) * hh]);
  const path = xy.map(([x, y], k) => `${k ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join("");
  const dots = xy.map(([x, y], k) => `<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="2.5" class="bar"><title>#${pts[k][0] + 1}: ${fmt(pts[k][1])}</title></circle>`).join("");
  return frame(yAxis(hi) + `<path class="line" d="${path}"/>` + dots +
    `<text x="${PAD.l}" y="${y0 + 12}">1</text><text x="${W - PAD.r}" y="${y0 + 12}" text-anchor="end">${values.length}</text>`);
}

// pct: {p50, p90, p99, max} in seconds.
export function percentiles(pct, { unit = "s", empty = "no data" } = {}) {
  const keys = ["p50", "p90", "p99", "max"].filter((k) => pct && pct[k] !== undefined);
  if (!keys.length) return `<p class="muted">${esc(empty)}</p>`;
  return bars(keys.map((k) => ({ label: `${k} ${fmt(pct[k], 3)}${unit}`, value: pct[k], key: k })));
}
