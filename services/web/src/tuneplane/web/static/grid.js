// The Charts tab's grid: an attempt's charts (its canonical curves, then one chart per tag
// no mapping names, as TensorBoard draws a tag) in sections by name prefix, filtered by a
// regular expression. The server holds the index (.../charts/sections, .../charts): the grid
// asks for the sections with their counts, then an open section's charts a page at a time
// as they come into view, and a chart's data once the chart does, a few at a time. The view
// lives in the URL (chartsview.js reads and writes it), so a link reproduces it.
import { Card } from "./card.js";
import { CHART_PAGE, SECTION_PAGE, SMALL_INDEX, encodeChartView, layersOf, maxPointsFor, parseChartView,
  parseView, startsOpen, withParams } from "./chartsview.js";
import { $, el, status } from "./dom.js";
import { attemptApi, runIdOf } from "./paths.js";
import { Session } from "./session.js";

export const runId = runIdOf(location.pathname);
const PARALLEL = 4;  // charts fetching at once
const FILTER_WAIT = 250;  // ms without typing before the filter is asked for

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

// Sections the user opened or closed (name → open), kept while the page is.
const toggled = new Map();
// The grid shown: its attempt and filter, and what watches its cards and sections come into
// view. A newer build (another attempt, another filter) makes an older one's answers moot.
let shown = null;

// Lazy charts: a card fetches once it comes near the viewport, a few at a time.
const queue = [];
let running = 0;
function pump() {
  while (running < PARALLEL && queue.length) {
    const card = queue.shift();
    running += 1;
    card.load().catch((e) => { card.el.dataset.state = "failed"; card.about.textContent = e.message; })
      .finally(() => {
        running -= 1;
        if (card.stale) {  // the overlays changed while it fetched
          card.stale = false;
          queue.unshift(card);
        }
        pump();
      });
  }
}

// Whether ``element`` is within MARGIN of the viewport now (an observer's entry may be
// older than the page appended since).
const MARGIN = 150;
function near(element) {
  const box = element.getBoundingClientRect();
  return box.bottom > -MARGIN && box.top < innerHeight + MARGIN;
}

class Build {
  constructor(attempt, filter) {
    this.attempt = attempt;
    this.filter = filter;
    this.api = `${attemptApi(runId, attempt)}/charts`;
    this.sections = [];
    this.watched = new Map();  // element → what to do when it comes into view
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        const act = this.watched.get(entry.target);
        if (act) act();
      }
      pump();
    }, { rootMargin: `${MARGIN}px 0px` });
  }

  current() { return shown === this; }

  // ``act`` once ``element`` is near the viewport (now, if it is: observing tells at once).
  watch(element, act) {
    this.watched.set(element, act);
    this.rewatch(element);
  }

  // Tells anew whether ``element`` is in view (it may have stayed so, hidden, in a section
  // closed: a closed <details> keeps its content's boxes where they were).
  rewatch(element) {
    if (!this.watched.has(element)) return;
    this.observer.unobserve(element);
    this.observer.observe(element);
  }

  stop() { this.observer.disconnect(); }

  // A card for ``entry`` (one the grid showed before is kept, drawn as it is).
  card(entry, previous) {
    const card = previous.get(entry.key) ?? new Card({ key: entry.key, name: entry.name, kind: entry.kind }, grid);
    grid.cards.set(entry.key, card);
    this.watch(card.el, () => {
      if (!card.el.closest(".section")?.open) return;  // until its section opens
      this.observer.unobserve(card.el);
      this.watched.delete(card.el);
      if (card.el.dataset.state === "waiting" && this.current()) queue.push(card);
    });
    return card;
  }
}

// One section of the grid: its header with the count, and its charts, asked for a page at a
// time while it is open and its end comes into view.
class Section {
  constructor(build, info, open, previous) {
    this.build = build;
    this.info = info;
    this.previous = previous;
    this.after = undefined;  // the next page's cursor; null once every chart is there
    this.loading = null;
    this.cards = el("div", { className: "cards" });
    this.end = el("div", { className: "more" });
    this.el = el("details", { className: "section", open, dataset: { section: info.name } },
      el("summary", {}, info.name || "Charts", el("span", { className: "count" }, ` ${info.charts}`)),
      this.cards, this.end);
    this.open = open;
    this.el.addEventListener("toggle", () => {
      if (this.el.open === this.open) return;  // the one toggle event of being built open
      this.open = this.el.open;
      toggled.set(info.name, this.open);
      if (this.open) for (const element of [...this.cards.children, this.end]) build.rewatch(element);
    });
    if (info.entries) this.add(info.entries, null);  // a small index's, with the section
    else this.watchEnd();
  }

  // The next page once the section's end is in view, open (observing anew tells at once
  // when it still is after a page).
  watchEnd() {
    this.build.watch(this.end, () => {
      if (this.el.open && near(this.end)) this.more().catch((e) => status(e.message));
    });
  }

  // The section's next page of charts (once at a time; nothing once all are there).
  more() {
    if (this.after === null) return Promise.resolve();
    this.loading ??= this.page().finally(() => { this.loading = null; });
    return this.loading;
  }

  async page() {
    const build = this.build;
    const answer = await Session.get(build.api, { section: this.info.name, filter: build.filter || null,
      after: this.after, limit: CHART_PAGE });
    if (build.current()) this.add(answer.charts, answer.next);
  }

  // ``entries`` appended as cards; ``next`` the cursor of those that follow (null: none).
  add(entries, next) {
    const build = this.build;
    this.cards.append(...entries.map((entry) => build.card(entry, this.previous).el));
    this.after = next;
    if (this.after !== null) this.watchEnd();
    else {
      build.observer.unobserve(this.end);
      build.watched.delete(this.end);
      this.end.remove();
    }
  }
}

// ``tasks`` (functions giving promises) run ``parallel`` at a time.
async function inTurn(tasks, parallel) {
  const waiting = [...tasks];
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (waiting.length) await waiting.shift()();
  }));
}

// Why ``filter`` is no regular expression, as JavaScript reads it (null: it is one).
function syntaxError(filter) {
  try {
    new RegExp(filter, "i");
    return null;
  } catch (error) {
    return error.message;
  }
}

// Says on the filter box why its expression cannot be read (null: it can).
function showValidity(problem) {
  const input = $("filter");
  input.setCustomValidity(problem ?? "");
  if (problem) {
    input.setAttribute("aria-invalid", "true");
    input.title = problem;
  } else {
    input.removeAttribute("aria-invalid");
    input.removeAttribute("title");
  }
}

// The sections of ``build``'s index, after ``after``: with their charts when they are few.
const sections = (build, after = null) => Session.get(`${build.api}/sections`,
  { filter: build.filter || null, after, limit: SECTION_PAGE, whole: SMALL_INDEX });

// The grid of ``attempt``'s charts the URL's filter keeps, in sections: a small index whole
// at once, every section open; a bigger one's sections, the first open with its first page.
export async function buildGrid(attempt) {
  const build = new Build(attempt, view().filter);
  const previous = shown?.attempt === attempt ? new Map(grid.cards) : new Map();
  shown?.stop();
  shown = build;
  let index;
  try {
    // An expression JavaScript cannot read is not sent; one only PostgreSQL refuses is a 422.
    const problem = syntaxError(build.filter);
    if (problem) {
      build.filter = "";
      showValidity(problem);
    }
    index = await sections(build);
    if (build.current() && !problem) showValidity(null);
  } catch (error) {
    if (error.status !== 422 || !build.filter) throw error;
    if (!build.current()) return;
    showValidity(error.message);  // an expression the server cannot read filters nothing
    build.filter = "";
    index = await sections(build);
  }
  if (!build.current()) return;
  grid.cards.clear();
  queue.length = 0;
  $("grid").replaceChildren();
  addSections(build, index, index.charts, previous);
  $("shown").textContent = `${index.charts} of ${index.total} charts`;
  $("empty").hidden = index.total > 0;
  if (!index.mapping_frozen) status("no metric mapping frozen for this attempt: charts are by tag");
  await inTurn(build.sections.filter((s) => s.el.open).map((s) => () => s.more()), 4);
  if (build.current()) $("grid").dataset.filter = build.filter;
}

// A page of sections appended (``charts``: how many the filter keeps in all); when more
// follow, the grid's end asks for them once in view.
function addSections(build, page, charts, previous) {
  const host = $("grid");
  const first = build.sections.length;
  const added = page.sections.map((info, i) => new Section(build, info,
    startsOpen(info.name, first + i, charts, toggled), previous));
  build.sections.push(...added);
  host.append(...added.map((s) => s.el));
  if (page.next === null) return;
  const end = el("div", { className: "more-sections" });
  host.append(end);
  build.watch(end, () => {
    if (!near(end)) return;
    build.observer.unobserve(end);
    sections(build, page.next)
      .then((more) => {
        if (!build.current()) return;
        end.remove();
        addSections(build, more, charts, previous);
      }).catch((e) => status(e.message));
  });
}

// The filter box changed: the grid is built anew for it once typing pauses.
let typing = null;
export function filterChanged() {
  clearTimeout(typing);
  typing = setTimeout(() => buildGrid(view().attempt).catch((e) => status(e.message)), FILTER_WAIT);
}

// A change of the page's view redraws the charts fetched (the x axis and smoothing need
// no fetch; overlays do).
export function redraw({ refetch = false } = {}) {
  for (const card of grid.cards.values()) {
    if (refetch && card.el.dataset.state === "loading") card.stale = true;
    if (card.el.dataset.state !== "drawn") continue;
    if (refetch) card.load().catch((e) => status(e.message)); else card.draw();
  }
}
