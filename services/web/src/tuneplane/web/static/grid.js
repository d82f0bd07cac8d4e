// The Charts tab's grid: every chart of an attempt (its canonical curves, then one chart per
// tag no mapping names, as TensorBoard draws a tag), in sections by name prefix, filtered by
// a regular expression. Charts fetch when they come into view, a few at a time. The view
// lives in the URL (chartsview.js reads and writes it), so a link reproduces it.
import { Card } from "./card.js";
import { encodeChartView, layersOf, maxPointsFor, parseChartView, parseView, sectionOf,
  sectionOrder, withParams } from "./chartsview.js";
import { $, status } from "./dom.js";
import { attemptApi, runIdOf } from "./paths.js";
import { Session } from "./session.js";

export const runId = runIdOf(location.pathname);
const PARALLEL = 4;  // charts fetching at once

// The page's view, and one chart's own, as the URL holds them now.
export const view = () => parseView(location.search);
export const chartView = (key) => parseChartView(location.search, key);

// The URL with ``changes`` made, a new history entry when ``push``.
export function setParams(changes, { push = false } = {}) {
  const query = withParams(location.search, changes);
  history[push ? "pushState" : "replaceState"](null, "", query || location.pathname);
}

// What a card asks of the page (see Card).
export const grid = {
  cards: new Map(),
  view,
  chartView,
  layers: () => layersOf(runId, view()),
  async fetch(layer, spec, range) {
    const box = grid.cards.get(spec.key)?.box;
    const bounds = { max_points: maxPointsFor(box?.clientWidth), max_series: 20,
      step_min: range?.lo, step_max: range?.hi, format: "columns" };
    const at = attemptApi(layer.run, layer.attempt);
    if (spec.kind === "curve") return Session.get(`${at}/curves/${encodeURIComponent(spec.name)}`, bounds);
    return Session.get(`${at}/tag`, { ...bounds, tag: spec.name });
  },
  setChartView(key, changes) {
    setParams({ [`c.${key}`]: encodeChartView({ ...chartView(key), ...changes }) });
    const card = grid.cards.get(key);
    if ("z" in changes) card.load().catch((e) => status(e.message)); else card.draw();
  },
};

// The grid of ``attempt``'s charts, in sections, canonical curves first.
export async function buildGrid(attempt) {
  const index = await Session.get(`${attemptApi(runId, attempt)}/canonical`);
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
  for (const name of sectionOrder(sections.keys())) {
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
export function applyFilter() {
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
export function redraw({ refetch = false } = {}) {
  for (const card of grid.cards.values()) {
    if (card.el.dataset.state !== "drawn") continue;
    if (refetch) card.load().catch((e) => status(e.message)); else card.draw();
  }
}
