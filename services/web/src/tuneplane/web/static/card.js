// One chart of the grid: its header (name, what it means, exact or reduced, purged on
// restart, its own smoothing and log scale), the uPlot chart with a legend that follows the
// cursor, drag-to-zoom that fetches finer data for the steps in view, double-click back.
// A card fetches nothing until ``load`` (the grid calls it once the card is in view).
import uPlot from "/ui/uplot/uPlot.esm.js";
import { duration, value as format } from "./format.js";
import { PALETTE, build, line, stepRange } from "./lines.js";
import { guarded, labelSize, tickSpace, ticks } from "./ticks.js";

const SMOOTHINGS = ["", "0", "0.6", "0.8", "0.9", "0.95", "0.99"];

export class Card {
  // ``spec``: { key, name, kind: "curve" | "tag", about }; ``grid``: { view(), layers(),
  // fetch(layer, spec, range), chartView(key), setChartView(key, changes) }.
  constructor(spec, grid) {
    this.spec = spec;
    this.grid = grid;
    this.answers = [];   // per layer: its answer, or an error
    this.lines = [];
    this.plot = null;
    this.el = document.createElement("article");
    this.el.className = "card";
    this.el.dataset.chart = spec.name;
    this.el.dataset.state = "waiting";
    const head = document.createElement("header");
    const title = document.createElement("h3");
    title.textContent = spec.name;
    title.title = spec.name;
    this.about = document.createElement("p");
    this.about.className = "about";
    this.badges = document.createElement("p");
    this.badges.className = "badges";
    this.smoothing = document.createElement("select");
    this.smoothing.className = "chart-smoothing";
    this.smoothing.title = "this chart's smoothing (TensorBoard's debiased EMA)";
    this.smoothing.append(...SMOOTHINGS.map((s) => new Option(s === "" ? "smooth: page" : `smooth ${s}`, s)));
    this.smoothing.onchange = () => grid.setChartView(spec.key, { s: this.smoothing.value });
    this.log = document.createElement("button");
    this.log.type = "button";
    this.log.className = "chart-log";
    this.log.textContent = "log y";
    this.log.onclick = () => grid.setChartView(spec.key, { log: this.logY() ? "0" : "1" });
    const tools = document.createElement("div");
    tools.className = "tools";
    tools.append(this.smoothing, this.log);
    head.append(title, tools);
    this.box = document.createElement("div");
    this.box.className = "plot";
    this.legend = document.createElement("ul");
    this.legend.className = "legend";
    this.el.append(head, this.about, this.badges, this.box, this.legend);
  }

  chartView() { return this.grid.chartView(this.spec.key); }
  logY() { const own = this.chartView().log; return own ? own === "1" : this.grid.view().logY; }
  smoothingWeight() { const own = this.chartView().s; return own ? Number(own) : this.grid.view().smoothing; }

  // Fetches every layer's answer for the chart's zoom (or the whole range), then draws.
  async load() {
    this.el.dataset.state = "loading";
    const zoom = this.chartView().z;
    const range = zoom ? { lo: zoom[0], hi: zoom[1] } : null;
    this.answers = await Promise.all(this.grid.layers().map((layer) =>
      this.grid.fetch(layer, this.spec, range).catch((error) => ({ error, layer }))));
    this.draw();
  }

  // Draws from the answers held (a change of view needs no fetch).
  draw() {
    const view = this.grid.view();
    const layers = this.grid.layers();
    this.lines = [];
    const missing = [];
    this.answers.forEach((answer, i) => {
      if (answer.error) {
        missing.push(`${layers[i].prefix || "this attempt"}: ${answer.error.status === 404 ? "not there" : answer.error.message}`);
        return;
      }
      for (const s of answer.series) this.lines.push(line(s, layers[i], view.x));
    });
    const first = this.answers.find((a) => !a.error);
    this.about.textContent = this.describe(first, missing);
    this.smoothing.value = this.chartView().s ?? "";
    this.log.setAttribute("aria-pressed", String(this.logY()));
    const built = build(this.lines, { smoothing: this.smoothingWeight(), logY: this.logY() });
    // Where one line has no x another has, join leaves undefined, which a line runs over; a
    // value a line lacks (none finite in a bucket, or not on a log scale) is null: a gap.
    built.data = built.tables.length ? uPlot.join(built.tables) : [[]];
    this.badges.replaceChildren(...this.badgesFor(built.hidden));
    this.render(built, view);
    this.el.dataset.state = "drawn";
  }

  describe(answer, missing) {
    const parts = [];
    if (this.spec.kind === "curve" && answer) {
      parts.push(`canonical · ${answer.goal ?? "goal unknown"}${answer.unit ? `, ${answer.unit}` : ""}${answer.aggregate ? ", aggregate" : ""}`);
    } else if (this.spec.kind === "tag") parts.push("tag · semantics unknown");
    if (answer && answer.series_total > answer.series.length) parts.push(`${answer.series.length} of ${answer.series_total} series`);
    return [...parts, ...missing].join(" · ");
  }

  badgesFor(hidden) {
    const answered = this.answers.filter((a) => !a.error).flatMap((a) => a.series);
    const badge = (cls, text, title) => {
      const el = document.createElement("span");
      el.className = `badge ${cls}`;
      el.textContent = text;
      if (title) el.title = title;
      return el;
    };
    const inRange = answered.reduce((a, s) => a + s.points_in_range, 0);
    const returned = answered.reduce((a, s) => a + s.points_returned, 0);
    const purged = answered.reduce((a, s) => a + (s.points_purged || 0), 0);
    const out = [answered.some((s) => s.reduced)
      ? badge("reduced", `reduced: ${returned.toLocaleString()} of ${inRange.toLocaleString()} points`,
        "min/max/last per bucket: the band is each bucket's exact min and max, the line its last value")
      : badge("exact", `exact: ${inRange.toLocaleString()} points`)];
    if (purged) {
      out.push(badge("purged", `${purged.toLocaleString()} purged on restart`,
        "As TensorBoard draws it: a restart drops the points it runs over again (the raw inspector keeps them)"));
    }
    if (hidden) out.push(badge("hidden", `${hidden.toLocaleString()} ≤ 0 not on log scale`));
    if (this.grid.view().x !== "step" && answered.some((s) => s.wall_time && s.wall_time !== "written")) {
      out.push(badge("read-time", "time: when read",
        "The source gave no wall times (JSONL lines without wall_time): these are the collector's clock when it read each line"));
    }
    if (this.smoothingWeight() > 0 && answered.some((s) => s.reduced)) {
      out.push(badge("smoothed", "smoothed over buckets", "the EMA runs over the buckets' last values"));
    }
    return out;
  }

  render(built, view) {
    if (this.plot) this.plot.destroy();
    const width = Math.max(280, this.box.clientWidth || 400);
    const time = view.x === "wall";
    const axisX = { stroke: "#5b6670", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#dde1e6" } };
    if (view.x === "relative") axisX.values = (u, splits) => splits.map(duration);
    else if (view.x === "step") Object.assign(axisX, { values: ticks, space: tickSpace });
    const opts = {
      width, height: 200, series: built.series, bands: built.bands, legend: { show: false },
      scales: {
        x: { time, range: (u, min, max) => guarded([min, max]) },
        y: this.logY() ? { distr: 3 }
          : { range: (u, min, max) => guarded(uPlot.rangeNum(min, max, 0.1, true)) },
      },
      axes: [axisX, { stroke: "#5b6670", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#dde1e6" },
        size: labelSize, values: this.logY() ? undefined : ticks }],
      // Dragging selects; the card zooms by fetching the steps selected (not uPlot's zoom).
      // The hover is shared across the grid; a drag (mousedown/up) is this chart's alone.
      cursor: { sync: { key: "tuneplane-grid", filters: { pub: (type) => type !== "mousedown" && type !== "mouseup" } },
        drag: { x: true, setScale: false },
        bind: { dblclick: () => null } },
      hooks: {
        setSelect: [(u) => this.zoomTo(u)],
        setCursor: [(u) => this.showValues(u.cursor.idx, built)],
      },
    };
    this.plot = new uPlot(opts, built.data, this.box);
    this.plot.over.ondblclick = () => this.grid.setChartView(this.spec.key, { z: null });
    this.showValues(null, built);
  }

  zoomTo(u) {
    if (u.select.width < 2) return;
    const lo = u.posToVal(u.select.left, "x");
    const hi = u.posToVal(u.select.left + u.select.width, "x");
    u.setSelect({ width: 0, height: 0 }, false);
    const steps = stepRange(this.lines, this.grid.view().x, lo, hi);
    if (steps) this.grid.setChartView(this.spec.key, { z: [steps.lo, steps.hi] });
  }

  // The legend: each line's swatch, label and value at the cursor (its last one when none).
  showValues(idx, built) {
    const items = this.lines.map((l, i) => {
      const column = built.data[built.drawn[i]] ?? [];
      let v = idx === null || idx === undefined ? null : column[idx];
      if (idx === null || idx === undefined) for (let k = column.length - 1; k >= 0 && v === null; k--) v = column[k] ?? null;
      const li = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.borderColor = PALETTE[i % PALETTE.length];
      if (l.layer) swatch.style.borderStyle = "dashed";
      const label = document.createElement("span");
      label.textContent = l.label || "(root)";
      const value = document.createElement("span");
      value.className = "value";
      value.textContent = format(v);
      li.append(swatch, label, value);
      return li;
    });
    this.legend.replaceChildren(...items);
  }

  resize() { if (this.plot) this.plot.setSize({ width: Math.max(280, this.box.clientWidth), height: 200 }); }
}
