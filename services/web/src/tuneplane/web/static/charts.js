// The Charts tab of a run, the page's module: its controls (attempt, filter, smoothing, log
// scale, x axis, overlays of other attempts and runs), set from the URL and writing to it,
// the grid of charts (grid.js, the filter applied by the server) and the raw inspector
// (inspector.js).
import { DEFAULT_SMOOTHING } from "./chartsview.js";
import { $, status } from "./dom.js";
import { buildGrid, filterChanged, grid, redraw, runId, setParams, view } from "./grid.js";
import { showInspector } from "./inspector.js";
import { DASHES } from "./lines.js";
import { mediaPage, runApi, runPage } from "./paths.js";
import { Session } from "./session.js";

// The controls, set from the URL and writing to it.
function wireControls(attempts) {
  const v = view();
  const select = $("attempt");
  select.replaceChildren(...attempts.map((a) => new Option(`${a.attempt} (${a.members} members)`, a.attempt)));
  select.value = v.attempt;
  select.onchange = () => { setParams({ attempt: select.value, cmp: null }, { push: true }); show(); };
  const filter = $("filter");
  filter.value = v.filter;
  filter.oninput = () => { setParams({ q: filter.value }); filterChanged(); };
  const smoothing = $("smoothing");
  smoothing.value = String(v.smoothing);
  $("smoothing-value").textContent = smoothing.value;
  smoothing.oninput = () => {
    $("smoothing-value").textContent = smoothing.value;
    setParams({ smooth: Number(smoothing.value) === DEFAULT_SMOOTHING ? null : smoothing.value });
    redraw();
  };
  const log = $("log-y");
  log.checked = v.logY;
  log.onchange = () => { setParams({ log: log.checked ? "1" : null }); redraw(); };
  for (const radio of document.querySelectorAll("input[name=x]")) {
    radio.checked = radio.value === v.x;
    radio.onchange = () => { setParams({ x: radio.value === "step" ? null : radio.value }); redraw(); };
  }
  const others = attempts.filter((a) => String(a.attempt) !== String(v.attempt));
  $("overlay-attempt").replaceChildren(new Option("attempt…", ""),
    ...others.map((a) => new Option(`attempt ${a.attempt}`, `${runId}@${a.attempt}`)));
  $("overlay-attempt").onchange = (e) => { if (e.target.value) addOverlay(e.target.value); e.target.value = ""; };
  $("overlay-run-form").onsubmit = (e) => {
    e.preventDefault();
    const run = $("overlay-run").value.trim();
    const attempt = Number.parseInt($("overlay-run-attempt").value, 10) || 1;
    if (run) addOverlay(`${run}@${attempt}`);
    $("overlay-run").value = "";
  };
  showOverlays();
}

function addOverlay(key) {
  const compare = view().compare;
  if (!compare.includes(key) && key !== `${runId}@${view().attempt}`) compare.push(key);
  setParams({ cmp: compare.join(",") }, { push: true });
  showOverlays();
  redraw({ refetch: true });
}

function showOverlays() {
  const chips = view().compare.map((c, i) => {
    const chip = document.createElement("span");
    chip.className = "chip";
    chip.dataset.overlay = c;
    const swatch = document.createElement("span");
    swatch.className = `swatch dash-${(i + 1) % DASHES.length}`;
    const text = document.createElement("span");
    text.textContent = c.replace("@", " #");
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "×";
    remove.title = `stop overlaying ${c}`;
    remove.onclick = () => {
      setParams({ cmp: view().compare.filter((o) => o !== c).join(",") }, { push: true });
      showOverlays();
      redraw({ refetch: true });
    };
    chip.append(swatch, text, remove);
    return chip;
  });
  $("overlays").replaceChildren(...chips);
}

async function show() {
  status("loading…");
  const v = view();
  $("run-link").href = $("overview-link").href = runPage(runId, v.attempt);
  $("media-link").href = mediaPage(runId, v.attempt);
  await buildGrid(v.attempt);
  await showInspector(v.attempt, v.inspect, (key) => setParams({ inspect: key }));
  if ($("status").textContent === "loading…") status("");
  document.body.dataset.ready = "true";
}

async function main() {
  $("run").textContent = runId;
  if (!(await Session.header())) return;
  const attempts = await Session.get(`${runApi(runId)}/attempts`);
  if (!attempts.some((a) => String(a.attempt) === view().attempt)) {
    setParams({ attempt: attempts[attempts.length - 1].attempt });
  }
  wireControls(attempts);
  window.onpopstate = () => { wireControls(attempts); show().catch((e) => status(e.message)); };
  new ResizeObserver(() => { for (const card of grid.cards.values()) card.resize(); }).observe($("grid"));
  await show();
}

main().catch((e) => status(e.message));
