// The runs list's view as its URL holds it (search, filters, sort, page, added columns and
// their filters, the parallel coordinates), so that a link reproduces it, and the
// run-table query that answers it. Pure: no DOM (the page passes
// location.search in); tests/web/static/runsview.test.mjs.

export const SIZES = ["25", "50", "100", "200"];
export const DEFAULTS = { sort: "created", dir: "desc", time: "created", size: "50", page: "1" };
export const FIELDS = ["q", "project", "state", "time", "since", "until", "size"];
// Added columns (``col``: config:KEY or metric:TAG:last|min|max) and their filters
// (``filter``: one per column, "" for none); repeated in the URL, in order.
export const MAX_COLUMNS = 8;
export const AGGREGATES = ["last", "min", "max"];
const TEXT_SORTS = ["run_id", "project"];  // sorted A to Z first; the others newest or most first
// (an added column: most first)

// The view from ``search``, defaults filled in (page a number from 1).
export function parseView(search) {
  const params = new URLSearchParams(search);
  const v = {};
  for (const key of [...FIELDS, "sort", "dir", "page"]) v[key] = params.get(key) ?? DEFAULTS[key] ?? "";
  if (!SIZES.includes(v.size)) v.size = DEFAULTS.size;
  v.page = Math.max(1, Number.parseInt(v.page, 10) || 1);
  v.col = params.getAll("col").slice(0, MAX_COLUMNS);
  v.filter = v.col.map((_, i) => params.getAll("filter")[i] ?? "");
  v.parallel = params.get("parallel") === "1";
  return v;
}

// The list's address for ``view`` with ``changes`` (only what differs from the defaults);
// any change but the page's goes back to the first page unless ``resetPage`` is false.
export function pathFor(view, changes, { resetPage = true } = {}) {
  const v = { ...view, ...changes };
  if (resetPage && !("page" in changes)) v.page = 1;
  const params = new URLSearchParams();
  const { col = [], filter = [], parallel = false, ...rest } = v;
  for (const [key, value] of Object.entries(rest)) {
    if (value !== "" && String(value) !== (DEFAULTS[key] ?? "")) params.set(key, value);
  }
  for (const spec of col) params.append("col", spec);
  if (filter.some((f) => f)) for (const i of col.keys()) params.append("filter", filter[i] ?? "");
  if (parallel) params.set("parallel", "1");
  const query = params.toString();
  return query ? `/runs?${query}` : "/runs";
}

// A date input's day (YYYY-MM-DD) as the instant it starts, in UTC; and the next day's.
export const dayStart = (iso) => `${iso}T00:00:00Z`;
export function nextDayStart(iso) {
  const d = new Date(dayStart(iso));
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString();
}

// The /api/v1/run-table parameters for ``view``: the "to" day included, nothing empty.
export function tableParams(view) {
  const size = Number(view.size);
  const out = {};
  const set = (k, value) => { if (value) out[k] = value; };
  set("q", view.q.trim());
  set("project", view.project);
  set("state", view.state);
  set("time", view.time);
  set("since", view.since && dayStart(view.since));
  set("until", view.until && nextDayStart(view.until));
  set("sort", view.sort);
  set("dir", view.dir);
  out.limit = String(size);
  out.offset = String((view.page - 1) * size);
  const col = view.col ?? [];
  if (col.length) out.col = col;
  const filters = (view.filter ?? []).map((text, i) => filterParam(i, text)).filter(Boolean);
  if (filters.length) out.filter = filters;
  return out;
}

// A column's filter as typed ("0.01" or "adam": equal; ">=0.01", "<3", "!=sgd"; "~res":
// text holding "res") as the run-table's ``filter`` parameter for column ``index``.
export function filterParam(index, text) {
  const typed = (text ?? "").trim();
  if (!typed) return null;
  const found = typed.match(/^(<=|>=|!=|=|<|>|~)?\s*(.*)$/s);
  return `${index}${found[1] ?? "="}${found[2]}`;
}

// The column ``spec`` as its header says it: "lr", "loss (last)".
export function columnLabel(spec) {
  const config = spec.match(/^config:(.+)$/s);
  if (config) return config[1];
  const metric = spec.match(/^metric:(.+):(last|min|max)$/s);
  return metric ? `${metric[1]} (${metric[2]})` : spec;
}

// The view with column ``spec`` added (at most MAX_COLUMNS; one already there stays), or
// the column at ``index`` removed (its sort and filter with it; later sorts move down).
export function withColumn(view, spec) {
  if (view.col.includes(spec) || view.col.length >= MAX_COLUMNS) return {};
  return { col: [...view.col, spec], filter: [...view.filter, ""] };
}
export function withoutColumn(view, index) {
  const changes = { col: view.col.filter((_, i) => i !== index),
    filter: view.filter.filter((_, i) => i !== index) };
  const sorted = view.sort.match(/^col(\d)$/);
  if (sorted && Number(sorted[1]) === index) Object.assign(changes, { sort: DEFAULTS.sort, dir: DEFAULTS.dir });
  else if (sorted && Number(sorted[1]) > index) changes.sort = `col${Number(sorted[1]) - 1}`;
  return changes;
}

// A click on ``key``'s header: the other direction when the list is sorted by it already,
// else A to Z for text and newest or most first for the rest.
export function sortBy(view, key) {
  if (view.sort === key) return { sort: key, dir: view.dir === "asc" ? "desc" : "asc" };
  return { sort: key, dir: TEXT_SORTS.includes(key) ? "asc" : "desc" };
}

// "51–100 of 230" for ``shown`` rows of ``total`` on ``view``'s page ("0 runs" for none);
// whether a previous and a next page exist.
export function pageOf(view, shown, total) {
  const size = Number(view.size);
  const first = (view.page - 1) * size;
  return {
    range: total ? `${(first + Math.min(1, shown)).toLocaleString()}–${(first + shown).toLocaleString()} of ${total.toLocaleString()}`
      : "0 runs",
    previous: view.page > 1, next: first + shown < total,
  };
}
