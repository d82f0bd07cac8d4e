// A run's attempts as its page shows them: each attempt's managed record, telemetry and
// launches, node launches as they are and a Slurm job's starts as launches of its members.
// Pure: no DOM; tests/web/static/attempts.test.mjs.

// A Slurm job as the page shows launches: one per member of each start of the job, from
// its node's collector (where it ran, what its drain left); members of a start no
// collector has told about yet (queued, pending, refused on the node) from the job alone.
// ``stateOf(attempt)``: the managed state of an attempt of the run, if any.
export function slurmLaunches(job, stateOf) {
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

// The launches as listed (/launches), node launches as they are and Slurm jobs as their
// members' launches.
export function asLaunches(listed, managed) {
  const states = new Map((managed?.attempts ?? []).map((a) => [a.attempt, a.state]));
  return listed.flatMap((l) => (l.backend === "slurm" ? slurmLaunches(l, (n) => states.get(n)) : [l]));
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
