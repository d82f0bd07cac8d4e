// The runs list's view as its URL holds it (search, filters, sort, page), so that a link
// reproduces it, and the run-table query that answers it. Pure: no DOM (the page passes
// location.search in); tests/web/static/runsview.test.mjs.

export const SIZES = ["25", "50", "100", "200"];
export const DEFAULTS = { sort: "created", dir: "desc", time: "created", size: "50", page: "1" };
export const FIELDS = ["q", "project", "state", "time", "since", "until", "size"];
const TEXT_SORTS = ["run_id", "project"];  // sorted A to Z first; the others newest or most first

// The view from ``search``, defaults filled in (page a number from 1).
export function parseView(search) {
  const params = new URLSearchParams(search);
  const v = {};
  for (const key of [...FIELDS, "sort", "dir", "page"]) v[key] = params.get(key) ?? DEFAULTS[key] ?? "";
  if (!SIZES.includes(v.size)) v.size = DEFAULTS.size;
  v.page = Math.max(1, Number.parseInt(v.page, 10) || 1);
  return v;
}

// The list's address for ``view`` with ``changes`` (only what differs from the defaults);
// any change but the page's goes back to the first page unless ``resetPage`` is false.
export function pathFor(view, changes, { resetPage = true } = {}) {
  const v = { ...view, ...changes };
  if (resetPage && !("page" in changes)) v.page = 1;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(v)) {
    if (value !== "" && String(value) !== (DEFAULTS[key] ?? "")) params.set(key, value);
  }
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
  return out;
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
