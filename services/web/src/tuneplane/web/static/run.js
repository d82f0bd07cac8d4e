// A run's page: what it is (project, creation), its attempts (managed state, telemetry,
// launches on nodes or as Slurm jobs, and what their collectors left undelivered) and the members of one attempt
// (launch state, node, exit code, sources, series, points, undelivered batches). The
// attempt shown is in the URL (?attempt=N).
"use strict";

const runId = decodeURIComponent(location.pathname.split("/")[2]);
const $ = (id) => document.getElementById(id);
const status = (text) => { $("status").textContent = text; };
const api = `/api/v1/runs/${encodeURIComponent(runId)}`;
const absent = (error, empty) => (error.status === 404 ? empty : Promise.reject(error));
const when = (v) => (v ? new Date(v).toISOString().slice(0, 19).replace("T", " ") : null);
const count = (n) => (n === null || n === undefined ? null : n.toLocaleString());

function stateBadge(state) {
  const el = document.createElement("span");
  el.className = `state ${state ?? "none"}`;
  el.textContent = state ?? "telemetry only";
  return el;
}

function undeliveredCell(row, n) {
  const td = cell(row, n === null ? null : n.toLocaleString(), "num");
  if (n > 0) {
    td.classList.add("warn");
    td.title = "batches still spooled on the host when its collector stopped";
  }
}

// A Slurm job as the page shows launches: one per member of each start of the job, from
// its node's collector (where it ran, what its drain left); members of a start no
// collector has told about yet (queued, pending, refused on the node) from the job alone.
function slurmLaunches(job, stateOf) {
  const perNode = job.tasks_per_node;
  const name = (rank) => job.member_template.replace("{rank}", rank);
  const where = (c) => `${c.hostname || `node ${c.node}`} · job ${job.job_id}`;
  const out = job.collectors.flatMap((c) => Array.from({ length: perNode }, (_, i) => {
    const member = name(c.node * perNode + i);
    const state = c.refused ? "refused" : stateOf(c.attempt) ?? job.attempt_state;
    return { attempt: c.attempt, member, state, node: where(c), exit_code: null,
             undelivered: c.undelivered_by_member?.[member] ?? 0,
             detail: c.refused ?? (c.attempt === job.attempt ? job.detail
               : `this start of job ${job.job_id} was ${state}; the job ran again`) };
  }));
  const told = new Set(job.collectors.filter((c) => c.attempt === job.attempt).map((c) => c.node));
  for (let node = 0; node < job.nodes; node++) {
    if (told.has(node)) continue;
    for (let i = 0; i < perNode; i++) {
      out.push({ attempt: job.attempt, member: name(node * perNode + i),
                 state: job.attempt_state, node: job.job_id ? `job ${job.job_id}` : "queued",
                 exit_code: null, undelivered: 0, detail: job.detail || null });
    }
  }
  return out;
}

// Node launches as they are, Slurm jobs as their members' launches.
function asLaunches(listed, managed) {
  const states = new Map((managed?.attempts ?? []).map((a) => [a.attempt, a.state]));
  return listed.flatMap((l) => (l.backend === "slurm" ? slurmLaunches(l, (n) => states.get(n)) : [l]));
}

// Attempts by number: the managed record, the telemetry and the launches of each.
function attemptsOf(managed, telemetry, launches) {
  const byNo = new Map();
  const at = (n) => {
    if (!byNo.has(n)) byNo.set(n, { attempt: n, launches: [], telemetry: null, managed: null });
    return byNo.get(n);
  };
  for (const a of managed?.attempts ?? []) at(a.attempt).managed = a;
  for (const a of telemetry) at(a.attempt).telemetry = a;
  for (const l of launches) at(l.attempt).launches.push(l);
  return [...byNo.values()].sort((a, b) => a.attempt - b.attempt);
}

function showAttempts(attempts, selected) {
  const rows = attempts.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.attempt = a.attempt;
    if (a.attempt === selected) tr.className = "selected";
    const pick = document.createElement("a");
    pick.href = `?attempt=${a.attempt}`;
    pick.textContent = `#${a.attempt}`;
    pick.onclick = (e) => { e.preventDefault(); history.pushState(null, "", pick.href); load(); };
    cell(tr, pick);
    cell(tr, stateBadge(a.managed?.state));
    cell(tr, when(a.managed?.started_at));
    cell(tr, when(a.managed?.ended_at));
    cell(tr, count(a.telemetry?.members ?? 0), "num");
    cell(tr, count(a.telemetry?.batches ?? 0), "num");
    cell(tr, count(a.telemetry?.points ?? 0), "num");
    cell(tr, when(a.telemetry?.last_batch_at));
    cell(tr, count(a.launches.length), "num");
    undeliveredCell(tr, a.launches.length ? a.launches.reduce((t, l) => t + l.undelivered, 0) : null);
    const charts = document.createElement("a");
    charts.href = `/runs/${encodeURIComponent(runId)}/charts?attempt=${a.attempt}`;
    charts.textContent = "Charts";
    cell(tr, charts);
    return tr;
  });
  $("attempts").tBodies[0].replaceChildren(...rows);
}

async function showMembers(attempt) {
  $("selected").textContent = attempt ? `#${attempt.attempt}` : "";
  const telemetry = attempt?.telemetry
    ? await Session.get(`${api}/attempts/${attempt.attempt}/members`) : [];
  const names = [...new Set([...telemetry.map((m) => m.member), ...(attempt?.launches ?? []).map((l) => l.member)])].sort();
  const rows = names.map((name) => {
    const m = telemetry.find((t) => t.member === name);
    const l = attempt.launches.filter((x) => x.member === name).at(-1);
    const tr = document.createElement("tr");
    tr.dataset.member = name;
    cell(tr, name);
    cell(tr, l ? stateBadge(l.state) : null);
    cell(tr, l?.node);
    cell(tr, l?.exit_code ?? null, "num");
    cell(tr, m ? m.sources.join(", ") : null);
    cell(tr, count(m?.series ?? 0), "num");
    cell(tr, count(m?.points ?? 0), "num");
    cell(tr, when(m?.last_batch_at));
    undeliveredCell(tr, l ? l.undelivered : null);
    const detail = cell(tr, l?.detail || null, "detail");
    if (l?.detail) detail.title = l.detail;
    return tr;
  });
  $("members").tBodies[0].replaceChildren(...rows);
  $("no-members").hidden = rows.length > 0;
}

async function load() {
  status("loading…");
  const [managed, telemetry, listed] = await Promise.all([
    Session.get(api).catch((e) => absent(e, null)),
    Session.get(`${api}/attempts`).catch((e) => absent(e, [])),
    Session.get(`${api}/launches`).catch((e) => absent(e, [])),
  ]);
  const launches = asLaunches(listed, managed);
  if (!managed && !telemetry.length) {
    status(`No run ${runId} that you can see.`);
    return;
  }
  const attempts = attemptsOf(managed, telemetry, launches);
  const asked = Number(new URLSearchParams(location.search).get("attempt"));
  const selected = attempts.find((a) => a.attempt === asked) ?? attempts.at(-1);
  $("project").textContent = managed?.project ?? "default";  // telemetry alone: default
  $("created").textContent = managed
    ? `${when(managed.created_at)} UTC by ${managed.created_by}` : "known by its telemetry only";
  $("attempt-count").textContent = attempts.length.toLocaleString();
  $("points").textContent = telemetry.reduce((t, a) => t + a.points, 0).toLocaleString();
  const undelivered = launches.reduce((t, l) => t + l.undelivered, 0);
  $("undelivered").textContent = launches.length ? `${undelivered.toLocaleString()} batches` : "—";
  $("undelivered").classList.toggle("warn", undelivered > 0);
  $("charts-link").href = `/runs/${encodeURIComponent(runId)}/charts?attempt=${selected.attempt}`;
  $("media-link").href = `/runs/${encodeURIComponent(runId)}/media?attempt=${selected.attempt}`;
  showAttempts(attempts, selected.attempt);
  await showMembers(selected);
  status("");
  document.body.dataset.ready = "true";
}

async function main() {
  $("run").textContent = runId;
  document.title = `${runId} · Tuneplane`;
  if (!(await Session.header())) return;
  window.onpopstate = () => load().catch((e) => status(e.message));
  await load();
}

main().catch((e) => status(e.message));
