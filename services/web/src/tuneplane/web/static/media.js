// The Media tab of a run, as TensorBoard's Images, Histograms, Text and Audio dashboards
// show the same event files: one card per (member, run path, tag), grouped by tag. Image
// and audio cards step through a sample of the tag's records with a slider; histograms are
// drawn by histogram.js from buckets the server decoded; text is set as text, never markup.
import { $, el, status } from "./dom.js";
import { localTime as when } from "./format.js";
import { drawOffsetHistograms } from "./histogram.js";
import { chartsPage, mediaUrl, runApi, runIdOf, runPage } from "./paths.js";
import { Session } from "./session.js";

const runId = runIdOf(location.pathname);
const KINDS = ["image", "histogram", "text", "audio"];
const SAMPLED = 100;      // image and audio records per card (the slider's stops)
const HISTOGRAMS = 50;    // ridges per histogram card
const TEXTS = 20;         // steps per text card, newest first
const LOADS = 4;          // cards loading at once

const api = (path, params) => Session.get(`${runApi(runId)}${path}`, params);
const where = (t) => ({ member: t.member, source: t.source, run_path: t.run_path, tag: t.tag });

// A card's frame: the tag's run and member, and a body the kind fills.
function card(t) {
  const run = t.run_path || ".";
  return el("article", { className: `card ${t.kind}`, dataset: { tag: t.tag, runPath: t.run_path, member: t.member } },
    el("h4", { title: `${t.member} · ${t.source} · run ${run}` },
      el("span", { className: "run" }, run), el("span", { className: "who" }, `${t.member} · ${t.source}`)));
}

// Image and audio cards: the record at the slider's step (the latest at first).
async function stepped(box, t, attempt) {
  const sample = await api(`/attempts/${attempt}/rich/steps`, { ...where(t), limit: SAMPLED });
  const records = sample.steps;
  const step = el("span", { className: "step" }), time = el("span", { className: "time" });
  const slider = el("input", { type: "range", min: 0, max: records.length - 1, value: records.length - 1,
    className: "slider", disabled: records.length < 2 });
  slider.setAttribute("aria-label", `step of ${t.tag} (${t.run_path || "."})`);
  const shown = t.kind === "image"
    ? el("img", { alt: `${t.tag} at the chosen step`, decoding: "async" })
    : el("audio", { controls: true, preload: "metadata" });
  if (t.kind === "image") {
    shown.addEventListener("load", () => shown.classList.toggle("small", shown.naturalWidth < 160));
  } else {  // what the browser made of the clip, for the page's tests and a reader alike
    shown.addEventListener("loadedmetadata", () => { shown.dataset.duration = shown.duration.toFixed(2); });
  }
  shown.addEventListener("error", () => status(`${t.tag}: the ${t.kind} at step ${shown.dataset.step} did not load`));
  const show = () => {
    const record = records[Number(slider.value)];
    step.textContent = `step ${record.step.toLocaleString()}`;
    time.textContent = when(record.wall_time);
    shown.dataset.step = String(record.step);
    delete shown.dataset.duration;
    shown.src = mediaUrl(record);
  };
  slider.addEventListener("input", show);
  show();
  const note = sample.records > records.length ? `${records.length} of ${sample.records} steps` : "";
  box.append(el("div", { className: "meta" }, step, time), slider,
    el("div", { className: `frame ${t.kind}` }, shown), el("p", { className: "note" }, note));
}

async function histogram(box, t, attempt) {
  const answer = await api(`/attempts/${attempt}/rich/histograms`, { ...where(t), limit: HISTOGRAMS });
  const shown = answer.histograms.filter((h) => h.buckets.length);
  const canvas = el("canvas", { className: "ridges" });
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `histograms of ${t.tag}, ${shown.length} steps`);
  const range = shown.length ? `steps ${shown[0].step.toLocaleString()}–${shown[shown.length - 1].step.toLocaleString()}` : "no data";
  const note = answer.records > answer.histograms.length ? `, ${answer.histograms.length} of ${answer.records} steps` : "";
  box.append(el("div", { className: "meta" }, el("span", { className: "step" }, `${range}${note}`)), canvas);
  problems(box, answer.problems);
  if (shown.length) {
    const draw = () => drawOffsetHistograms(canvas, shown);
    draw();
    new ResizeObserver(draw).observe(canvas);
  }
}

// Text, newest first: each step's strings as text (a table's shape as a table).
async function text(box, t, attempt) {
  const answer = await api(`/attempts/${attempt}/rich/text`, { ...where(t), limit: TEXTS });
  const rows = answer.texts.slice().reverse().map((entry) => {
    const [rowsN, cols] = entry.shape.length === 2 ? entry.shape : [entry.strings.length, 1];
    const body = entry.shape.length === 2
      ? el("table", { className: "cells" }, ...Array.from({ length: rowsN }, (_, r) =>
        el("tr", {}, ...entry.strings.slice(r * cols, (r + 1) * cols).map((s) => el("td", {}, s)))))
      : el("div", {}, ...entry.strings.map((s) => el("pre", { className: "text" }, s)));
    return el("tr", { dataset: { step: String(entry.step) } },
      el("th", { scope: "row", title: when(entry.wall_time) }, `step ${entry.step.toLocaleString()}`), el("td", {}, body));
  });
  box.append(el("table", { className: "texts" }, el("tbody", {}, ...rows)));
  const note = answer.records > answer.texts.length ? `latest ${answer.texts.length} of ${answer.records} steps` : "";
  box.append(el("p", { className: "note" }, note));
  problems(box, answer.problems);
}

function problems(box, list) {
  if (list.length) box.append(el("ul", { className: "problems" }, ...list.map((p) => el("li", {}, p))));
}

const FILL = { image: stepped, audio: stepped, histogram, text };

async function show(attempt) {
  for (const kind of KINDS) { $(kind).hidden = true; $(kind).querySelector(".groups").replaceChildren(); }
  document.body.dataset.ready = "false";
  status("loading…");
  const tags = await api(`/attempts/${attempt}/rich/tags`, { limit: 1000 });
  const shown = tags.filter((t) => KINDS.includes(t.kind));
  const groups = new Map();  // kind/tag → the tag's group of cards
  const work = shown.map((t) => {
    const key = `${t.kind}/${t.tag}`;
    if (!groups.has(key)) {
      const group = el("div", { className: "group", dataset: { tag: t.tag } },
        el("h3", {}, t.tag), el("div", { className: "cards" }));
      groups.set(key, group);
      $(t.kind).querySelector(".groups").append(group);
      $(t.kind).hidden = false;
    }
    const box = card(t);
    groups.get(key).querySelector(".cards").append(box);
    return () => FILL[t.kind](box, t, attempt).catch((e) => box.append(el("p", { className: "problems" }, e.message)));
  });
  const queue = work.slice();
  await Promise.all(Array.from({ length: LOADS }, async () => { while (queue.length) await queue.shift()(); }));
  const other = tags.length - shown.length;
  status(shown.length === 0 ? `no images, histograms, text or audio in attempt ${attempt}`
    : other ? `${other} tag${other > 1 ? "s" : ""} of other kinds (tensors, JSON records) not shown` : "");
  filter();
  document.body.dataset.ready = "true";
}

function filter() {
  let pattern;
  try { pattern = new RegExp($("filter").value, "i"); $("filter").setCustomValidity(""); }
  catch { $("filter").setCustomValidity("not a regular expression"); return; }
  for (const group of document.querySelectorAll(".group")) group.hidden = !pattern.test(group.dataset.tag);
}

async function main() {
  $("run").textContent = runId;
  $("filter").addEventListener("input", filter);
  if (!(await Session.header())) return;
  const attempts = await api("/attempts");
  if (!attempts.length) { status("this run has no telemetry yet"); document.body.dataset.ready = "true"; return; }
  const select = $("attempt");
  select.replaceChildren(...attempts.map((a) => new Option(`${a.attempt} (${a.members} members)`, a.attempt)));
  const wanted = new URLSearchParams(location.search).get("attempt");
  select.value = attempts.some((a) => String(a.attempt) === wanted) ? wanted : attempts[attempts.length - 1].attempt;
  const links = () => {  // the run's page and Charts tab, at this attempt
    $("run-link").href = $("overview-link").href = runPage(runId, select.value);
    $("charts-link").href = chartsPage(runId, select.value);
  };
  links();
  select.onchange = () => {
    history.replaceState(null, "", `?attempt=${select.value}`);
    links();
    show(select.value).catch((e) => status(e.message));
  };
  await show(select.value);
}

main().catch((e) => status(e.message));
