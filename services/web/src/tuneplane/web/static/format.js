// How the pages write numbers and times: a chart's legend values, durations on a relative
// time axis, a histogram's axis labels, the UTC times and ages of the list pages, and a
// record's local time on the Media tab. Pure: no DOM; tests/web/static/format.test.mjs.

// Up to 5 significant digits, grouped as the reader's locale groups them.
export const compact = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 5 });

// Too large or too small for ``compact``: such values are written in exponent form.
export const huge = (v) => Math.abs(v) >= 1e9 || (v !== 0 && Math.abs(v) < 1e-4);

// A legend's value: "–" for none, NaN and ±Infinity as words, else compact or exponent form.
export const value = (v) => (v === null || v === undefined ? "–" : !Number.isFinite(v) ? String(v)
  : huge(v) ? v.toExponential(4) : compact.format(v));

// Seconds as the relative time axis labels them: "12.5s", "3m 20s", "2h 5m" (rounded as
// a whole, so 3599.6 s is "1h", not "59m 60s"); "" for a value that is not finite.
export function duration(seconds) {
  if (!Number.isFinite(seconds)) return "";
  const sign = seconds < 0 ? "-" : "";
  const s = Math.abs(seconds);
  const tenths = +s.toFixed(1);
  if (tenths < 60) return `${sign}${tenths}s`;
  const whole = Math.round(s);
  if (whole < 3600) return `${sign}${Math.floor(whole / 60)}m${whole % 60 ? ` ${whole % 60}s` : ""}`;
  const minutes = Math.round(s / 60);
  return `${sign}${Math.floor(minutes / 60)}h${minutes % 60 ? ` ${minutes % 60}m` : ""}`;
}

// A histogram axis label: 4 significant digits, exponent form from 1e4 and below 1e-3.
export const histogramLabel = (v) => (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3)
  ? v.toExponential(1) : `${+v.toPrecision(4)}`);

// An ISO time (or anything Date reads) in UTC to the minute, "2025-01-02 03:04"; null for none.
export const utcMinute = (v) => (v ? new Date(v).toISOString().slice(0, 16).replace("T", " ") : null);

// The same to the second, "2025-01-02 03:04:05".
export const utcSecond = (v) => (v ? new Date(v).toISOString().slice(0, 19).replace("T", " ") : null);

// How long before ``now`` (ms since the epoch) ``value`` was: "3d ago", "5h ago", "2m ago",
// "just now" (a time after ``now`` too: clocks differ).
export function ago(value, now) {
  const seconds = Math.max(0, (now - new Date(value)) / 1000);
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)}${unit} ago`;
  }
  return "just now";
}

// A count in the reader's locale; null for none.
export const count = (n) => (n === null || n === undefined ? null : n.toLocaleString());

// A wall time (seconds since the epoch) in the reader's locale and time zone, to the second.
export const localTime = (wall) => new Date(wall * 1000).toLocaleString(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
