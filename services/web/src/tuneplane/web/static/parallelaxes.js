// The axes of the parallel coordinates view: one per added column, each placing a run's
// value between 0 (bottom) and 1 (top). Numbers lie on a linear axis, or on a log axis when
// every value is positive and they span a hundredfold or more (learning rates, weight
// decays); text and booleans lie on an axis of their distinct values, sorted. A run without
// a value has no place on that axis (null). Pure: tests/web/static/parallelaxes.test.mjs.
import { value as shown } from "./format.js";

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);

// The axis of ``values`` (one per run; null for none): { kind, place(v) → 0..1 | null,
// ticks: [{ at, label }] } with kind "linear", "log" or "category".
export function axisOf(values) {
  const present = values.filter((v) => v !== null && v !== undefined);
  if (present.length && present.every(isNumber)) return numberAxis(present);
  const names = [...new Set(present.map(String))].sort();
  const step = names.length > 1 ? 1 / (names.length - 1) : 0;
  const at = new Map(names.map((n, i) => [n, names.length > 1 ? i * step : 0.5]));
  return {
    kind: "category",
    place: (v) => (v === null || v === undefined ? null : at.get(String(v)) ?? null),
    ticks: names.map((n) => ({ at: at.get(n), label: n })),
  };
}

function numberAxis(present) {
  let low = Math.min(...present);
  let high = Math.max(...present);
  const log = low > 0 && high / low >= 100;
  const f = log ? Math.log10 : (x) => x;
  if (low === high) { low -= 1; high += 1; }
  const [a, b] = [f(low), f(high)];
  const place = (v) => (isNumber(v) && (!log || v > 0) ? (f(v) - a) / (b - a) : null);
  const ticks = log
    ? decades(low, high).map((t) => ({ at: place(t), label: shown(t) }))
    : [0, 0.25, 0.5, 0.75, 1].map((q) => ({ at: q, label: shown(low + q * (high - low)) }));
  return { kind: log ? "log" : "linear", place, ticks };
}

// The powers of ten from ``low`` to ``high`` (and both ends when fewer than two fall inside).
function decades(low, high) {
  const out = [];
  for (let e = Math.ceil(Math.log10(low)); e <= Math.floor(Math.log10(high)); e += 1) out.push(10 ** e);
  return out.length >= 2 ? out : [low, high];
}

// A color from blue (0) through teal and yellow to orange (1), for a run's place on the
// colored axis; grey when it has none.
const STOPS = [[49, 104, 173], [42, 157, 143], [233, 196, 106], [231, 111, 81]];
export function colorAt(t) {
  if (t === null || t === undefined) return "rgb(160,166,173)";
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const mix = STOPS[i].map((c, k) => Math.round(c + (STOPS[i + 1][k] - c) * (x - i)));
  return `rgb(${mix.join(",")})`;
}
