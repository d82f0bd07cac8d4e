// TensorBoard's histogram "offset" view as numbers: each step's distribution a ridge,
// stacked by step from the oldest (back, top) to the newest (front, bottom). As TensorBoard
// does, every step is first rebinned onto one set of evenly spaced bins over the whole
// range, so ridges line up; a bucket's count is spread over the bins it overlaps, in
// proportion to the overlap. ``layout`` places the ridges, the value axis' ticks and the
// step labels in CSS pixels; histogram.js draws them on a canvas. Pure: no DOM;
// tests/web/static/offsetview.test.mjs.
import { histogramLabel } from "./format.js";
import { niceTicks } from "./ticks.js";

export const BINS = 30;
// As TensorBoard draws them: older ridges further back and darker, newer ones in front
// and lighter.
export const OLD = [140, 52, 8];
export const NEW = [255, 160, 100];
// Room around the ridges: the step labels on the right, the value axis below.
export const MARGIN = { left: 14, right: 58, top: 12, bottom: 26 };
const LABEL_GAP = 13;  // the least distance between two step labels

// ``histograms`` ([{step, buckets: [[left, right, count], ...]}]) on BINS shared bins over
// [lo, hi] (a unit-wide range around a single value; around 0 when the edges give no
// finite range, e.g. no buckets at all).
// A bucket with right <= left (one value) counts whole in the bin holding its left edge.
export function rebinned(histograms, bins = BINS) {
  let lo = Infinity, hi = -Infinity;
  for (const h of histograms) for (const [l, r] of h.buckets) { lo = Math.min(lo, l); hi = Math.max(hi, r); }
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) { lo = 0; hi = 0; }
  if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
  const width = (hi - lo) / bins;
  const rows = histograms.map((h) => {
    const counts = new Array(bins).fill(0);
    for (const [l, r, c] of h.buckets) {
      if (r <= l) { counts[Math.min(bins - 1, Math.floor((l - lo) / width))] += c; continue; }
      const first = Math.max(0, Math.floor((l - lo) / width));
      const last = Math.min(bins - 1, Math.floor((r - lo) / width));
      for (let b = first; b <= last; b++) {
        const overlap = Math.min(r, lo + (b + 1) * width) - Math.max(l, lo + b * width);
        if (overlap > 0) counts[b] += c * overlap / (r - l);
      }
    }
    return { step: h.step, counts };
  });
  return { lo, hi, width, rows };
}

// The color of a ridge ``t`` of the way from the oldest (0) to the newest (1).
export const mix = (t) => `rgb(${OLD.map((o, i) => Math.round(o + (NEW[i] - o) * t)).join(",")})`;

// The offset view of ``histograms`` (in step order, at least one) in a ``width`` x ``height``
// CSS-pixel box: ``ridges`` oldest first (so the newest is drawn last, in front), each a
// closed outline of points and its fill; the value ``axis`` line and its ``ticks``; the
// ``steps`` labels, newest first, each clear of the one below it.
export function layout(histograms, width, height) {
  const m = MARGIN;
  const { lo, hi, width: bin, rows } = rebinned(histograms);
  const plotW = width - m.left - m.right, plotH = height - m.top - m.bottom;
  const ridge = rows.length > 1 ? plotH * 0.45 : plotH;  // the tallest peak's height
  const peak = Math.max(1e-12, ...rows.flatMap((r) => r.counts));
  const s0 = rows[0].step, s1 = rows[rows.length - 1].step;
  const x = (v) => m.left + (v - lo) / (hi - lo) * plotW;
  const base = (step) => m.top + ridge + (s1 > s0 ? (step - s0) / (s1 - s0) : 1) * (plotH - ridge);
  const ridges = rows.map((row, i) => {
    const y0 = base(row.step);
    const points = [[x(lo), y0], ...row.counts.map((c, b) => [x(lo + (b + 0.5) * bin), y0 - c / peak * ridge]),
      [x(hi), y0]];
    return { step: row.step, base: y0, points, fill: mix(rows.length > 1 ? i / (rows.length - 1) : 1) };
  });
  const axisY = m.top + plotH + 4;
  const ticks = niceTicks(lo, hi, Math.max(2, Math.floor(plotW / 60)))
    .filter((t) => t >= lo && t <= hi).map((t) => ({ value: t, x: x(t), label: histogramLabel(t) }));
  const steps = [];
  let free = Infinity;
  for (const row of rows.slice().reverse()) {
    const y = base(row.step);
    if (y > free - LABEL_GAP) continue;
    steps.push({ step: row.step, x: m.left + plotW + 8, y, label: row.step.toLocaleString() });
    free = y;
  }
  return { lo, hi, ridges, axis: { y: axisY, x0: m.left, x1: m.left + plotW, labelY: axisY + 6 }, ticks, steps };
}
