"""A batch job's launch followed (Slurm's, or a Kubernetes Job as one): its attempt is
pending while the job waits, running while it runs, and ends as the job ends. A job
requeued by Slurm (preempted, or by an operator) ends its attempt ``preempted``; its next
start is the next attempt (or, when the run has a live attempt begun elsewhere, none: the
launch ends, and the start's collectors are refused). A Kubernetes Job preempted has ended:
its launch ends, queued again as a new launch, the run's next attempt (``queue_again``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tuneplane.common.db import Connection
from tuneplane.controlplane import deletions, runs
from tuneplane.controlplane.errors import InvalidLaunch
from tuneplane.controlplane.job_endings import ending
from tuneplane.controlplane.slurm_launches import next_attempt

#: Not Slurm's: the controller no longer shows the job (its state was lost).
VANISHED = "VANISHED"
#: Slurm job states by the attempt state they end it in; any other keeps it live.
ENDS = {"COMPLETED": "finished", "CANCELLED": "cancelled", "TIMEOUT": "timeout",
        "PREEMPTED": "preempted", "FAILED": "failed", "NODE_FAIL": "failed",
        "BOOT_FAIL": "failed", "OUT_OF_MEMORY": "failed", "DEADLINE": "failed",
        VANISHED: "failed"}
#: How many times in a row a launch whose scheduler does not requeue it (a Kubernetes Job)
#: is queued again after a preemption that came within ``RAN_A_WHILE`` seconds of its
#: attempt's start (a pod the node evicts as soon as it runs, for ever); an attempt that
#: ran longer starts the count again.
MAX_REQUEUES = 10
RAN_A_WHILE = 600
#: The state of a job waiting to start (a Kubernetes Job's too).
PENDING = "PENDING"
#: Slurm job states in which the job's processes run (its attempt is running).
RUNS = {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING",
        "RESIZING", "STAGE_OUT"}




@dataclass(frozen=True, slots=True)
class JobSeen:
    """A job as Slurm shows it now."""

    state: str            # JobState, e.g. RUNNING
    restarts: int         # how often it was requeued
    reason: str = ""      # Slurm's Reason (why pending, or how it failed)
    exit_code: str = ""   # ExitCode, "code:signal"
    comment: str = ""     # what its job script wrote there (a refusal)

    @property
    def running(self) -> bool:
        return self.state in RUNS


async def follow(conn: Connection, launch_id: int, seen: JobSeen) -> str:
    """Bring the launch and its attempts to what Slurm shows; returns the attempt's state.

    A job preempted may be requeued: its attempt ends ``preempted`` at once, and the launch
    is followed on, its next start being the next attempt, until the job ends otherwise or
    Slurm forgets it. A Kubernetes Job preempted has ended: the launch ends, queued again
    as a new launch (``queue_again``)."""
    async with conn.transaction():
        row = await conn.fetchrow("SELECT run_id, attempt, restarts, state, scheduler, "
                                  "(options->>'requeue')::boolean AS requeue FROM "
                                  "slurm_launches WHERE launch_id = $1 FOR UPDATE", launch_id)
        if row is None:
            raise InvalidLaunch(f"no Slurm launch {launch_id}")
        run_id, attempt = row["run_id"], int(row["attempt"])
        if row["state"] == "ended":
            return await attempt_state(conn, run_id, attempt)
        if seen.restarts > row["restarts"]:  # requeued: this start is the next attempt
            await end_live(conn, run_id, attempt, "preempted")
            why = await no_next_attempt(conn, run_id)
            if why is not None:  # begun elsewhere (an editor's), or deleted: none
                await conn.execute(
                    "UPDATE slurm_launches SET state = 'ended', job_state = $2, restarts = $3, "
                    "ended_at = now(), detail = $4 WHERE launch_id = $1", launch_id,
                    seen.state, seen.restarts,
                    f"job requeued (start {seen.restarts}) with no attempt of its own: {why}")
                return await attempt_state(conn, run_id, attempt)
            attempt = await runs.start_attempt(conn, run_id, state="pending")
            await conn.execute("UPDATE slurm_launches SET attempt = $2, restarts = $3 "
                               "WHERE launch_id = $1", launch_id, attempt, seen.restarts)
        ends = ENDS.get(seen.state)
        if ends is not None:
            await end_live(conn, run_id, attempt, ends)
            requeue = seen.state == "PREEMPTED" and row["requeue"] is not False
            if not (requeue and row["scheduler"] == "slurm"):  # Slurm starts the job again
                detail = await ending(conn, launch_id, seen)
                if requeue:  # a new job of the same launch, as the next attempt
                    detail = f"{detail}; {await queue_again(conn, launch_id)}"
                await conn.execute(
                    "UPDATE slurm_launches SET state = 'ended', job_state = $2, "
                    "ended_at = now(), detail = $3 WHERE launch_id = $1", launch_id,
                    seen.state, detail[:4000])
                return await attempt_state(conn, run_id, attempt)
        elif seen.running and await attempt_state(conn, run_id, attempt) == "pending":
            await conn.execute("UPDATE attempts SET state = 'running', started_at = now() "
                               "WHERE run_id = $1 AND attempt = $2", run_id, attempt)
        await conn.execute("UPDATE slurm_launches SET job_state = $2 WHERE launch_id = $1",
                           launch_id, seen.state)
        return await attempt_state(conn, run_id, attempt)


async def queue_again(conn: Connection, launch_id: int) -> str:
    """In the caller's transaction: the launch whose job was preempted (and not started
    again by its scheduler: a Kubernetes Job) queued again as a new launch, the run's next
    attempt; unless its attempt ended otherwise first, or another is live. Says which."""
    row = await conn.fetchrow(
        "SELECT l.run_id, l.attempt, l.nodes, l.tasks_per_node, a.state, CASE WHEN "
        "a.ended_at - a.started_at >= make_interval(secs => $2) THEN 0 ELSE coalesce(("
        "l.options->>'requeues')::int, 0) END AS requeues FROM slurm_launches l JOIN "
        "attempts a USING (run_id, attempt) WHERE l.launch_id = $1", launch_id, RAN_A_WHILE)
    assert row is not None
    if row["state"] != "preempted":
        return f"not queued again: attempt {row['attempt']} had ended {row['state']} before"
    if row["requeues"] >= MAX_REQUEUES:
        return (f"not queued again: preempted {MAX_REQUEUES + 1} times in a row, each "
                f"within {RAN_A_WHILE // 60} minutes of its start; launch it anew")
    why = await no_next_attempt(conn, row["run_id"])
    if why is not None:
        return f"not queued again: {why}"
    attempt, _ = await next_attempt(conn, row["run_id"], row["nodes"], row["tasks_per_node"])
    again = int(await conn.fetchval(
        "INSERT INTO slurm_launches (run_id, attempt, nodes, tasks_per_node, command, "
        "environment, options, spool_root, member_template, scheduler) SELECT run_id, $2, "
        "nodes, tasks_per_node, command, environment, options || jsonb_build_object('after', "
        "launch_id, 'requeues', $3::int), spool_root, member_template, scheduler FROM "
        "slurm_launches WHERE launch_id = $1 RETURNING launch_id", launch_id, attempt,
        row["requeues"] + 1))
    return f"queued again as launch {again}, attempt {attempt}"


async def no_next_attempt(conn: Connection, run_id: str) -> str | None:
    """Why the run can start no next attempt now: it was deleted, or an attempt begun
    outside the launch is live; None when it can."""
    if await deletions.deleted(conn, run_id):
        return "the run was deleted"
    other = await conn.fetchrow("SELECT attempt, state FROM attempts WHERE run_id = $1 AND "
                                "state = ANY($2::text[])", run_id, list(runs.LIVE_STATES))
    if other is None:
        return None
    return f"the run's attempt {other['attempt']} is {other['state']}, begun outside this launch"


async def end_live(conn: Connection, run_id: str, attempt: int, state: str) -> None:
    """End the attempt as ``state`` unless it has ended already."""
    if await attempt_state(conn, run_id, attempt) in runs.LIVE_STATES:
        await runs.end_attempt(conn, run_id, attempt, state)


async def attempt_state(conn: Connection, run_id: str, attempt: int) -> str:
    return str(await conn.fetchval("SELECT state FROM attempts WHERE run_id = $1 AND "
                                   "attempt = $2", run_id, attempt))
