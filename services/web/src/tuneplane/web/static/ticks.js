// Tick choice and axis room: the charts' axis labels (uPlot's ``values``), the room they
// need, a scale's range kept wide enough for uPlot to step its ticks, and the evenly
// spaced "nice" ticks of a histogram's value axis. Pure: no DOM, no uPlot;
// tests/web/static/ticks.test.mjs.
import { compact, huge } from "./format.js";

// Axis labels: as uPlot writes them, or in exponent form with as many digits as tell the
// ticks apart when they are very large or very small. ``u`` (the uPlot) is not used.
export function ticks(u, splits) {
  const finite = splits.filter((v) => v !== null && Number.isFinite(v));
  const big = Math.max(0, ...finite.map(Math.abs));
  if (!finite.some(huge)) return splits.map((v) => (v === null ? "" : compact.format(v)));
  const incr = finite.length > 1 ? Math.abs(finite[1] - finite[0]) : big;
  const digits = Math.min(15, Math.max(1, Math.ceil(Math.log10(big / incr || 1)) + 1));
  return splits.map((v) => (v === null ? "" : v === 0 ? "0" : v.toExponential(digits)));
}

// Room for an axis' labels: its size (y) or the space between its ticks (x).
export const labelSize = (u, values) => 18 + 8 * Math.max(3, ...(values ?? []).map((v) => String(v).length));
export const tickSpace = (u, axis, min, max) => (huge(min) || huge(max) ? 120 : 50);

// A scale's range no narrower than 1e-13 of its magnitude (a few hundred doubles apart):
// uPlot steps its ticks by adding the tick interval, which a value near 1e17 would not
// notice were the interval below the doubles' spacing there (16).
export function guarded([lo, hi]) {
  if (lo === null || hi === null || !Number.isFinite(lo) || !Number.isFinite(hi)) return [lo, hi];
  const least = Math.max(Math.abs(lo), Math.abs(hi)) * 1e-13;
  if (hi - lo >= least) return [lo, hi];
  const mid = lo / 2 + hi / 2;
  return [mid - least, mid + least];
}

// About ``wanted`` ticks over [lo, hi], 1, 2 or 5 times a power of ten apart, at most
// wanted + 2 of them, counted: a writer's buckets may lie where the tick step is below the
// values' precision (1e17, 16 apart), and there ``t += step`` never passes ``hi``.
export function niceTicks(lo, hi, wanted) {
  const raw = (hi - lo) / wanted;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const out = [];
  if (!(step > 0 && Number.isFinite(step))) return out;
  const first = Math.ceil(lo / step) * step;
  for (let k = 0; k <= wanted + 1; k++) {
    const t = first + k * step;
    if (t > hi + step * 1e-9) break;
    const tick = +t.toPrecision(12);
    if (out[out.length - 1] !== tick) out.push(tick);
  }
  return out;
}
