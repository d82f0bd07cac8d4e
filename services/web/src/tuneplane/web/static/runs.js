// The runs list: every run the signed-in user may view, as /api/v1/run-table answers it.
// The view (search, filters, sort, page) lives in the URL, so a link reproduces it.
"use strict";

const $ = (id) => document.getElementById(id);
const status = (text) => { $("status").textContent = text; };
const SIZES = ["25", "50", "100", "200"];
const DEFAULTS = { sort: "created", dir: "desc", time: "created", size: "50", page: "1" };
const FIELDS = ["q", "project", "state", "time", "since", "until", "size"];

// The view as the URL holds it, defaults filled in.
function view() {
  const params = new URLSearchParams(location.search);
  const v = {};
  for (const key of [...FIELDS, "sort", "dir", "page"]) v[key] = params.get(key) ?? DEFAULTS[key] ?? "";
  if (!SIZES.includes(v.size)) v.size = DEFAULTS.size;
  v.page = Math.max(1, Number.parseInt(v.page, 10) || 1);
  return v;
}

// A new view into the URL (only what differs from the defaults), then the rows for it.
function go(changes, { resetPage = true } = {}) {
  const v = { ...view(), ...changes };
  if (resetPage && !("page" in changes)) v.page = 1;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(v)) {
    if (value !== "" && String(value) !== (DEFAULTS[key] ?? "")) params.set(key, value);
  }
  const query = params.toString();
  history.pushState(null, "", query ? `/runs?${query}` : "/runs");
  load().catch((e) => status(e.message));
}

const day = (iso) => `${iso}T00:00:00Z`;  // a date input's day, in UTC
function nextDay(iso) {
  const d = new Date(day(iso));
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString();
}

function when(value) {
  if (!value) return null;
  const d = new Date(value);
  return d.toISOString().slice(0, 16).replace("T", " ");
}

function ago(value, now) {
  const seconds = Math.max(0, (now - new Date(value)) / 1000);
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)}${unit} ago`;
  }
  return "just now";
}

function rowOf(run, now) {
  const tr = document.createElement("tr");
  tr.dataset.run = run.run_id;
  const link = document.createElement("a");
  link.href = `/runs/${encodeURIComponent(run.run_id)}/charts`;
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
  const size = Number(v.size);
  const url = new URL("/api/v1/run-table", location.origin);
  const set = (k, value) => { if (value) url.searchParams.set(k, value); };
  set("q", v.q.trim());
  set("project", v.project);
  set("state", v.state);
  set("time", v.time);
  set("since", v.since && day(v.since));
  set("until", v.until && nextDay(v.until));  // the "to" day is included
  set("sort", v.sort);
  set("dir", v.dir);
  url.searchParams.set("limit", size);
  url.searchParams.set("offset", (v.page - 1) * size);
  status("loading…");
  const table = await Session.get(url);
  if (asked !== latest) return;
  const now = Date.now();
  $("runs").tBodies[0].replaceChildren(...table.runs.map((r) => rowOf(r, now)));
  $("empty").hidden = table.runs.length > 0;
  const first = (v.page - 1) * size;
  $("range").textContent = table.total
    ? `${(first + Math.min(1, table.runs.length)).toLocaleString()}–${(first + table.runs.length).toLocaleString()} of ${table.total.toLocaleString()}`
    : "0 runs";
  $("prev").disabled = v.page <= 1;
  $("next").disabled = first + table.runs.length >= table.total;
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
    button.onclick = () => {
      const v = view();
      const key = button.dataset.sort;
      const text = key === "run_id" || key === "project";
      const dir = v.sort === key ? (v.dir === "asc" ? "desc" : "asc") : (text ? "asc" : "desc");
      go({ sort: key, dir });
    };
  }
  $("prev").onclick = () => go({ page: view().page - 1 });
  $("next").onclick = () => go({ page: view().page + 1 });
  window.addEventListener("popstate", () => load().catch((e) => status(e.message)));
  await load();
}

main().catch((e) => status(e.message));
