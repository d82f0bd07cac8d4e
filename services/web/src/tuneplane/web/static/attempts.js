// A run's attempts as its page shows them: each attempt's managed record, telemetry and
// launches, node launches as they are and a batch job's starts as launches of its members.
// Pure: no DOM; tests/web/static/attempts.test.mjs.

// A batch job as the page shows launches (a Slurm job, or a Kubernetes Job: one pod per
// index): one per member of each start of the job, from its node's collector (where it ran,
// what its drain left); members of a start no collector has told about yet (queued,
// pending, refused on the node) from the job alone. A collector of an ended job that never
// reported its drain is said so; on Kubernetes with an emptyDir spool, that spool is
// ``lost`` (destroyed with its pod). ``stateOf(attempt)``: the managed state of an attempt
// of the run, if any.
export function jobLaunches(job, stateOf) {
  const perNode = job.tasks_per_node;
  const kube = job.backend === "kubernetes";
  const name = (rank) => job.member_template.replace("{rank}", rank);
  // Control names a launch's Job tuneplane-launch-<launch> (its job id is the Job's uid).
  const jobName = kube ? `Job tuneplane-launch-${job.launch_id}` : `job ${job.job_id}`;
  // A pod's name starts with its Job's.
  const where = (c) => (kube ? `pod ${c.hostname || `${jobName} index ${c.node}`}`
    : `${c.hostname || `node ${c.node}`} · ${jobName}`);
  const silent = (c) => job.state === "ended" && !c.refused && c.reported === false;
  const lost = (c) => kube && silent(c) && job.spool === "emptyDir";
  const out = job.collectors.flatMap((c) => Array.from({ length: perNode }, (_, i) => {
    const member = name(c.node * perNode + i);
    const state = c.refused ? "refused" : stateOf(c.attempt) ?? job.attempt_state;
    let detail = c.refused ?? (c.attempt === job.attempt ? job.detail
      : `this start of ${jobName} was ${state}; the job ran again`);
    if (lost(c)) {
      detail = "its pod was gone before its sidecar reported: the spool (an emptyDir) was "
        + "destroyed with it; what it held undelivered is lost";
    } else if (silent(c)) detail = `its collector never reported its drain; ${detail}`;
    return { attempt: c.attempt, member, state, node: where(c), exit_code: null,
             undelivered: c.undelivered_by_member?.[member] ?? 0, lost: lost(c), detail };
  }));
  const told = new Set(job.collectors.filter((c) => c.attempt === job.attempt).map((c) => c.node));
  for (let node = 0; node < job.nodes; node++) {
    if (told.has(node)) continue;
    for (let i = 0; i < perNode; i++) {
      out.push({ attempt: job.attempt, member: name(node * perNode + i),
                 state: job.attempt_state, node: job.job_id ? jobName : "queued",
                 exit_code: null, undelivered: 0, lost: false, detail: job.detail || null });
    }
  }
  return out;
}

// The launches as listed (/launches), node launches as they are and batch jobs (Slurm,
// Kubernetes) as their members' launches.
export function asLaunches(listed, managed) {
  const states = new Map((managed?.attempts ?? []).map((a) => [a.attempt, a.state]));
  return listed.flatMap((l) => (l.backend === "node" ? [l] : jobLaunches(l, (n) => states.get(n))));
}

// What Kubernetes said of the Jobs of attempt ``n`` (their events, and containers that ended
// otherwise than with 0), oldest first.
export function eventsOf(listed, n) {
  return listed.filter((l) => l.attempt === n).flatMap((l) => l.events ?? [])
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

// Attempts by number, in order: the managed record, the telemetry and the launches of each.
export function attemptsOf(managed, telemetry, launches) {
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

// The members of ``attempt`` a page lists: those with telemetry and those launched, by name,
// each with its telemetry (if any) and latest launch (if any).
export function membersOf(attempt, telemetry) {
  const launches = attempt?.launches ?? [];
  const names = [...new Set([...telemetry.map((m) => m.member), ...launches.map((l) => l.member)])].sort();
  return names.map((name) => ({ name, telemetry: telemetry.find((t) => t.member === name) ?? null,
    launch: launches.filter((l) => l.member === name).at(-1) ?? null }));
}

// The undelivered batches of ``launches`` together; null when there is no launch.
export const undeliveredOf = (launches) => (launches.length ? launches.reduce((t, l) => t + l.undelivered, 0) : null);

// How many of ``launches`` lost their spool before their collector said what it held.
export const lostOf = (launches) => launches.filter((l) => l.lost).length;
