"""Slurm launches in the control plane (real PostgreSQL): the attempt follows the job, each
start is its own attempt, and a node's collector gets credentials once per start, only
while Slurm runs that start, only for its node's members."""

from __future__ import annotations

import datetime as dt

import asyncpg
import pytest

from tuneplane.controlplane import job_follow, runs, slurm_launches, slurm_nodes
from tuneplane.controlplane.errors import AttemptStillRunning, InvalidLaunch, JobStartRefused
from tuneplane.controlplane.job_follow import JobSeen
from tuneplane.controlplane.slurm_launches import JobOptions
from tuneplane.controlplane.slurm_nodes import Start

ARTIFACT = {"version": 1, "sources": [
    {"id": "a", "kind": "jsonl", "path": "a.jsonl", "owner": "rank-0"},
    {"id": "b", "kind": "jsonl", "path": "b.jsonl", "owner": "rank-3"}]}


async def submitted(db: asyncpg.Connection, run_id: str, *, nodes: int = 2,
                    job_id: str = "77") -> int:
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id)
    launch_id = (await slurm_launches.create(
        db, run_id, nodes=nodes, tasks_per_node=2, command=["train"], environment={},
        spool_root="/local/spool", options=JobOptions())).launch_id
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = $2 "
                     "WHERE launch_id = $1", launch_id, job_id)
    return launch_id


async def states(db: asyncpg.Connection, run_id: str) -> list[tuple[int, str]]:
    return [(r["attempt"], r["state"]) for r in await db.fetch(
        "SELECT attempt, state FROM attempts WHERE run_id = $1 ORDER BY attempt", run_id)]


async def test_the_attempt_waits_runs_and_ends_as_the_job_does(db: asyncpg.Connection,
                                                               run_id: str) -> None:
    launch_id = await submitted(db, run_id)
    assert await states(db, run_id) == [(1, "pending")]
    with pytest.raises(AttemptStillRunning, match="attempt 1 is still pending"):
        await runs.start_attempt(db, run_id)
    assert await job_follow.follow(db, launch_id, JobSeen("PENDING", 0)) == "pending"
    assert await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0)) == "running"
    assert await job_follow.follow(db, launch_id, JobSeen("TIMEOUT", 0, exit_code="0:15")
                                       ) == "timeout"
    assert await states(db, run_id) == [(1, "timeout")]
    row = await db.fetchrow("SELECT state, job_state, detail FROM slurm_launches "
                            "WHERE launch_id = $1", launch_id)
    assert row is not None
    assert tuple(row) == ("ended", "TIMEOUT", "job timeout (exit 0:15)")
    # Ended is ended: a late view changes nothing.
    assert await job_follow.follow(db, launch_id, JobSeen("RUNNING", 1)) == "timeout"
    assert await states(db, run_id) == [(1, "timeout")]


async def test_each_start_of_a_requeued_job_is_the_next_attempt(db: asyncpg.Connection,
                                                                run_id: str) -> None:
    launch_id = await submitted(db, run_id)
    await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0))
    # Preempted: the attempt ends at once; the job may still run again.
    assert await job_follow.follow(db, launch_id, JobSeen("PREEMPTED", 0)) == "preempted"
    assert await job_follow.follow(db, launch_id, JobSeen("PENDING", 1)) == "pending"
    assert await job_follow.follow(db, launch_id, JobSeen("RUNNING", 1)) == "running"
    assert await job_follow.follow(db, launch_id, JobSeen("PENDING", 2)) == "pending"
    assert await job_follow.follow(db, launch_id, JobSeen("COMPLETED", 2)) == "finished"
    assert await states(db, run_id) == [(1, "preempted"), (2, "preempted"), (3, "finished")]


async def test_a_job_slurm_forgot_or_that_may_not_be_requeued_ends(db: asyncpg.Connection,
                                                                   run_id: str) -> None:
    launch_id = await submitted(db, run_id)
    await db.execute("UPDATE slurm_launches SET options = options || '{\"requeue\": false}' "
                     "WHERE launch_id = $1", launch_id)
    await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0))
    assert await job_follow.follow(db, launch_id, JobSeen("PREEMPTED", 0)) == "preempted"
    assert await db.fetchval("SELECT state FROM slurm_launches WHERE launch_id = $1",
                             launch_id) == "ended"
    other = await submitted(db, f"{run_id}-b", job_id="78")
    assert await job_follow.follow(db, other, JobSeen(
        job_follow.VANISHED, 0, comment="Slurm no longer shows the job")) == "failed"


async def test_a_ticket_is_redeemed_once_per_node_and_start_while_the_start_runs(
        db: asyncpg.Connection, run_id: str) -> None:
    launch_id = await submitted(db, run_id)
    node1 = Start(launch_id, "77", 0, 1, "gpu-1")
    with pytest.raises(JobStartRefused, match="Slurm shows the job PENDING, not running"):
        await slurm_nodes.redeem(db, node1, JobSeen("PENDING", 0))
    with pytest.raises(JobStartRefused, match="Slurm shows the job FAILED, not running"):
        await slurm_nodes.redeem(db, Start(launch_id, "77", 0, 0), JobSeen("FAILED", 0))
    granted = await slurm_nodes.redeem(db, node1, JobSeen("RUNNING", 0))
    assert (granted.attempt, granted.members) == (1, ["rank-2", "rank-3"])
    with pytest.raises(JobStartRefused, match="its ticket was already redeemed"):
        await slurm_nodes.redeem(db, node1, JobSeen("RUNNING", 0))
    with pytest.raises(JobStartRefused, match="the ticket is not this job's"):
        await slurm_nodes.redeem(db, Start(launch_id, "99", 0, 0), JobSeen("RUNNING", 0))
    with pytest.raises(JobStartRefused, match="the job has 2 node"):
        await slurm_nodes.redeem(db, Start(launch_id, "77", 0, 2), JobSeen("RUNNING", 0))
    with pytest.raises(JobStartRefused, match="the job's current start is 0"):
        await slurm_nodes.redeem(db, Start(launch_id, "77", 1, 0), JobSeen("RUNNING", 0))
    assert await slurm_nodes.renewable(db, launch_id, 0, 1, 1) == ["rank-2", "rank-3"]
    # Requeued: the first start's credentials renew no more; the next start redeems anew.
    await job_follow.follow(db, launch_id, JobSeen("PENDING", 1))
    with pytest.raises(JobStartRefused, match="attempt 1 has ended \\(preempted\\)"):
        await slurm_nodes.renewable(db, launch_id, 0, 1, 1)
    again = await slurm_nodes.redeem(db, Start(launch_id, "77", 1, 1), JobSeen("RUNNING", 1))
    assert again.attempt == 2
    # A report counts only the node's own members.
    assert await slurm_nodes.report(db, launch_id, 0, 1, undelivered=2, detail="x",
                                    by_member={"rank-2": 2, "rank-0": 5}) == (
        "preempted", {"rank-2": 2})
    kept = await db.fetchval("SELECT undelivered_by_member::text FROM slurm_collectors WHERE "
                             "launch_id = $1 AND restart = 0 AND node_index = 1", launch_id)
    assert kept == '{"rank-2": 2}'


async def test_a_refusal_spends_the_ticket_and_says_why(db: asyncpg.Connection,
                                                        run_id: str) -> None:
    launch_id = await submitted(db, run_id)
    start = Start(launch_id, "77", 0, 0, "gpu-0")
    await slurm_nodes.refuse(db, start, JobSeen("RUNNING", 0), "spool root on NFS")
    with pytest.raises(JobStartRefused, match="its ticket was already redeemed"):
        await slurm_nodes.redeem(db, start, JobSeen("RUNNING", 0))
    with pytest.raises(JobStartRefused, match="redeemed no ticket"):
        await slurm_nodes.renewable(db, launch_id, 0, 0, 1)
    await job_follow.follow(db, launch_id, JobSeen("FAILED", 0, exit_code="1:0", comment=(
        "tuneplane: refused: gpu-0: spool root on NFS")))
    detail = await db.fetchval("SELECT detail FROM slurm_launches WHERE launch_id = $1",
                               launch_id)
    assert detail == "job failed (exit 1:0); tuneplane: refused: gpu-0: spool root on NFS"


async def test_launch_mistakes_are_refused_and_queue_nothing(db: asyncpg.Connection,
                                                             run_id: str) -> None:
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id)

    async def create(**changed: object) -> None:
        args: dict[str, object] = {"nodes": 2, "tasks_per_node": 2, "command": ["train"],
                                   "environment": {}, "spool_root": "/local/spool",
                                   "options": JobOptions(), **changed}
        await slurm_launches.create(db, run_id, **args)  # type: ignore[arg-type]

    refusals: dict[str, dict[str, object]] = {
        "owner\\(s\\) rank-3 are not members of a job of 1 node": {"nodes": 1},
        "1 .. 4096 tasks": {"nodes": 4097},
        "a launch needs a command": {"command": []},
        "spool root 'spool' must be an absolute path": {"spool_root": "spool"},
        "set by Slurm or Tuneplane": {"environment": {"TUNEPLANE_RUN_ID": "x"}},
        "not Slurm's form": {"options": JobOptions(time_limit="soon")},
    }
    for words, changed in refusals.items():
        with pytest.raises(InvalidLaunch, match=words):
            await create(**changed)
    with pytest.raises(InvalidLaunch, match="no run 'nope'"):
        await slurm_launches.create(db, "nope", nodes=1, tasks_per_node=1, command=["x"],
                                    environment={}, spool_root="/s", options=JobOptions())
    assert await states(db, run_id) == []
