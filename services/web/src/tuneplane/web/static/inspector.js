// The raw scalar inspector: one member's series of one source and TensorBoard run exactly
// as stored (no purge), bounded like every answer, zoomable, and downloadable whole as CSV
// or JSON lines. Its choice is kept in the URL (inspect=member|source|run path|tag).
import { Card } from "./card.js";
import { $, status } from "./dom.js";
import { grid, runId } from "./grid.js";
import { attemptApi } from "./paths.js";
import { Session } from "./session.js";

let zoom = { s: "0" };  // the inspected chart's own view: the raw points, unsmoothed unless asked

// Fills the inspector with ``attempt``'s series, ``chosen`` (a key) shown if it is there;
// ``onChoose(key)`` hears of each series shown.
export async function showInspector(attempt, chosen, onChoose) {
  const base = attemptApi(runId, attempt);
  const series = await Session.get(`${base}/series`, { limit: 1000 });
  const key = (s) => [s.member, s.source, s.run_path, s.tag].join("|");
  const sourceSelect = $("inspect-source");
  const tagSelect = $("inspect-tag");
  const sources = [...new Set(series.map((s) => `${s.member}|${s.source}`))];
  sourceSelect.replaceChildren(...sources.map((k) => new Option(k.replace("|", " / "), k)));
  const wanted = series.find((s) => key(s) === chosen) ?? series[0];
  if (!wanted) {
    $("inspect-chart").textContent = "This attempt has no series.";
    return;
  }
  sourceSelect.value = `${wanted.member}|${wanted.source}`;
  const fillTags = () => {
    const mine = series.filter((s) => `${s.member}|${s.source}` === sourceSelect.value);
    tagSelect.replaceChildren(...mine.map((s) => new Option(s.run_path ? `${s.run_path} › ${s.tag}` : s.tag, key(s))));
  };
  fillTags();
  tagSelect.value = key(wanted);
  const draw = () => {
    const s = series.find((one) => key(one) === tagSelect.value);
    onChoose(key(s));
    const params = { member: s.member, source: s.source, run_path: s.run_path, tag: s.tag };
    for (const format of ["csv", "jsonl"]) {
      const url = new URL(`${base}/scalars/export`, location.origin);
      for (const [k, v] of Object.entries({ ...params, format })) url.searchParams.set(k, v);
      $(`download-${format}`).href = url.pathname + url.search;
    }
    const spec = { key: "inspector", name: [s.member, s.source, s.run_path, s.tag].filter((p) => p).join(" · "), kind: "raw" };
    const layer = { run: runId, attempt, index: 0, prefix: "" };
    const inspectorGrid = {
      ...grid, layers: () => [layer], chartView: () => zoom,
      fetch: (_, __, range) => Session.get(`${base}/scalars`, { ...params, max_points: 1000,
        step_min: range?.lo, step_max: range?.hi, format: "columns" }).then((one) => ({ series: [one], series_total: 1 })),
      setChartView: (_, changes) => {
        zoom = { ...zoom, ...changes };
        card.load().catch((e) => status(e.message));
      },
    };
    zoom = { s: "0" };
    const card = new Card(spec, inspectorGrid);
    card.el.classList.add("inspected");
    $("inspect-chart").replaceChildren(card.el);
    return card.load();
  };
  sourceSelect.onchange = () => { fillTags(); draw().catch((e) => status(e.message)); };
  tagSelect.onchange = () => draw().catch((e) => status(e.message));
  await draw();
}
