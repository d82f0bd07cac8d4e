// How an answer becomes lines on a chart: x by step, wall time or time relative to the
// series' first point; TensorBoard's debiased EMA smoothing; log scales without the values
// they cannot show; and the uPlot data, series and bands for a set of lines (a reduced
// line draws its min/max envelope as a band under its last values).
"use strict";

const Plot = (() => {
  const PALETTE = ["#2f6fdf", "#e0572b", "#2a9d5b", "#9b51e0", "#c9a227", "#1aa3b8",
    "#d4407f", "#6b7a2a", "#8c5a3c", "#4a5fc1"];
  const DASHES = [null, [7, 4], [2, 3], [10, 3, 2, 3]];  // one per overlaid run or attempt
  const num = (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v);

  // TensorBoard's smoothing (its scalars dashboard): an exponential moving average whose
  // start is debiased, non-finite values passed through, a constant series left as it is.
  function smooth(ys, weight) {
    if (!(weight > 0)) return ys;
    const finite = ys.filter((y) => y !== null && Number.isFinite(y));
    if (finite.every((y) => y === finite[0])) return ys;
    let last = 0;
    let n = 0;
    return ys.map((y) => {
      if (y === null || !Number.isFinite(y)) return y;
      last = last * weight + (1 - weight) * y;
      n += 1;
      return last / (1 - weight ** n);
    });
  }

  // An answer's columns: its points' or buckets' (format=columns, what the page asks for;
  // the rows of format=rows are read too).
  function columnsOf(series) {
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
  function line(series, layer, xMode) {
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

  // uPlot's data, series and bands for ``lines`` (color by line, dash by layer).
  function build(lines, { smoothing, logY }) {
    const positive = (ys) => (logY ? ys.map((y) => (y !== null && y > 0 ? y : null)) : ys);
    const tables = [];
    const series = [{}];
    const bands = [];
    const drawn = [];  // for the legend: the uPlot series index of each line's value
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
    // Where one line has no x another has, join leaves undefined, which a line runs over; a
    // value a line lacks (none finite in a bucket, or not on a log scale) is null: a gap.
    const data = tables.length ? uPlot.join(tables) : [[]];
    return { data, series, bands, drawn, hidden };
  }

  // The step range the visible x range [lo, hi] covers, from the lines drawn (time axes
  // are not steps: the steps of the points inside are).
  function stepRange(lines, xMode, lo, hi) {
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

  function duration(seconds) {
    const s = Math.abs(seconds);
    const sign = seconds < 0 ? "-" : "";
    if (s < 60) return `${sign}${+s.toFixed(1)}s`;
    if (s < 3600) return `${sign}${Math.floor(s / 60)}m${Math.round(s % 60) ? ` ${Math.round(s % 60)}s` : ""}`;
    const m = Math.round((s % 3600) / 60);
    return `${sign}${Math.floor(s / 3600)}h${m ? ` ${m}m` : ""}`;
  }

  // A scale's range no narrower than 1e-13 of its magnitude (a few hundred doubles apart):
  // uPlot steps its ticks by adding the tick interval, which a value near 1e17 would not
  // notice were the interval below the doubles' spacing there (16).
  function guarded([lo, hi]) {
    if (lo === null || hi === null || !Number.isFinite(lo) || !Number.isFinite(hi)) return [lo, hi];
    const least = Math.max(Math.abs(lo), Math.abs(hi)) * 1e-13;
    if (hi - lo >= least) return [lo, hi];
    const mid = lo / 2 + hi / 2;
    return [mid - least, mid + least];
  }

  const compact = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 5 });
  const huge = (v) => Math.abs(v) >= 1e9 || (v !== 0 && Math.abs(v) < 1e-4);
  const value = (v) => (v === null || v === undefined ? "–" : !Number.isFinite(v) ? String(v)
    : huge(v) ? v.toExponential(4) : compact.format(v));

  // Axis labels: as uPlot writes them, or in exponent form with as many digits as tell the
  // ticks apart when they are very large or very small.
  function ticks(u, splits) {
    const finite = splits.filter((v) => v !== null && Number.isFinite(v));
    const big = Math.max(0, ...finite.map(Math.abs));
    if (!finite.some(huge)) return splits.map((v) => (v === null ? "" : compact.format(v)));
    const incr = finite.length > 1 ? Math.abs(finite[1] - finite[0]) : big;
    const digits = Math.min(15, Math.max(1, Math.ceil(Math.log10(big / incr || 1)) + 1));
    return splits.map((v) => (v === null ? "" : v === 0 ? "0" : v.toExponential(digits)));
  }

  // Room for an axis' labels: its size (y) or the space between its ticks (x).
  const labelSize = (u, values) => 18 + 8 * Math.max(3, ...(values ?? []).map((v) => String(v).length));
  const tickSpace = (u, axis, min, max) => (huge(min) || huge(max) ? 120 : 50);

  return { PALETTE, DASHES, smooth, line, build, stepRange, duration, value, ticks, guarded,
    labelSize, tickSpace };
})();
