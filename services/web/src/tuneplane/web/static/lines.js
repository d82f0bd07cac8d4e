// How an answer becomes lines on a chart: x by step, wall time or time relative to the
// series' first point; log scales without the values they cannot show; and the columns,
// series and bands uPlot draws for a set of lines (a reduced line draws its min/max
// envelope as a band under its last values). Pure: no DOM, no uPlot (the card joins the
// tables with uPlot.join); tests/web/static/lines.test.mjs.
import { smooth } from "./smoothing.js";

export const PALETTE = ["#2f6fdf", "#e0572b", "#2a9d5b", "#9b51e0", "#c9a227", "#1aa3b8",
  "#d4407f", "#6b7a2a", "#8c5a3c", "#4a5fc1"];
export const DASHES = [null, [7, 4], [2, 3], [10, 3, 2, 3]];  // one per overlaid run or attempt

// A value as an answer holds it: a number, or a string such as "NaN", "inf" or "-inf".
export const num = (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v);

// An answer's columns: its points' or buckets' (format=columns, what the page asks for;
// the rows of format=rows are read too).
export function columnsOf(series) {
  if (!series.reduced) {
    const p = series.points;
    if (!Array.isArray(p)) return { steps: p.steps, walls: p.walls, ys: p.values, lows: null, highs: null };
    return { steps: p.map((q) => q[0]), walls: p.map((q) => q[1]), ys: p.map((q) => q[2]), lows: null, highs: null };
  }
  const b = series.buckets;
  if (!Array.isArray(b)) return { steps: b.step_hi, walls: b.wall, ys: b.last, lows: b.min, highs: b.max };
  return { steps: b.map((q) => q.step_hi), walls: b.map((q) => q.wall), ys: b.map((q) => q.last),
    lows: b.map((q) => q.min), highs: b.map((q) => q.max) };
}

// One series of an answer as a line: its points (or buckets) in x order.
export function line(series, layer, xMode) {
  const c = columnsOf(series);
  const start = series.wall_first ?? 0;
  const xs = xMode === "step" ? c.steps : xMode === "wall" ? c.walls : c.walls.map((w) => w - start);
  const order = c.steps.map((_, i) => i);
  if (xMode !== "step") order.sort((a, b) => xs[a] - xs[b]);
  const pick = (column) => (column === null ? null : order.map((i) => column[i]));
  const who = [series.member, series.run_path].filter((part) => part).join(" ");
  return {
    label: layer.prefix ? `${layer.prefix} ${who}` : who, layer: layer.index,
    reduced: series.reduced, xs: pick(xs), steps: pick(c.steps), ys: pick(c.ys).map(num),
    lows: pick(c.lows), highs: pick(c.highs),
  };
}

// What uPlot draws for ``lines`` (color by line, dash by layer): one table per line
// ([xs, ...its columns], for uPlot.join), the series and bands over the joined columns,
// ``drawn`` (the joined column of each line's value, for the legend) and ``hidden`` (the
// finite values a log scale cannot show).
export function build(lines, { smoothing, logY }) {
  const positive = (ys) => (logY ? ys.map((y) => (y !== null && y > 0 ? y : null)) : ys);
  const tables = [];
  const series = [{}];
  const bands = [];
  const drawn = [];
  let hidden = 0;
  lines.forEach((l, i) => {
    const stroke = PALETTE[i % PALETTE.length];
    const dash = DASHES[l.layer % DASHES.length] ?? undefined;
    const columns = [];
    if (l.reduced) {
      const base = series.length;
      columns.push(positive(l.lows), positive(l.highs));
      series.push({ stroke, width: 0, points: { show: false } },
        { stroke, width: 0, points: { show: false } });
      bands.push({ series: [base + 1, base], fill: `${stroke}2e` });
    }
    const ys = positive(l.ys);
    hidden += ys.filter((y, k) => y === null && l.ys[k] !== null && Number.isFinite(l.ys[k])).length;
    const smoothed = smooth(ys, smoothing);
    if (smoothed !== ys) {
      columns.push(ys);
      series.push({ stroke: `${stroke}50`, width: 1, dash, points: { show: false } });
    }
    columns.push(smoothed);
    drawn.push(series.length);
    series.push({ stroke, width: 1.6, dash, points: { show: false } });
    tables.push([l.xs, ...columns]);
  });
  return { tables, series, bands, drawn, hidden };
}

// The step range the visible x range [lo, hi] covers, from the lines drawn (time axes
// are not steps: the steps of the points inside are); null when no point is inside.
export function stepRange(lines, xMode, lo, hi) {
  if (xMode === "step") return { lo: Math.floor(lo), hi: Math.ceil(hi) };
  let first = Infinity;
  let last = -Infinity;
  for (const l of lines) {
    l.xs.forEach((x, i) => {
      if (x >= lo && x <= hi) {
        first = Math.min(first, l.steps[i]);
        last = Math.max(last, l.steps[i]);
      }
    });
  }
  return first <= last ? { lo: first, hi: last } : null;
}
