// The Charts tab of a run: canonical curves through the frozen mapping (min/max envelope
// when reduced, with an indicator), zoom that fetches finer data for the visible range,
// and the raw scalar inspector. Drawing is uPlot's; this file only fetches and wires.
"use strict";

const runId = decodeURIComponent(location.pathname.split("/")[2]);
const MAX_POINTS = 1000;
const palette = ["#2f6fdf", "#e0572b", "#2a9d5b", "#9b51e0", "#c9a227", "#1aa3b8"];
const $ = (id) => document.getElementById(id);
const status = (text) => { $("status").textContent = text; };

async function api(path, params = {}) {
  const url = new URL(`/api/v1/runs/${encodeURIComponent(runId)}${path}`, location.origin);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) url.searchParams.set(k, v);
  const response = await fetch(url);  // the browser's session cookie: same origin, HttpOnly
  if (response.status === 401) signIn();
  if (!response.ok) throw new Error(`${response.status} ${(await response.json()).detail}`);
  return response.json();
}

function signIn() {
  location.assign(`/login?next=${encodeURIComponent(location.pathname)}`);
}

async function signOut() {
  const session = await (await fetch("/auth/session")).json();
  await fetch("/auth/logout", { method: "POST", headers: { "X-CSRF-Token": session.csrf_token } });
  signIn();
}

const num = (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v);

// One member's answer as uPlot columns: raw points, or bucket min / max / last.
function columns(series) {
  if (!series.reduced) {
    return { x: series.points.map((p) => p[0]), ys: [series.points.map((p) => num(p[2]))] };
  }
  const b = series.buckets;
  return { x: b.map((k) => k.step_hi), ys: [b.map((k) => k.min), b.map((k) => k.max), b.map((k) => num(k.last))] };
}

function badge(seriesList) {
  const reduced = seriesList.some((s) => s.reduced);
  const inRange = seriesList.reduce((a, s) => a + s.points_in_range, 0);
  const returned = seriesList.reduce((a, s) => a + s.points_returned, 0);
  const el = document.createElement("span");
  el.className = `badge ${reduced ? "reduced" : "exact"}`;
  el.textContent = reduced
    ? `reduced: ${returned.toLocaleString()} of ${inRange.toLocaleString()} points (min/max/last per bucket)`
    : `exact: ${inRange.toLocaleString()} points`;
  return el;
}

// TensorBoard's purge on restarts: how many stored points the canonical curve leaves out
// (the raw inspector still shows them).
function purged(seriesList) {
  const count = seriesList.reduce((a, s) => a + (s.points_purged || 0), 0);
  const el = document.createElement("span");
  el.className = "badge purged";
  el.hidden = count === 0;
  el.title = "As TensorBoard draws it: a restart drops the points it runs over again " +
    "(the raw inspector keeps them)";
  el.textContent = `${count.toLocaleString()} purged on restart`;
  return el;
}

// Builds the uPlot data and series for several members' answers on one step axis.
function plotData(seriesList) {
  const parts = seriesList.map(columns);
  const data = uPlot.join(parts.map((p) => [p.x, ...p.ys]));
  const series = [{ label: "step" }];
  const bands = [];
  seriesList.forEach((s, i) => {
    const color = palette[i % palette.length];
    const who = s.run_path ? `${s.member} ${s.run_path}` : s.member;  // a member's runs apart
    if (s.reduced) {
      const base = series.length;
      series.push({ label: `${who} min`, stroke: color, width: 0, alpha: 0.3 });
      series.push({ label: `${who} max`, stroke: color, width: 0, alpha: 0.3 });
      series.push({ label: `${who} last`, stroke: color, width: 1.5 });
      bands.push({ series: [base + 1, base], fill: color + "33" });
    } else {
      series.push({ label: who, stroke: color, width: 1.5 });
    }
  });
  return { data, series, bands };
}

function chart(container, title, fetcher) {
  let plot = null;
  let timer = null;
  const head = document.createElement("div");
  const box = document.createElement("div");
  container.replaceChildren(head, box);
  async function draw(range) {
    const answer = await fetcher(range);
    const { data, series, bands } = plotData(answer.series);
    head.replaceChildren(title(answer), badge(answer.series), purged(answer.series));
    if (plot && plot.series.length === series.length) {
      plot.setData(data, false);
      return;
    }
    if (plot) plot.destroy();
    plot = new uPlot({
      width: Math.max(480, container.clientWidth - 16), height: 260, series, bands,
      scales: { x: { time: false } },
      hooks: {
        setScale: [(u, key) => {
          if (key !== "x" || u.status !== 1) return;
          clearTimeout(timer);
          const lo = Math.floor(u.scales.x.min), hi = Math.ceil(u.scales.x.max);
          timer = setTimeout(() => draw({ lo, hi }).catch((e) => status(e.message)), 150);
        }],
      },
    }, data, box);
  }
  return draw;
}

async function showCurves(attempt) {
  const index = await api(`/attempts/${attempt}/canonical`);
  const host = $("curves");
  host.replaceChildren();
  if (!index.mapping_frozen) status("no metric mapping frozen for this attempt: every series is unmapped");
  for (const curve of index.curves) {
    const box = document.createElement("div");
    box.className = "curve";
    box.dataset.curve = curve.name;
    host.append(box);
    const title = (a) => {
      const h = document.createElement("h2");
      h.textContent = a.name;
      const s = document.createElement("span");
      s.className = "semantics";
      s.textContent = ` ${a.goal ?? "goal unknown"}${a.unit ? ", " + a.unit : ""}` +
        `${a.aggregate ? ", aggregate" : ""} · ${a.series.length} of ${a.series_total} members`;
      h.append(s);
      return h;
    };
    await chart(box, title, (range) => api(`/attempts/${attempt}/curves/${encodeURIComponent(curve.name)}`,
      { max_points: MAX_POINTS, max_series: 20, step_min: range?.lo, step_max: range?.hi }))();
  }
  $("unmapped").textContent = index.unmapped.length
    ? `Unmapped (unknown semantics): ${index.unmapped.map((u) => `${u.member} ${u.source}/${runTag(u)}`).join(", ")}`
    : "";
}

// A series' tag with its TensorBoard run (the log directory's sub-directory), if any.
function runTag(s) {
  return s.run_path ? `${s.run_path} › ${s.tag}` : s.tag;
}

async function showInspector(attempt) {
  const series = await api(`/attempts/${attempt}/series`, { limit: 1000 });
  const sources = [...new Set(series.map((s) => `${s.member}\u0000${s.source}`))];
  const sourceSelect = $("inspect-source");
  sourceSelect.replaceChildren(...sources.map((k) => new Option(k.replace("\u0000", " / "), k)));
  const tagSelect = $("inspect-tag");
  const draw = () => {
    const [member, source] = sourceSelect.value.split("\u0000");
    const [run_path, tag] = tagSelect.value.split("\u0000");
    const title = () => {
      const h = document.createElement("h2");
      h.textContent = [member, source, run_path, tag].filter((part) => part).join(" · ");
      return h;
    };
    return chart($("inspect-chart"), title, async (range) => {
      const one = await api(`/attempts/${attempt}/scalars`, { member, source, run_path, tag,
        max_points: MAX_POINTS, step_min: range?.lo, step_max: range?.hi });
      return { series: [one] };
    })();
  };
  const fillTags = () => {
    const [member, source] = sourceSelect.value.split("\u0000");
    const mine = series.filter((s) => s.member === member && s.source === source);
    tagSelect.replaceChildren(...mine.map((s) => new Option(runTag(s), `${s.run_path}\u0000${s.tag}`)));
  };
  sourceSelect.onchange = () => { fillTags(); draw().catch((e) => status(e.message)); };
  tagSelect.onchange = () => draw().catch((e) => status(e.message));
  fillTags();
  if (sources.length) await draw();
}

async function main() {
  $("run").textContent = runId;
  $("sign-out").onclick = () => signOut().catch((e) => status(e.message));
  const who = await fetch("/auth/session");
  if (who.status === 401) return signIn();
  $("who").textContent = (await who.json()).user;
  const attempts = await api("/attempts");
  const select = $("attempt");
  select.replaceChildren(...attempts.map((a) => new Option(`${a.attempt} (${a.members} members)`, a.attempt)));
  select.value = attempts[attempts.length - 1].attempt;
  const show = async () => {
    status("loading…");
    await showCurves(select.value);
    await showInspector(select.value);
    status("");
    document.body.dataset.ready = "true";
  };
  select.onchange = () => show().catch((e) => status(e.message));
  await show();
}

main().catch((e) => status(e.message));
