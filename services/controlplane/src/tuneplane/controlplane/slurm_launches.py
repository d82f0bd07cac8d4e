"""Slurm launches: a run's attempt as one batch job of ``nodes`` x ``tasks_per_node`` tasks.

Task ``i`` (``SLURM_PROCID``, block distribution) is member ``rank-<i>`` (or as the run's
integration artifact names ranks, ``members.rank``); node ``k`` runs ranks
``k*T .. k*T+T-1`` and one collector for them. A launch is queued here and submitted
by control's Slurm backend, which follows the job (``follow``): the attempt is pending
while the job waits, running while it runs, and ends as the job ends. A job requeued
(preempted, or by an operator) ends its attempt ``preempted``; its next start is the next
attempt (or, when the run has a live attempt begun elsewhere, none: the launch ends, and the
start's collectors are refused). On each node and start, the collector redeems the job's
one-time ticket (``redeem``, or ``refuse`` when it cannot run there) before any training
task starts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuneplane.common.db import Connection
from tuneplane.controlplane import launches, runs
from tuneplane.controlplane.errors import InvalidLaunch
from tuneplane.controlplane.job_endings import ending
from tuneplane.telemetry.v1.integration import RANK_MEMBER, rank_member

MAX_TASKS = 4096
#: A launch's environment variable: a name a POSIX shell takes (the job script exports it).
ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TIME_LIMIT = re.compile(r"^(UNLIMITED|\d{1,6}(-\d{1,2}(:\d{1,2}){0,2})?|\d{1,2}(:\d{1,2}){1,2}"
                        r"|\d{1,6}-\d{1,2})$")
#: Not Slurm's: the controller no longer shows the job (its state was lost).
VANISHED = "VANISHED"
#: Slurm job states by the attempt state they end it in; any other keeps it live.
ENDS = {"COMPLETED": "finished", "CANCELLED": "cancelled", "TIMEOUT": "timeout",
        "PREEMPTED": "preempted", "FAILED": "failed", "NODE_FAIL": "failed",
        "BOOT_FAIL": "failed", "OUT_OF_MEMORY": "failed", "DEADLINE": "failed",
        VANISHED: "failed"}
#: Slurm job states in which the job's processes run (its attempt is running).
RUNS = {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING",
        "RESIZING", "STAGE_OUT"}


def member(rank: int, template: str = RANK_MEMBER) -> str:
    return template.replace("{rank}", str(rank))


def members_of(nodes: int, tasks_per_node: int, node_index: int,
               template: str = RANK_MEMBER) -> list[str]:
    """The members whose tasks run on node ``node_index`` (block distribution)."""
    first = node_index * tasks_per_node
    return [member(rank, template) for rank in range(first, first + tasks_per_node)]


@dataclass(frozen=True, slots=True)
class JobOptions:
    partition: str = ""
    time_limit: str = ""       # Slurm's --time; empty: the partition's default
    workdir: str = ""          # absolute, existing on every node; empty: a fresh one per node
    requeue: bool = True       # Slurm may requeue it (preemption, node failure)

    def check(self) -> None:
        if self.partition and not PARTITION.fullmatch(self.partition):
            raise InvalidLaunch(f"partition {self.partition!r} is not a Slurm partition name")
        if self.time_limit and not TIME_LIMIT.fullmatch(self.time_limit):
            raise InvalidLaunch(f"time limit {self.time_limit!r} is not Slurm's form "
                                "(minutes, [days-]hours:minutes[:seconds], or UNLIMITED)")
        if self.workdir:
            plain_path(self.workdir, "working directory")


def plain_path(path: str, what: str) -> None:
    if not path.startswith("/") or any(c in path for c in "\0\n\r") or len(path) > 4096:
        raise InvalidLaunch(f"{what} {path!r} must be an absolute path on one line")


def check_members(artifact: dict[str, Any], nodes: int, tasks_per_node: int) -> str:
    """Every source and channel's owner must be one of the job's members; returns how the
    artifact names a rank's member."""
    template = rank_member(artifact)
    known = {member(rank, template) for rank in range(nodes * tasks_per_node)}
    stray = sorted(launches.owners(artifact) - known)
    if stray:
        raise InvalidLaunch(
            f"the integration artifact's owner(s) {', '.join(stray)} are not members of a job "
            f"of {nodes} node(s) x {tasks_per_node} task(s), whose members are "
            f"{member(0, template)} .. {member(nodes * tasks_per_node - 1, template)} "
            f"(task i is {template.replace('{rank}', 'i')})")
    return template


async def next_attempt(conn: Connection, run_id: str, nodes: int,
                       tasks_per_node: int) -> tuple[int, str]:
    """In the caller's transaction: the run's next attempt, pending, for a job of ``nodes``
    x ``tasks_per_node`` tasks whose members own every source; the attempt and how the
    artifact names a rank's member."""
    run = await conn.fetchrow("SELECT artifact::text AS document FROM runs WHERE run_id = $1",
                              run_id)
    if run is None:
        raise InvalidLaunch(f"no run {run_id!r}")
    template = check_members(json.loads(run["document"]), nodes, tasks_per_node)
    return await runs.start_attempt(conn, run_id, state="pending"), template


@dataclass(frozen=True, slots=True)
class Queued:
    attempt: int
    launch_id: int
    members: list[str]  # by rank


async def create(conn: Connection, run_id: str, *, nodes: int, tasks_per_node: int,
                 command: list[str], environment: Mapping[str, str], spool_root: str,
                 options: JobOptions) -> Queued:
    """Queue the run's next attempt as a Slurm job."""
    if min(nodes, tasks_per_node) < 1 or nodes * tasks_per_node > MAX_TASKS:
        raise InvalidLaunch(f"a Slurm launch has 1 .. {MAX_TASKS} tasks: nodes and tasks per "
                            f"node of at least 1 (asked {nodes} x {tasks_per_node})")
    if not command or any("\0" in arg for arg in command):
        raise InvalidLaunch("a launch needs a command to run (without NUL characters)")
    for name, value in environment.items():
        if not ENVIRONMENT_NAME.fullmatch(name) or "\0" in value:
            raise InvalidLaunch(f"environment variable {name!r} needs a name of letters, "
                                "digits and _ and a value without NUL")
        if name.startswith(("SLURM_", "TUNEPLANE_")):
            raise InvalidLaunch(f"environment variable {name} is set by Slurm or Tuneplane")
    plain_path(spool_root, "spool root")
    options.check()
    async with conn.transaction():
        attempt, template = await next_attempt(conn, run_id, nodes, tasks_per_node)
        launch_id = int(await conn.fetchval(
            "INSERT INTO slurm_launches (run_id, attempt, nodes, tasks_per_node, command, "
            "environment, options, spool_root, member_template) VALUES ($1, $2, $3, $4, "
            "$5::jsonb, $6::jsonb, $7::jsonb, $8, $9) RETURNING launch_id", run_id, attempt,
            nodes, tasks_per_node,
            json.dumps(command), json.dumps(dict(environment)),
            json.dumps({"partition": options.partition, "time_limit": options.time_limit,
                        "workdir": options.workdir, "requeue": options.requeue}),
            spool_root, template))
    return Queued(attempt, launch_id,
                  [member(rank, template) for rank in range(nodes * tasks_per_node)])


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
            other = await live_attempt(conn, run_id)
            if other is not None:  # begun elsewhere (an editor's): this start has none
                await conn.execute(
                    "UPDATE slurm_launches SET state = 'ended', job_state = $2, restarts = $3, "
                    "ended_at = now(), detail = $4 WHERE launch_id = $1", launch_id,
                    seen.state, seen.restarts,
                    f"job requeued (start {seen.restarts}) with no attempt of its own: the "
                    f"run's attempt {other['attempt']} is {other['state']}, begun outside "
                    "this launch")
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
    row = await conn.fetchrow("SELECT run_id, attempt, nodes, tasks_per_node FROM "
                              "slurm_launches WHERE launch_id = $1", launch_id)
    assert row is not None
    ended = await attempt_state(conn, row["run_id"], row["attempt"])
    if ended != "preempted":
        return f"not queued again: attempt {row['attempt']} had ended {ended} before"
    other = await live_attempt(conn, row["run_id"])
    if other is not None:
        return (f"not queued again: the run's attempt {other['attempt']} is "
                f"{other['state']}, begun outside this launch")
    attempt, _ = await next_attempt(conn, row["run_id"], row["nodes"], row["tasks_per_node"])
    again = int(await conn.fetchval(
        "INSERT INTO slurm_launches (run_id, attempt, nodes, tasks_per_node, command, "
        "environment, options, spool_root, member_template, scheduler) SELECT run_id, $2, "
        "nodes, tasks_per_node, command, environment, options || jsonb_build_object('after', "
        "launch_id), spool_root, member_template, scheduler FROM slurm_launches WHERE "
        "launch_id = $1 RETURNING launch_id", launch_id, attempt))
    return f"queued again as launch {again}, attempt {attempt}"


async def live_attempt(conn: Connection, run_id: str) -> Any:
    """The run's live attempt (its number and state), if any."""
    return await conn.fetchrow("SELECT attempt, state FROM attempts WHERE run_id = $1 AND "
                               "state = ANY($2::text[])", run_id, list(runs.LIVE_STATES))


async def end_live(conn: Connection, run_id: str, attempt: int, state: str) -> None:
    """End the attempt as ``state`` unless it has ended already."""
    if await attempt_state(conn, run_id, attempt) in runs.LIVE_STATES:
        await runs.end_attempt(conn, run_id, attempt, state)


async def attempt_state(conn: Connection, run_id: str, attempt: int) -> str:
    return str(await conn.fetchval("SELECT state FROM attempts WHERE run_id = $1 AND "
                                   "attempt = $2", run_id, attempt))
