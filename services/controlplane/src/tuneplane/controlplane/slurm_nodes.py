"""The nodes of a Slurm launch: one per node and start of its job, each that node's
collector's ticket, credential and end report (the table ``slurm_collectors``).

A node's collector redeems the job's ticket once per start (``redeem``): only while Slurm
runs that start of the job, only for a node the job has, and never twice for the same node
and start, so the script's ticket is spent before any training task of that start runs.
One that cannot run there (its spool place refused) spends the ticket all the same
(``refuse``), recording why. A pod's sidecar that asks before Kubernetes shows its Job
running (the kubelet has not reported the sidecar yet) is told to ask again
(``JobStartEarly``), not refused. The credential it gets is renewed while its attempt runs
(``renewable``), and its end report (``report``) says what its drain left spooled (what
deliver-only credentials for those spools may cover); what it left is listed less the
batches of those spools the read models hold as delivered late, so it shrinks by what ingest
took, never by anyone's word.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuneplane.common.db import Connection
from tuneplane.controlplane import job_follow, kube_launches, slurm_launches
from tuneplane.controlplane.errors import JobStartEarly, JobStartRefused
from tuneplane.controlplane.job_follow import JobSeen


@dataclass(frozen=True, slots=True)
class Start:
    """One node of one start of a job, as its collector names it."""

    launch_id: int
    job_id: str
    restart: int
    node_index: int
    hostname: str = ""

    def __str__(self) -> str:
        return f"job {self.job_id} node {self.node_index} (start {self.restart})"


@dataclass(frozen=True, slots=True)
class Granted:
    run_id: str
    attempt: int
    project: str
    members: list[str]
    artifact: str  # the run's integration artifact, JSON


@dataclass(frozen=True, slots=True)
class Checked:
    """A start that may be redeemed if its scheduler shows it running."""

    nodes: int      # the job's nodes (a Kubernetes Job's indexes)
    scheduler: str  # slurm or kubernetes: who is asked


async def check(conn: Connection, start: Start) -> Checked:
    """Refuse, before Slurm is asked (a squeue per call), a start no answer of Slurm's could
    let redeem: a launch not submitted as this job or ended, a node the job does not have,
    a start before its latest, one already redeemed. A ticket lives as long as a job may
    wait (30 days) and its job's user can read it: these refusals cost one read. Checked
    before the job is followed, too: a job the ticket's holder names is not the launch's
    unless it is the one control submitted."""
    row = await conn.fetchrow(
        "SELECT l.state, l.job_id, l.nodes, l.restarts, l.scheduler, EXISTS (SELECT 1 FROM "
        "slurm_collectors c WHERE c.launch_id = l.launch_id AND c.restart = $2 AND "
        "c.node_index = $3) AS redeemed FROM slurm_launches l WHERE l.launch_id = $1",
        start.launch_id, start.restart, start.node_index)
    if row is None or row["job_id"] != start.job_id:
        raise JobStartRefused(f"{start}: the ticket is not this job's")
    if row["state"] != "submitted":
        raise JobStartRefused(f"{start}: the launch has {row['state']}")
    if not 0 <= start.node_index < row["nodes"]:
        raise JobStartRefused(f"{start}: the job has {row['nodes']} node(s)")
    if start.restart < row["restarts"]:
        raise JobStartRefused(f"{start}: the job's current start is {row['restarts']}")
    if row["redeemed"]:
        raise spent(start)
    return Checked(int(row["nodes"]), str(row["scheduler"]))


def spent(start: Start) -> JobStartRefused:
    return JobStartRefused(f"{start}: its ticket was already redeemed; a job's ticket is "
                           "spent once per node and start, by the node's collector")


async def _claim(conn: Connection, start: Start, seen: JobSeen,
                 refused: str | None) -> dict[str, Any]:
    """Check ``start`` (its job, its node: ``check``), follow the job to ``seen``, check the
    start is the job's current one and runs, and record the node's collector (once); the
    launch's row."""
    checked = await check(conn, start)
    state = await job_follow.follow(conn, start.launch_id, seen)
    row = await conn.fetchrow(
        "SELECT l.run_id, l.attempt, l.nodes, l.tasks_per_node, l.member_template, "
        "l.state, r.project, r.artifact::text AS artifact FROM slurm_launches l "
        "JOIN runs r USING (run_id) WHERE l.launch_id = $1 FOR UPDATE OF l", start.launch_id)
    assert row is not None  # check found it, and launches are never deleted
    kube = checked.scheduler == kube_launches.SCHEDULER
    if (kube and row["state"] != "ended" and state == "pending"
            and seen.state == job_follow.PENDING and start.restart == seen.restarts):
        # A pod's sidecar asks as it starts; the API shows its container running once the
        # kubelet has reported it. (A Slurm job's collector runs in the job: Slurm shows it
        # running before.)
        why = f" ({seen.reason})" if seen.reason else ""
        raise JobStartEarly(f"{start}: Kubernetes shows the Job {seen.state}{why}, not yet "
                            "running; retry with backoff")
    if row["state"] == "ended" or not seen.running:
        shows = "Kubernetes shows the Job" if kube else "Slurm shows the job"
        raise JobStartRefused(f"{start}: {shows} {seen.state}, not running "
                              f"(attempt {row['attempt']} is {state})")
    if start.restart != seen.restarts:
        raise JobStartRefused(f"{start}: the job's current start is {seen.restarts}")
    if state != "running":  # an editor ended it: credentials would outlive it
        raise JobStartRefused(f"{start}: attempt {row['attempt']} is {state}, not running")
    claimed = await conn.fetchval(
        "INSERT INTO slurm_collectors (launch_id, restart, node_index, attempt, hostname, "
        "refused) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1",
        start.launch_id, start.restart, start.node_index, row["attempt"], start.hostname[:255],
        refused)
    if claimed is None:  # redeemed by a call racing this one, since ``check``
        raise spent(start)
    return dict(row)


async def redeem(conn: Connection, start: Start, seen: JobSeen) -> Granted:
    async with conn.transaction():
        row = await _claim(conn, start, seen, None)
    members = slurm_launches.members_of(row["nodes"], row["tasks_per_node"], start.node_index,
                                        row["member_template"])
    return Granted(row["run_id"], int(row["attempt"]), row["project"], members,
                   row["artifact"])


async def refuse(conn: Connection, start: Start, seen: JobSeen, reason: str) -> None:
    async with conn.transaction():
        await _claim(conn, start, seen, reason[:2000])


async def renewable(conn: Connection, launch_id: int, restart: int, node_index: int,
                    attempt: int) -> list[str]:
    """The node's members, while the collector's attempt has not ended; else refused."""
    row = await conn.fetchrow(
        "SELECT l.nodes, l.tasks_per_node, l.member_template, a.state FROM slurm_collectors c "
        "JOIN slurm_launches l USING (launch_id) JOIN attempts a ON a.run_id = l.run_id AND "
        "a.attempt = c.attempt WHERE c.launch_id = $1 AND c.restart = $2 AND "
        "c.node_index = $3 AND c.attempt = $4 AND c.refused IS NULL",
        launch_id, restart, node_index, attempt)
    if row is None:
        raise JobStartRefused(f"launch {launch_id} node {node_index} (start {restart}) "
                              "redeemed no ticket")
    if row["state"] != "running":
        raise JobStartRefused(f"launch {launch_id} attempt {attempt} has ended "
                              f"({row['state']}); no new credentials")
    return slurm_launches.members_of(row["nodes"], row["tasks_per_node"], node_index,
                                     row["member_template"])


async def report(conn: Connection, launch_id: int, restart: int, node_index: int, *,
                 undelivered: int, detail: str, by_member: Mapping[str, int],
                 trees: Mapping[str, tuple[str, int]] | None = None
                 ) -> tuple[str, dict[str, int]]:
    """Record how the node's collector ended, with the spool epoch and batches of each
    member's spool left (``trees``); returns its attempt's state and the counts kept: the
    node's own members' only."""
    row = await conn.fetchrow("SELECT nodes, tasks_per_node, member_template FROM "
                              "slurm_launches WHERE launch_id = $1", launch_id)
    members = set(slurm_launches.members_of(row["nodes"], row["tasks_per_node"], node_index,
                                            row["member_template"]) if row is not None else ())
    counts = {m: max(0, int(n)) for m, n in by_member.items() if m in members}
    left = {m: {"epoch": epoch, "batches": n} for m, (epoch, n) in (trees or {}).items()
            if 0 < n <= counts.get(m, 0)}
    state = await conn.fetchval(
        "UPDATE slurm_collectors c SET reported_at = now(), undelivered = $4, detail = $5, "
        "undelivered_by_member = $6::jsonb, left_trees = $7::jsonb FROM slurm_launches l "
        "JOIN attempts a ON a.run_id = l.run_id WHERE c.launch_id = $1 AND c.restart = $2 "
        "AND c.node_index = $3 AND c.refused IS NULL AND l.launch_id = c.launch_id AND "
        "a.attempt = c.attempt RETURNING a.state",
        launch_id, restart, node_index, max(0, undelivered), detail[:2000], json.dumps(counts),
        json.dumps(left))
    if state is None:
        raise JobStartRefused(f"launch {launch_id} node {node_index} (start {restart}) "
                              "redeemed no ticket")
    return str(state), counts


#: Of what each member's spool was reported left, the batches of its epoch the read models
#: hold as delivered late (never more than reported).
DELIVERED_LATE = (
    "SELECT coalesce(sum(x.late), 0)::bigint AS delivered, coalesce(jsonb_object_agg("
    "x.member, x.reported - x.late), '{}') AS left FROM (SELECT m.key AS member, "
    "m.value::bigint AS reported, least(m.value::bigint, (SELECT count(*) FROM "
    "readmodel.batch_ledger b WHERE b.run_id = l.run_id AND b.attempt = c.attempt AND "
    "b.member = m.key AND b.late AND starts_with(b.batch_id, (c.left_trees -> m.key ->> "
    "'epoch') || '-'))) AS late FROM jsonb_each_text(c.undelivered_by_member) m) x")


async def listing(conn: Connection, run_id: str | None = None) -> list[dict[str, Any]]:
    """Slurm launches with their job and how each node's collector ended: what its drain
    left in the spools, less what has been delivered late since (``delivered_late``)."""
    rows = await conn.fetch(
        "SELECT l.scheduler AS backend, l.launch_id, l.run_id, l.attempt, l.nodes, "
        "l.tasks_per_node, l.member_template, l.state, "
        "l.job_id, l.job_state, l.restarts, l.detail, a.state AS attempt_state, "
        "l.events::text AS events, l.options->>'spool' AS spool, "
        "coalesce((SELECT jsonb_agg(jsonb_build_object('restart', c.restart, 'node', "
        "c.node_index, 'attempt', c.attempt, 'hostname', c.hostname, 'refused', c.refused, "
        "'undelivered', greatest(0, c.undelivered - d.delivered), 'undelivered_by_member', "
        "d.left, 'delivered_late', d.delivered, 'reported', c.reported_at IS NOT NULL) "
        "ORDER BY c.restart, c.node_index) FROM slurm_collectors c CROSS JOIN LATERAL ("
        f"{DELIVERED_LATE}) d WHERE c.launch_id = l.launch_id), "
        "'[]')::text AS collectors FROM slurm_launches l JOIN attempts a ON "
        "a.run_id = l.run_id AND a.attempt = l.attempt "
        "WHERE $1::text IS NULL OR l.run_id = $1 ORDER BY l.launch_id", run_id)
    return [{**dict(r), "collectors": json.loads(r["collectors"]),
             "events": json.loads(r["events"])} for r in rows]
