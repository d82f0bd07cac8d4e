// TensorBoard's histogram "offset" view on a <canvas>: each step's distribution a filled
// ridge, stacked by step from the oldest (back, top) to the newest (front, bottom). As
// TensorBoard does, every step is first rebinned onto one set of evenly spaced bins over
// the whole range, so ridges line up; a bucket's count is spread over the bins it overlaps.
"use strict";

const BINS = 30;
// As TensorBoard draws them: older ridges further back and darker, newer ones in front
// and lighter.
const OLD = [140, 52, 8];
const NEW = [255, 160, 100];

function rebinned(histograms) {
  let lo = Infinity, hi = -Infinity;
  for (const h of histograms) for (const [l, r] of h.buckets) { lo = Math.min(lo, l); hi = Math.max(hi, r); }
  if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }  // one value, or none: a unit-wide range
  const width = (hi - lo) / BINS;
  const rows = histograms.map((h) => {
    const counts = new Array(BINS).fill(0);
    for (const [l, r, c] of h.buckets) {
      if (r <= l) { counts[Math.min(BINS - 1, Math.floor((l - lo) / width))] += c; continue; }
      const first = Math.max(0, Math.floor((l - lo) / width));
      const last = Math.min(BINS - 1, Math.floor((r - lo) / width));
      for (let b = first; b <= last; b++) {
        const overlap = Math.min(r, lo + (b + 1) * width) - Math.max(l, lo + b * width);
        if (overlap > 0) counts[b] += c * overlap / (r - l);
      }
    }
    return { step: h.step, counts };
  });
  return { lo, hi, width, rows };
}

// At most wanted + 1 ticks, counted: a writer's buckets may lie where the tick step is below
// the values' precision (1e17, 16 apart), and there ``t += step`` never passes ``hi``.
function niceTicks(lo, hi, wanted) {
  const raw = (hi - lo) / wanted;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const ticks = [];
  if (!(step > 0 && Number.isFinite(step))) return ticks;
  const first = Math.ceil(lo / step) * step;
  for (let k = 0; k <= wanted + 1; k++) {
    const t = first + k * step;
    if (t > hi + step * 1e-9) break;
    const tick = +t.toPrecision(12);
    if (ticks[ticks.length - 1] !== tick) ticks.push(tick);
  }
  return ticks;
}

const mix = (t) => `rgb(${OLD.map((o, i) => Math.round(o + (NEW[i] - o) * t)).join(",")})`;
const label = (v) => (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(1) : `${+v.toPrecision(4)}`);

// Draws ``histograms`` ([{step, buckets: [[left, right, count], ...]}], in step order)
// filling ``canvas``'s CSS size, sharp on high-density screens.
function drawOffsetHistograms(canvas, histograms) {
  const cssWidth = canvas.clientWidth, cssHeight = canvas.clientHeight;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssWidth * ratio);
  canvas.height = Math.round(cssHeight * ratio);
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, cssWidth, cssHeight);
  const { lo, hi, width, rows } = rebinned(histograms);
  const m = { left: 14, right: 58, top: 12, bottom: 26 };
  const plotW = cssWidth - m.left - m.right, plotH = cssHeight - m.top - m.bottom;
  const ridge = rows.length > 1 ? plotH * 0.45 : plotH;  // the tallest peak's height
  const peak = Math.max(1e-12, ...rows.flatMap((r) => r.counts));
  const s0 = rows[0].step, s1 = rows[rows.length - 1].step;
  const x = (v) => m.left + (v - lo) / (hi - lo) * plotW;
  const base = (step) => m.top + ridge + (s1 > s0 ? (step - s0) / (s1 - s0) : 1) * (plotH - ridge);

  g.font = "11px system-ui, sans-serif";
  g.lineJoin = "round";
  rows.forEach((row, i) => {  // oldest first: the newest is drawn last, in front
    const y0 = base(row.step);
    g.beginPath();
    g.moveTo(x(lo), y0);
    row.counts.forEach((c, b) => g.lineTo(x(lo + (b + 0.5) * width), y0 - c / peak * ridge));
    g.lineTo(x(hi), y0);
    g.closePath();
    g.fillStyle = mix(rows.length > 1 ? i / (rows.length - 1) : 1);
    g.fill();
    g.strokeStyle = "rgba(255,255,255,0.9)";
    g.lineWidth = 1;
    g.stroke();
  });

  g.fillStyle = "#5b6670";
  g.strokeStyle = "#c4cad1";
  g.beginPath();
  g.moveTo(m.left, m.top + plotH + 4);
  g.lineTo(m.left + plotW, m.top + plotH + 4);
  g.stroke();
  g.textAlign = "center";
  g.textBaseline = "top";
  for (const t of niceTicks(lo, hi, Math.max(2, Math.floor(plotW / 60)))) {
    if (t < lo || t > hi) continue;
    g.fillRect(x(t) - 0.5, m.top + plotH + 4, 1, 4);
    g.fillText(label(t), x(t), m.top + plotH + 10);
  }
  g.textAlign = "left";
  g.textBaseline = "middle";
  let free = Infinity;  // the step labels, newest first, each clear of the one below it
  for (const row of rows.slice().reverse()) {
    const y = base(row.step);
    if (y > free - 13) continue;
    g.fillText(row.step.toLocaleString(), m.left + plotW + 8, y);
    free = y;
  }
  canvas.dataset.steps = String(rows.length);
  canvas.dataset.drawn = "true";
}
