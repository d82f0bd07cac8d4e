// The Charts tab's view as its URL holds it, so that a link reproduces it: the attempt,
// the filter (q), smoothing (smooth), log y (log), the x axis (x), overlays (cmp, each
// "run@attempt"), the inspected series (inspect) and each chart's own settings (c.<key> =
// "s=0.9;log=1;z=lo..hi"); the layers a chart draws, which sections start open, how much of
// the index a request asks for and how many points a chart asks for. Pure: no DOM (the
// page passes location.search in); tests/web/static/chartsview.test.mjs.

export const X_MODES = ["step", "relative", "wall"];
export const DEFAULT_SMOOTHING = 0.6;
// A smoothing weight a view may hold: TensorBoard's slider goes from 0 up to, not to, 1.
const weight = (v) => v >= 0 && v < 1;

// The page's view from ``search`` (location.search), defaults filled in.
export function parseView(search) {
  const p = new URLSearchParams(search);
  const smoothing = Number(p.get("smooth") ?? String(DEFAULT_SMOOTHING));
  return {
    attempt: p.get("attempt"), filter: p.get("q") ?? "",
    smoothing: weight(smoothing) ? smoothing : DEFAULT_SMOOTHING,
    logY: p.get("log") === "1", x: X_MODES.includes(p.get("x")) ? p.get("x") : "step",
    compare: (p.get("cmp") ?? "").split(",").filter((c) => c.includes("@")),
    inspect: p.get("inspect"),
  };
}

// One chart's own settings from ``search``: s (its smoothing, a string), log ("0" or "1")
// and z (its zoom, [lo, hi] steps); what is not one of these, or not valid, is left out.
export function parseChartView(search, key) {
  const raw = new URLSearchParams(search).get(`c.${key}`) ?? "";
  const out = {};
  for (const part of raw.split(";")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    const k = part.slice(0, at), v = part.slice(at + 1);
    if (k === "z") {
      const [lo, hi] = v.split("..").map((n) => (n === "" ? NaN : Number(n)));
      if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi) && lo <= hi) out.z = [lo, hi];
    } else if (k === "s") {
      if (v !== "" && weight(Number(v))) out.s = v;
    } else if (k === "log") {
      if (v === "0" || v === "1") out.log = v;
    }
  }
  return out;
}

// A chart's own settings as c.<key> holds them ("" when it has none).
export const encodeChartView = (own) => Object.entries(own)
  .filter(([, v]) => v !== null && v !== undefined && v !== "")
  .map(([k, v]) => (k === "z" ? `z=${v[0]}..${v[1]}` : `${k}=${v}`)).join(";");

// ``search`` with ``changes`` made (null, undefined or "" removes a parameter), as a query
// ("?a=1&b=2", or "" for none).
export function withParams(search, changes) {
  const p = new URLSearchParams(search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") p.delete(k); else p.set(k, v);
  }
  const query = p.toString();
  return query ? `?${query}` : "";
}

// What a chart draws: ``run``'s attempt first, then each overlay ("run@attempt"), each with
// the prefix its legend labels take (none when nothing is overlaid).
export function layersOf(run, view) {
  const layers = [{ run, attempt: view.attempt, index: 0, prefix: "" }];
  view.compare.forEach((c, i) => {
    const at = c.lastIndexOf("@");
    const other = c.slice(0, at), attempt = c.slice(at + 1);
    layers.push({ run: other, attempt, index: i + 1,
      prefix: other === run ? `#${attempt}` : `${other}#${attempt}` });
  });
  if (layers.length > 1) layers[0].prefix = `#${view.attempt}`;
  return layers;
}

// The index's pages: sections a request, and a section's charts a request; an index of at
// most SMALL_INDEX charts (those the filter keeps) comes whole with its sections.
export const SECTION_PAGE = 200;
export const CHART_PAGE = 60;
export const SMALL_INDEX = 200;

// Whether a section starts open: as the user last left it (``toggled``: name → open), else
// every section of a small index (``charts`` the filter keeps, in all) and only the first
// (``position`` 0) of a bigger one, as TensorBoard opens its first category of many.
export const startsOpen = (name, position, charts, toggled) =>
  toggled.get(name) ?? (charts <= SMALL_INDEX || position === 0);

// How many points a chart asks for: about one per pixel of its width, 200 to 2000.
export const maxPointsFor = (width) => Math.min(2000, Math.max(200, Math.round(width ?? 500)));
