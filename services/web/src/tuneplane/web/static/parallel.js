// Parallel coordinates of the runs table's rows, as TensorBoard's HParams dashboard draws
// them: an axis per added column (settings, then the metrics asked for), a line per run,
// colored by its place on the last axis (the metric compared). Hovering a line names its
// run and values; clicking opens its charts. Drawn in SVG; parallelaxes.js places values.
import { columnLabel } from "./runsview.js";
import { axisOf, colorAt } from "./parallelaxes.js";
import { chartsPage } from "./paths.js";

const SVG = "http://www.w3.org/2000/svg";
const HEIGHT = 340;
const PAD = { top: 48, bottom: 28, side: 70 };

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Draws ``runs`` (rows of the run table) over ``columns`` (their specs) into ``figure``;
// a note instead when fewer than two columns or no run are shown.
export function drawParallel(figure, columns, runs) {
  figure.replaceChildren();
  if (columns.length < 2 || !runs.length) {
    figure.append(Object.assign(document.createElement("p"), {
      className: "note",
      textContent: "Add two or more columns (settings, then the metric to compare) to draw "
        + "parallel coordinates of the runs shown.",
    }));
    return;
  }
  const width = Math.max(480, figure.clientWidth || 900);
  const axes = columns.map((_, i) => axisOf(runs.map((r) => r.columns[i])));
  const x = (i) => PAD.side + (i * (width - 2 * PAD.side)) / (columns.length - 1);
  const y = (t) => PAD.top + (1 - t) * (HEIGHT - PAD.top - PAD.bottom);
  const root = svg("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`,
    role: "img", "aria-label": `parallel coordinates of ${runs.length} runs` });
  const lines = svg("g", { class: "lines" });
  const colored = axes.length - 1;
  const tip = svg("text", { class: "tip", x: PAD.side, y: 16 });
  for (const run of runs) {
    const places = axes.map((axis, i) => axis.place(run.columns[i]));
    const path = places.map((t, i) => (t === null ? null : `${x(i)},${y(t)}`));
    const d = path.reduce((text, point, i) => (point === null ? text
      : `${text}${i && path[i - 1] !== null ? " L" : " M"}${point}`), "").trim();
    if (!d) continue;
    const line = svg("path", { d, stroke: colorAt(places[colored]), "data-run": run.run_id });
    line.append(svg("title", {}, run.run_id));
    line.addEventListener("mouseenter", () => {
      lines.classList.add("hovering");
      line.classList.add("hover");
      tip.textContent = `${run.run_id}: ${columns.map((c, i) => `${columnLabel(c)} ${
        run.columns[i] ?? "–"}`).join(" · ")}`;
    });
    line.addEventListener("mouseleave", () => {
      lines.classList.remove("hovering");
      line.classList.remove("hover");
      tip.textContent = "";
    });
    line.addEventListener("click", () => location.assign(chartsPage(run.run_id)));
    lines.append(line);
  }
  root.append(lines);
  for (const [i, axis] of axes.entries()) {
    const g = svg("g", { class: `axis${i === colored ? " colored" : ""}` });
    g.append(svg("line", { x1: x(i), x2: x(i), y1: y(0), y2: y(1) }));
    g.append(svg("text", { x: x(i), y: PAD.top - 14, class: "name" },
      columnLabel(columns[i]) + (axis.kind === "log" ? " (log)" : "")));
    for (const tick of axis.ticks) {
      g.append(svg("line", { x1: x(i) - 4, x2: x(i), y1: y(tick.at), y2: y(tick.at) }));
      g.append(svg("text", { x: x(i) - 7, y: y(tick.at) + 4, class: "tick" }, tick.label));
    }
    root.append(g);
  }
  root.append(tip);
  const legend = svg("text", { class: "legend", x: width - PAD.side, y: 16 },
    `color: ${columnLabel(columns[colored])}, low → high`);
  root.append(legend);
  figure.append(root);
}
