"""Slurm launches: a run's attempt as one batch job of ``nodes`` x ``tasks_per_node`` tasks.

Task ``i`` (``SLURM_PROCID``, block distribution) is member ``rank-<i>`` (or as the run's
integration artifact names ranks, ``members.rank``); node ``k`` runs ranks
``k*T .. k*T+T-1`` and one collector for them. A launch is queued here and submitted
by control's Slurm backend, which follows the job (``job_follow``). On each node and
start, the collector redeems the job's one-time ticket (``slurm_nodes.redeem``, or
``refuse`` when it cannot run there) before any training task starts.
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
from tuneplane.telemetry.v1.integration import RANK_MEMBER, rank_member

MAX_TASKS = 4096
#: A launch's environment variable: a name a POSIX shell takes (the job script exports it).
ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TIME_LIMIT = re.compile(r"^(UNLIMITED|\d{1,6}(-\d{1,2}(:\d{1,2}){0,2})?|\d{1,2}(:\d{1,2}){1,2}"
                        r"|\d{1,6}-\d{1,2})$")
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
