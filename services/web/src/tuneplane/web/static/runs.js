// The runs list: every run the signed-in user may view, as /api/v1/run-table answers it.
// The view (search, filters, sort, page) lives in the URL (runsview.js reads and writes
// it), so a link reproduces it.
import { $, cell, status } from "./dom.js";
import { ago, utcMinute as when } from "./format.js";
import { chartsPage } from "./paths.js";
import { FIELDS, pageOf, parseView, pathFor, sortBy, tableParams } from "./runsview.js";
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
  return tr;
}

// The form and the headers show the view in the URL.
function show(v) {
  for (const key of FIELDS) $(key).value = v[key];
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
  $("prev").onclick = () => go({ page: view().page - 1 });
  $("next").onclick = () => go({ page: view().page + 1 });
  window.addEventListener("popstate", () => load().catch((e) => status(e.message)));
  await load();
}

main().catch((e) => status(e.message));
