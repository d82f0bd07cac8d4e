// The Charts tab of a run: a grid of every chart of an attempt (its canonical curves, then
// one chart per tag no mapping names, as TensorBoard draws a tag), in sections by name
// prefix, filtered by a regular expression; smoothing, log scale and the x axis for the
// page and per chart; overlays of other attempts and runs; the raw inspector. Charts fetch
// when they come into view. The whole view lives in the URL, so a link reproduces it.
"use strict";

const runId = decodeURIComponent(location.pathname.split("/")[2]);
const $ = (id) => document.getElementById(id);
const status = (text) => { $("status").textContent = text; };
const runUrl = (run, attempt) => `/api/v1/runs/${encodeURIComponent(run)}/attempts/${attempt}`;
const X_MODES = ["step", "relative", "wall"];
const PARALLEL = 4;  // charts fetching at once

// The view as the URL holds it. Per chart: c.<key> = "s=0.9;log=1;z=lo..hi".
function view() {
  const p = new URLSearchParams(location.search);
  const smoothing = Number(p.get("smooth") ?? "0.6");
  return {
    attempt: p.get("attempt"), filter: p.get("q") ?? "",
    smoothing: smoothing >= 0 && smoothing < 1 ? smoothing : 0.6,
    logY: p.get("log") === "1", x: X_MODES.includes(p.get("x")) ? p.get("x") : "step",
    compare: (p.get("cmp") ?? "").split(",").filter((c) => c.includes("@")),
    inspect: p.get("inspect"),
  };
}

function chartView(key) {
  const raw = new URLSearchParams(location.search).get(`c.${key}`) ?? "";
  const out = {};
  for (const part of raw.split(";")) {
    const [k, v] = part.split("=");
    if (k === "z") {
      const [lo, hi] = v.split("..").map(Number);
      if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi) && lo <= hi) out.z = [lo, hi];
    } else if (k) out[k] = v;
  }
  return out;
}

function setParams(changes, { push = false } = {}) {
  const p = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") p.delete(k); else p.set(k, v);
  }
  const query = p.toString();
  history[push ? "pushState" : "replaceState"](null, "", query ? `?${query}` : location.pathname);
}

const grid = {
  cards: new Map(),
  view,
  chartView,
  // This attempt first, then what is overlaid ("run@attempt"), each with its legend prefix.
  layers() {
    const v = view();
    const layers = [{ run: runId, attempt: v.attempt, index: 0, prefix: "" }];
    v.compare.forEach((c, i) => {
      const at = c.lastIndexOf("@");
      const run = c.slice(0, at);
      layers.push({ run, attempt: c.slice(at + 1), index: i + 1,
        prefix: run === runId ? `#${c.slice(at + 1)}` : `${run}#${c.slice(at + 1)}` });
    });
    if (layers.length > 1) layers[0].prefix = `#${v.attempt}`;
    return layers;
  },
  async fetch(layer, spec, range) {
    const box = grid.cards.get(spec.key)?.box;
    const bounds = { max_points: Math.min(2000, Math.max(200, Math.round(box?.clientWidth ?? 500))),
      max_series: 20, step_min: range?.lo, step_max: range?.hi, format: "columns" };
    if (spec.kind === "curve") return Session.get(`${runUrl(layer.run, layer.attempt)}/curves/${encodeURIComponent(spec.name)}`, bounds);
    return Session.get(`${runUrl(layer.run, layer.attempt)}/tag`, { ...bounds, tag: spec.name });
  },
  setChartView(key, changes) {
    const own = { ...chartView(key), ...changes };
    const text = Object.entries(own).filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => (k === "z" ? `z=${v[0]}..${v[1]}` : `${k}=${v}`)).join(";");
    setParams({ [`c.${key}`]: text });
    const card = grid.cards.get(key);
    if ("z" in changes) card.load().catch((e) => status(e.message)); else card.draw();
  },
};

// Sections by the name's first path part, as TensorBoard groups tags; canonical first.
function sectionOf(name) {
  const slash = name.indexOf("/");
  return slash > 0 ? name.slice(0, slash) : "";
}

async function buildGrid(attempt) {
  const index = await Session.get(`${runUrl(runId, attempt)}/canonical`);
  const specs = index.curves.map((c) => ({ key: `curve:${c.name}`, name: c.name, kind: "curve" }));
  const tags = [...new Set(index.unmapped.map((u) => u.tag))].sort();
  specs.push(...tags.map((t) => ({ key: `tag:${t}`, name: t, kind: "tag" })));
  const sections = new Map();
  for (const spec of specs) {
    const name = sectionOf(spec.name);
    if (!sections.has(name)) sections.set(name, []);
    sections.get(name).push(spec);
  }
  grid.cards.clear();
  const host = $("grid");
  host.replaceChildren();
  for (const name of [...sections.keys()].sort((a, b) => (a === "") - (b === "") || a.localeCompare(b))) {
    const section = document.createElement("details");
    section.open = true;
    section.className = "section";
    section.dataset.section = name;
    const summary = document.createElement("summary");
    summary.textContent = name || "Charts";
    const count = document.createElement("span");
    count.className = "count";
    summary.append(count);
    const cards = document.createElement("div");
    cards.className = "cards";
    for (const spec of sections.get(name)) {
      const card = new Card(spec, grid);
      grid.cards.set(spec.key, card);
      cards.append(card.el);
    }
    section.append(summary, cards);
    host.append(section);
  }
  $("empty").hidden = specs.length > 0;
  if (!index.mapping_frozen) status("no metric mapping frozen for this attempt: charts are by tag");
  applyFilter();
  watch();
}

// Which charts the filter keeps (an invalid expression filters nothing, and says why).
function applyFilter() {
  const input = $("filter");
  let pattern = null;
  try {
    pattern = new RegExp(view().filter, "i");
    input.setCustomValidity("");
    input.removeAttribute("aria-invalid");
  } catch (error) {
    input.setCustomValidity(error.message);
    input.setAttribute("aria-invalid", "true");
  }
  let shown = 0;
  for (const section of document.querySelectorAll(".section")) {
    let inSection = 0;
    for (const el of section.querySelectorAll(".card")) {
      const keep = pattern === null || pattern.test(el.dataset.chart);
      el.hidden = !keep;
      inSection += keep;
    }
    section.hidden = inSection === 0;
    section.querySelector(".count").textContent = ` ${inSection}`;
    shown += inSection;
  }
  $("shown").textContent = `${shown} of ${grid.cards.size} charts`;
}

// Lazy charts: a card fetches once it comes near the viewport, a few at a time.
const queue = [];
let running = 0;
let observer = null;
function pump() {
  while (running < PARALLEL && queue.length) {
    const card = queue.shift();
    running += 1;
    card.load().catch((e) => { card.el.dataset.state = "failed"; card.about.textContent = e.message; })
      .finally(() => { running -= 1; pump(); });
  }
}
function watch() {
  if (observer) observer.disconnect();
  queue.length = 0;
  observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      queue.push([...grid.cards.values()].find((c) => c.el === entry.target));
    }
    pump();
  }, { rootMargin: "150px 0px" });
  for (const card of grid.cards.values()) observer.observe(card.el);
}

// A change of the page's view redraws the charts fetched (the x axis and smoothing need
// no fetch; overlays do).
function redraw({ refetch = false } = {}) {
  for (const card of grid.cards.values()) {
    if (card.el.dataset.state !== "drawn") continue;
    if (refetch) card.load().catch((e) => status(e.message)); else card.draw();
  }
}

