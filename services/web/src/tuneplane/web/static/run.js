// A run's page: what it is (project, creation), its attempts (managed state, telemetry,
// launches on nodes or as Slurm or Kubernetes jobs, and what their collectors left
// undelivered) and the members of one attempt (launch state, node, exit code, sources,
// series, points, undelivered batches), what Kubernetes said of that attempt's Job, and the
// batches of that attempt delivered late. The attempt shown is in the URL (?attempt=N).
import { asLaunches, attemptsOf, eventsOf, lostOf, membersOf, undeliveredOf } from "./attempts.js";
import { $, cell, status } from "./dom.js";
import { count, utcSecond as when } from "./format.js";
import { chartsPage, mediaPage, runApi, runIdOf } from "./paths.js";
import { Session } from "./session.js";

const runId = runIdOf(location.pathname);
const api = runApi(runId);
const absent = (error, empty) => (error.status === 404 ? empty : Promise.reject(error));

function stateBadge(state) {
  const el = document.createElement("span");
  el.className = `state ${state ?? "none"}`;
  el.textContent = state ?? "telemetry only";
  return el;
}

// Batches a collector left in its spool; "lost" where the spool was destroyed before its
// collector said what it held (a Kubernetes pod deleted with an emptyDir spool).
function undeliveredCell(row, n, lost = false) {
  const shown = n === null ? null : lost ? (n ? `${n.toLocaleString()} + lost` : "lost") : n.toLocaleString();
  const td = cell(row, shown, "num");
  if (n > 0 || lost) {
    td.classList.add("warn");
    td.title = lost ? "a spool was destroyed with its pod before its collector reported: what it held undelivered is lost"
      : "batches still spooled on the host when its collector stopped";
  }
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
    undeliveredCell(tr, undeliveredOf(a.launches), lostOf(a.launches));
    const charts = document.createElement("a");
    charts.href = chartsPage(runId, a.attempt);
    charts.textContent = "Charts";
    cell(tr, charts);
    return tr;
  });
  $("attempts").tBodies[0].replaceChildren(...rows);
}

// A member whose spool was replaced (more than one) is marked: its later spools resumed
// where the earlier had delivered (the collector's `spool status` says where).
function spoolsCell(tr, spools) {
  const td = cell(tr, spools ? count(spools) : null, "num");
  if (spools > 1) {
    td.classList.add("warn");
    td.title = `spool replaced ${spools - 1} time${spools > 2 ? "s" : ""}: `
      + "each new spool resumed where the one before had delivered";
  }
}

async function showMembers(attempt) {
  $("selected").textContent = attempt ? `#${attempt.attempt}` : "";
  const telemetry = attempt?.telemetry
    ? await Session.get(`${api}/attempts/${attempt.attempt}/members`) : [];
  const rows = membersOf(attempt, telemetry).map(({ name, telemetry: m, launch: l }) => {
    const tr = document.createElement("tr");
    tr.dataset.member = name;
    cell(tr, name);
    cell(tr, l ? stateBadge(l.state) : null);
    cell(tr, l?.node);
    cell(tr, l?.exit_code ?? null, "num");
    cell(tr, m ? m.sources.join(", ") : null);
    cell(tr, count(m?.series ?? 0), "num");
    cell(tr, count(m?.points ?? 0), "num");
    spoolsCell(tr, m?.spools ?? 0);
    cell(tr, when(m?.last_batch_at));
    undeliveredCell(tr, l ? l.undelivered : null, l?.lost);
    const detail = cell(tr, l?.detail || null, "detail");
    if (l?.detail) detail.title = l.detail;
    return tr;
  });
  $("members").tBodies[0].replaceChildren(...rows);
  $("no-members").hidden = rows.length > 0;
}

// Batches delivered after their collector stopped (from its spool, `deliver`): listed, so
// a curve that grew after the attempt ended says why.
async function showLate(attempt) {
  const late = attempt?.telemetry?.late_batches
    ? await Session.get(`${api}/attempts/${attempt.attempt}/late`) : [];
  const rows = late.map((b) => {
    const tr = document.createElement("tr");
    cell(tr, b.member);
    cell(tr, b.batch_id);
    cell(tr, count(b.points), "num");
    cell(tr, when(b.sealed_at * 1000));
    cell(tr, when(b.projected_at));
    return tr;
  });
  $("late-of").textContent = attempt ? `#${attempt.attempt}` : "";
  $("late").tBodies[0].replaceChildren(...rows);
  $("late-section").hidden = rows.length === 0;
}

// What Kubernetes said of the attempt's Job and its pods: scheduling, image pulls,
// evictions, and containers that ended otherwise than with 0 (OOMKilled).
function showEvents(listed, attempt) {
  const rows = eventsOf(listed, attempt?.attempt).map((e) => {
    const tr = document.createElement("tr");
    cell(tr, when(e.at));
    const kind = cell(tr, e.type);
    if (e.type === "Warning") kind.classList.add("warn");
    cell(tr, e.reason);
    cell(tr, e.object);
    cell(tr, e.count > 1 ? count(e.count) : null, "num");
    const message = cell(tr, e.message, "detail");
    message.title = e.message;
    return tr;
  });
  $("events-of").textContent = attempt ? `#${attempt.attempt}` : "";
  $("events").tBodies[0].replaceChildren(...rows);
  $("events-section").hidden = rows.length === 0;
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
  const lost = lostOf(launches);
  $("undelivered").textContent = launches.length ? `${undelivered.toLocaleString()} batches`
    + (lost ? ` · ${lost} spool${lost > 1 ? "s" : ""} lost with ${lost > 1 ? "their pods" : "its pod"}` : "") : "—";
  $("undelivered").classList.toggle("warn", undelivered > 0 || lost);
  const late = telemetry.reduce((t, a) => t + (a.late_batches ?? 0), 0);
  $("late-count").textContent = late
    ? `${late.toLocaleString()} batch${late === 1 ? "" : "es"}` : "none";
  $("charts-link").href = chartsPage(runId, selected.attempt);
  $("media-link").href = mediaPage(runId, selected.attempt);
  showAttempts(attempts, selected.attempt);
  showEvents(listed, selected);
  await Promise.all([showMembers(selected), showLate(selected)]);
  status("");
  document.body.dataset.ready = "true";
}

// Deleting the run behind a typed confirmation; once deleted, the page says until when it
// can be taken back, and Undo takes it back.
function wireDelete() {
  const dialog = $("delete-dialog");
  const confirm = $("delete-confirm");
  $("delete-name").textContent = runId;
  $("delete-run").onclick = () => {
    confirm.value = "";
    $("delete-go").disabled = true;
    $("delete-error").textContent = "";
    dialog.showModal();
  };
  confirm.oninput = () => { $("delete-go").disabled = confirm.value.trim() !== runId; };
  $("delete-go").onclick = async () => {
    try {
      const done = await Session.change("POST", `${api}/deletion`, { confirm: runId });
      dialog.close();
      $("deleted-name").textContent = runId;
      $("deleted-after").textContent = when(done.purge_after);
      $("deleted").hidden = false;
      document.querySelector("main").hidden = true;
      $("delete-run").hidden = true;
    } catch (e) {
      $("delete-error").textContent = e.message;
    }
  };
  $("undo-delete").onclick = async () => {
    try {
      await Session.change("DELETE", `${api}/deletion`);
      location.reload();
    } catch (e) {
      status(e.message);
    }
  };
}

async function main() {
  $("run").textContent = runId;
  document.title = `${runId} · Tuneplane`;
  if (!(await Session.header())) return;
  wireDelete();
  window.onpopstate = () => load().catch((e) => status(e.message));
  await load();
}

main().catch((e) => status(e.message));
