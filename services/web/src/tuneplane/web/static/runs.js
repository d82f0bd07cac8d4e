// The runs list: every run the signed-in user may view, as /api/v1/run-table answers it,
// with added columns of settings and metric summaries and their parallel coordinates.
// The view (search, filters, sort, page, columns) lives in the URL (runsview.js reads and
// writes it), so a link reproduces it.
import { $, cell, el, status } from "./dom.js";
import { ago, value as number, utcMinute as when } from "./format.js";
import { drawParallel } from "./parallel.js";
import { chartsPage } from "./paths.js";
import { FIELDS, columnLabel, pageOf, parseView, pathFor, sortBy, tableParams, withColumn,
  withoutColumn } from "./runsview.js";
import { Session } from "./session.js";

const view = () => parseView(location.search);

// A new view into the URL (only what differs from the defaults), then the rows for it.
function go(changes, options) {
  history.pushState(null, "", pathFor(view(), changes, options));
  load().catch((e) => status(e.message));
}

function rowOf(run, now) {
  const tr = document.createElement("tr");
  tr.dataset.run = run.run_id;
  const link = document.createElement("a");
  link.href = chartsPage(run.run_id);
  link.textContent = run.run_id;
  cell(tr, link);
  cell(tr, run.project);
  cell(tr, run.attempt === null ? null : `#${run.attempt}`);
  const state = document.createElement("span");
  state.className = `state ${run.state}`;
  state.textContent = run.state === "none" ? "no attempt" : run.state;
  cell(tr, state);
  cell(tr, run.members ? run.members.toLocaleString() : null, "num");
  cell(tr, run.points.toLocaleString(), "num");
  cell(tr, when(run.created_at));
  const last = cell(tr, run.last_batch_at ? ago(run.last_batch_at, now) : null);
  if (run.last_batch_at) last.title = when(run.last_batch_at) + " UTC";
  for (const v of run.columns) {
    const td = cell(tr, v === null ? null : typeof v === "number" ? number(v) : String(v),
      typeof v === "number" ? "num" : "config");
    if (typeof v === "number") td.title = String(v);  // every digit
  }
  return tr;
}

// The added columns' headers (sort, remove) and their filter inputs, as the view says.
function showColumns(v) {
  const head = $("runs").tHead.rows[0];
  for (const th of head.querySelectorAll("th.added")) th.remove();
  const filters = $("filter-row");
  filters.hidden = !v.col.length;
  filters.replaceChildren(el("td", { colSpan: 8 }));
  for (const [i, spec] of v.col.entries()) {
    const sort = el("button", { type: "button", dataset: { sort: `col${i}` } }, columnLabel(spec));
    sort.onclick = () => go(sortBy(view(), `col${i}`));
    const remove = el("button", { type: "button", className: "remove", title: `remove ${spec}` }, "×");
    remove.onclick = () => go(withoutColumn(view(), i));
    head.append(el("th", { className: "added", title: spec }, sort, remove));
    const input = el("input", { type: "search", value: v.filter[i], placeholder: "filter",
      ariaLabel: `filter ${spec}`, title: "a value (0.01, adam), a comparison (>=0.01, <3, !=sgd) "
        + "or ~text (holding it); Enter applies" });
    input.onchange = () => go({ filter: view().filter.map((f, k) => (k === i ? input.value : f)) });
    filters.append(el("td", {}, input));
  }
}

// The keys the add-column form offers: settings' keys, or metric tags and canonical names.
let offered = { config: [], metrics: [], names: [] };
function showOffered() {
  const metric = $("col-kind").value === "metric";
  $("col-agg").hidden = !metric;
  $("col-key").placeholder = metric ? "a tag or canonical name" : "a setting's key";
  const keys = metric ? [...offered.names, ...offered.metrics] : offered.config;
  $("col-keys").replaceChildren(...keys.map((k) => el("option", { value: k })));
}
async function loadOffered(project) {
  offered = await Session.get("/api/v1/run-columns", { project: project || undefined });
  showOffered();
}

// The form and the headers show the view in the URL.
function show(v) {
  for (const key of FIELDS) $(key).value = v[key];
  showColumns(v);
  $("parallel").setAttribute("aria-pressed", String(v.parallel));
  $("parallel-view").hidden = !v.parallel;
  for (const th of document.querySelectorAll("th")) th.removeAttribute("aria-sort");
  const sorted = document.querySelector(`th button[data-sort="${v.sort}"]`);
  if (sorted) sorted.parentElement.setAttribute("aria-sort", v.dir === "asc" ? "ascending" : "descending");
}

let latest = 0;  // a slower answer to an older view must not overwrite a newer one

async function load() {
  const asked = ++latest;
  const v = view();
  show(v);
  status("loading…");
  const table = await Session.get("/api/v1/run-table", tableParams(v));
  if (asked !== latest) return;
  const now = Date.now();
  $("runs").tBodies[0].replaceChildren(...table.runs.map((r) => rowOf(r, now)));
  $("empty").hidden = table.runs.length > 0;
  const page = pageOf(v, table.runs.length, table.total);
  $("range").textContent = page.range;
  $("prev").disabled = !page.previous;
  $("next").disabled = !page.next;
  if (v.parallel) drawParallel($("parallel-view"), v.col, table.runs);
  status("");
  document.body.dataset.ready = "true";
}

async function main() {
  if (!(await Session.header())) return;
  for (const p of await Session.get("/api/v1/projects")) {
    const option = document.createElement("option");
    option.value = option.textContent = p.project;
    $("project").append(option);
  }
  let typing = null;
  $("q").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => go({ q: $("q").value }), 300);
  });
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); go({ q: $("q").value }); });
  for (const key of FIELDS.filter((k) => k !== "q")) {
    $(key).addEventListener("change", () => go({ [key]: $(key).value }));
  }
  $("reset").onclick = () => {
    history.pushState(null, "", "/runs");
    load().catch((e) => status(e.message));
  };
  for (const button of document.querySelectorAll("th button[data-sort]")) {
    button.onclick = () => go(sortBy(view(), button.dataset.sort));
  }
  $("col-kind").onchange = showOffered;
  $("add-column").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $("col-key").value.trim();
    const spec = $("col-kind").value === "metric" ? `metric:${key}:${$("col-agg").value}` : `config:${key}`;
    $("col-key").value = "";
    go(withColumn(view(), spec));
  });
  $("parallel").onclick = () => go({ parallel: !view().parallel }, { resetPage: false });
  $("project").addEventListener("change", () => loadOffered($("project").value).catch((e) => status(e.message)));
  loadOffered(view().project).catch((e) => status(e.message));
  $("prev").onclick = () => go({ page: view().page - 1 });
  $("next").onclick = () => go({ page: view().page + 1 });
  window.addEventListener("popstate", () => load().catch((e) => status(e.message)));
  await load();
}

main().catch((e) => status(e.message));
