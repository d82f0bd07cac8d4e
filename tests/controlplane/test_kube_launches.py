"""Kubernetes launches in the control plane (real PostgreSQL): one pod per member, what a
request may choose and what it may not, and a pod's sidecar redeeming the launch's ticket
once per index through the same service as a Slurm node's collector."""

from __future__ import annotations

import datetime as dt
from typing import Any

import asyncpg
import pytest

from tests.support.calls import Aborted, Context, redeem
from tuneplane.common.tokens import TokenSigner
from tuneplane.control.calls import Policy
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.controlplane import job_follow, kube_launches, runs, slurm_nodes
from tuneplane.controlplane.errors import InvalidLaunch, JobStartRefused
from tuneplane.controlplane.job_follow import MAX_REQUEUES, JobSeen
from tuneplane.controlplane.kube_launches import PodSpec
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import slurm_pb2 as spb

ARTIFACT = {"version": 1, "sources": [
    {"id": "a", "kind": "jsonl", "path": "a.jsonl", "owner": "rank-0"},
    {"id": "b", "kind": "jsonl", "path": "b.jsonl", "owner": "rank-1"}]}
POD = PodSpec("trainer:1", {"cpu": "500m"}, {"memory": "2Gi", "nvidia.com/gpu": "1"})


async def queued(db: asyncpg.Connection, run_id: str, indexes: int = 2) -> int:
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id)
    made = await kube_launches.create(db, run_id, indexes=indexes, pod=POD,
                                      command=["python", "train.py"], environment={"LR": "1"})
    assert made.members == [f"rank-{i}" for i in range(indexes)]
    return made.launch_id


async def test_a_launch_is_queued_as_a_kubernetes_job_of_one_task_per_pod(
        db: asyncpg.Connection, run_id: str) -> None:
    launch_id = await queued(db, run_id)
    row = await db.fetchrow("SELECT scheduler, nodes, tasks_per_node, state, options "
                            "FROM slurm_launches WHERE launch_id = $1", launch_id)
    assert row is not None
    assert (row["scheduler"], row["nodes"], row["tasks_per_node"], row["state"]) == (
        "kubernetes", 2, 1, "queued")
    listed = await slurm_nodes.listing(db, run_id)
    assert [(r["backend"], r["attempt_state"]) for r in listed] == [("kubernetes", "pending")]


@pytest.mark.parametrize(("change", "said"), [
    ({"indexes": 0}, "1 .. 1024 indexes"),
    ({"pod": PodSpec("Trainer:latest")}, "not an image reference"),
    ({"pod": PodSpec("t:1", {"cpu": "lots"})}, "resource requests cpu='lots'"),
    ({"environment": {"TUNEPLANE_MEMBER": "rank-9"}}, "set by Tuneplane or Kubernetes"),
    ({"environment": {"JOB_COMPLETION_INDEX": "0"}}, "set by Tuneplane or Kubernetes"),
    ({"command": []}, "needs a command"),
    ({"environment": {f"V{i}": "x" * 60_000 for i in range(2)}}, "at most 65536"),
    ({"indexes": 1}, "rank-1 are not members"),  # rank-1 owns a source: two pods needed
])
async def test_what_a_request_may_not_choose_is_refused_by_name(
        db: asyncpg.Connection, run_id: str, change: dict[str, Any], said: str) -> None:
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id)
    given: dict[str, Any] = {"indexes": 2, "pod": POD, "command": ["train"],
                             "environment": {}, **change}
    with pytest.raises(InvalidLaunch, match=said):
        await kube_launches.create(db, run_id, **given)
    assert await db.fetchval("SELECT count(*) FROM attempts WHERE run_id = $1", run_id) == 0


class Jobs:
    """The Kubernetes scheduler as redemption asks it: one Job, as the test says it runs."""

    def __init__(self, job_id: str, seen: JobSeen) -> None:
        self.shown = {job_id: seen}
        self.asked = 0

    async def job(self, job_id: str) -> JobSeen | None:
        self.asked += 1
        return self.shown.get(job_id)


async def test_each_pods_sidecar_redeems_the_ticket_once_for_its_own_member_only(
        db: asyncpg.Connection, run_id: str, initialised: Any) -> None:
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1' "
                     "WHERE launch_id = $1", launch_id)
    jobs = Jobs("uid-1", JobSeen("RUNNING", 0))
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        service = SlurmJobControl(TokenSigner(initialised.jwt_secret), pool,
                                  Policy(pb.CollectorConfig(telemetry_target="x:8444")),
                                  {"kubernetes": jobs})
        slurm_only = SlurmJobControl(TokenSigner(initialised.jwt_secret), pool,
                                     Policy(pb.CollectorConfig()), {"slurm": jobs})
        with pytest.raises(Aborted, match="does not follow kubernetes launches"):
            await redeem(slurm_only, launch_id, "uid-1", node=1)
        assert jobs.asked == 0  # refused before any scheduler is asked
        for index in (0, 1):
            reply = await redeem(service, launch_id, "uid-1", node=index,
                                 hostname=f"pod-{index}")
            assert [m.member for m in reply.credentials.members] == [f"rank-{index}"]
        with pytest.raises(Aborted, match="already redeemed"):
            await redeem(service, launch_id, "uid-1", node=0)
        with pytest.raises(Aborted, match="the job has 2 node"):
            await redeem(service, launch_id, "uid-1", node=2)
        with pytest.raises(Aborted, match="not this job's"):  # another Job's uid
            await redeem(service, launch_id, "uid-2", node=1)
    finally:
        await pool.close()


async def test_a_sidecar_asking_before_kubernetes_shows_its_job_running_is_told_to_retry(
        db: asyncpg.Connection, run_id: str, initialised: Any) -> None:
    """The sidecar redeems (or reports its refusal) as it starts, but the API shows its
    container running only once the kubelet has reported it: while the Job pends, the
    call is answered UNAVAILABLE (the collector retries), nothing recorded; once shown
    running, it redeems, and a refusal is recorded."""
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1' "
                     "WHERE launch_id = $1", launch_id)
    jobs = Jobs("uid-1", JobSeen("PENDING", 0, "PodInitializing"))
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        service = SlurmJobControl(TokenSigner(initialised.jwt_secret), pool,
                                  Policy(pb.CollectorConfig(telemetry_target="x:8444")),
                                  {"kubernetes": jobs})
        start = spb.JobStart(ticket=service.issue_ticket(launch_id, 600), job_id="uid-1",
                             restart=0, node_index=1, hostname="pod-1")
        refusal = spb.RefuseRequest(start=start, reason="spool root refused: NFS")
        for asked in (redeem(service, launch_id, "uid-1", node=0),
                      service.Refuse(refusal, Context())):  # type: ignore[arg-type]
            with pytest.raises(Aborted, match="UNAVAILABLE") as early:
                await asked
            assert ("Kubernetes shows the Job PENDING (PodInitializing), not yet running; "
                    "retry with backoff") in str(early.value)
        assert await db.fetchval("SELECT count(*) FROM slurm_collectors WHERE "
                                 "launch_id = $1", launch_id) == 0
        jobs.shown["uid-1"] = JobSeen("RUNNING", 0)
        assert (await redeem(service, launch_id, "uid-1", node=0)).attempt == 1
        await service.Refuse(refusal, Context())  # type: ignore[arg-type]
        recorded = await db.fetch("SELECT node_index, refused FROM slurm_collectors WHERE "
                                  "launch_id = $1 ORDER BY node_index", launch_id)
        assert [tuple(r) for r in recorded] == [(0, None), (1, "spool root refused: NFS")]
    finally:
        await pool.close()


@pytest.mark.parametrize(("seen", "ended", "said"), [
    (JobSeen("PENDING", 1), False, "Kubernetes shows the Job PENDING, not running"),
    (JobSeen("PENDING", 0), True, "attempt 1 is cancelled"),  # an editor ended it
    (JobSeen("FAILED", 0, "BackoffLimitExceeded"), False, "the Job FAILED, not running"),
])
async def test_a_job_that_pends_refuses_what_no_wait_would_let_redeem(
        db: asyncpg.Connection, run_id: str, seen: JobSeen, ended: bool, said: str) -> None:
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1' "
                     "WHERE launch_id = $1", launch_id)
    if ended:
        await runs.end_attempt(db, run_id, 1, "cancelled")
    with pytest.raises(JobStartRefused, match=said):
        await slurm_nodes.redeem(db, slurm_nodes.Start(launch_id, "uid-1", 0, 0), seen)


async def launches_of(db: asyncpg.Connection, run_id: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await db.fetch(
        "SELECT launch_id, attempt, state, job_state, options->'after' FROM slurm_launches "
        "WHERE run_id = $1 ORDER BY launch_id", run_id)]


PREEMPTED = JobSeen("PREEMPTED", 0, "DisruptionTarget",
                    comment="tuneplane-launch-1-0-x: EvictionByEvictionAPI: Eviction API")


async def test_a_job_whose_pod_was_evicted_is_queued_again_as_the_next_attempt(
        db: asyncpg.Connection, run_id: str) -> None:
    """A Kubernetes Job does not start again by itself: its launch ends, its attempt
    preempted, and a new launch of the same Job is queued as the run's next attempt."""
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1' "
                     "WHERE launch_id = $1", launch_id)
    assert await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0)) == "running"
    assert await job_follow.follow(db, launch_id, PREEMPTED) == "preempted"
    (first, again) = await launches_of(db, run_id)
    assert first[:4] == (launch_id, 1, "ended", "PREEMPTED")
    assert again == (again[0], 2, "queued", "", str(launch_id))
    assert await db.fetchval("SELECT options->'requeues' FROM slurm_launches WHERE "
                             "launch_id = $1", again[0]) == "1"
    detail = await db.fetchval("SELECT detail FROM slurm_launches WHERE launch_id = $1",
                               launch_id)
    assert detail == ("job preempted; tuneplane-launch-1-0-x: EvictionByEvictionAPI: Eviction "
                      f"API; queued again as launch {again[0]}, attempt 2")
    copied = await db.fetch("SELECT command, environment, options - 'after' - 'requeues' AS "
                            "options, "
                            "nodes, member_template FROM slurm_launches WHERE run_id = $1 "
                            "ORDER BY launch_id", run_id)
    assert copied[0] == copied[1]
    assert [(r["attempt"], r["state"]) for r in await db.fetch(
        "SELECT attempt, state FROM attempts WHERE run_id = $1 ORDER BY attempt", run_id)] == [
        (1, "preempted"), (2, "pending")]
    # Ended is ended: the preempted Job seen again queues nothing more.
    assert await job_follow.follow(db, launch_id, PREEMPTED) == "preempted"
    assert len(await launches_of(db, run_id)) == 2


@pytest.mark.parametrize("why", ["no requeue", "ended by an editor", "another attempt",
                                 "preempted too often"])
async def test_a_preempted_job_is_not_queued_again_when_it_may_not_be(
        db: asyncpg.Connection, run_id: str, why: str) -> None:
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1' "
                     "WHERE launch_id = $1", launch_id)
    await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0))
    if why == "no requeue":
        await db.execute("UPDATE slurm_launches SET options = options || "
                         "'{\"requeue\": false}' WHERE launch_id = $1", launch_id)
    elif why == "ended by an editor":
        await runs.end_attempt(db, run_id, 1, "cancelled")
    elif why == "preempted too often":  # the last of a chain of launches queued again
        await db.execute("UPDATE slurm_launches SET options = options || jsonb_build_object("
                         "'requeues', $2::int) WHERE launch_id = $1", launch_id, MAX_REQUEUES)
    else:  # the attempt preempted, and an editor's attempt begun meanwhile
        await runs.end_attempt(db, run_id, 1, "preempted")
        await runs.start_attempt(db, run_id)
    await job_follow.follow(db, launch_id, PREEMPTED)
    ((_, _, state, job_state, _),) = await launches_of(db, run_id)
    assert (state, job_state) == ("ended", "PREEMPTED")
    detail = await db.fetchval("SELECT detail FROM slurm_launches WHERE launch_id = $1",
                               launch_id)
    said = {"no requeue": "job preempted; tuneplane", "ended by an editor":
            "not queued again: attempt 1 had ended cancelled before",
            "another attempt": "not queued again: the run's attempt 2 is running",
            "preempted too often": f"not queued again: preempted {MAX_REQUEUES + 1} times "
                                   "in a row, each within 10 minutes of its start"}[why]
    assert said in detail, detail


@pytest.mark.parametrize(("spool", "said"), [
    ("emptyDir", "index 1: its pod was gone before its sidecar reported: its spool, an "
                 "emptyDir, was destroyed with it; what it held undelivered is lost"),
    ("hostPath", "index 1: its collector never reported how its drain ended"),
])
async def test_a_sidecar_that_never_reported_is_named_with_what_its_spool_became(
        db: asyncpg.Connection, run_id: str, spool: str, said: str) -> None:
    """A pod force-deleted: its sidecar had no time to drain and report. With an emptyDir
    spool, that spool is destroyed, and the launch says so; its reported neighbour not."""
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1', "
                     "options = options || jsonb_build_object('spool', $2::text) "
                     "WHERE launch_id = $1", launch_id, spool)
    await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0))
    for index in (0, 1):
        await db.execute("INSERT INTO slurm_collectors (launch_id, restart, node_index, "
                         "attempt, hostname) VALUES ($1, 0, $2, 1, $3)", launch_id, index,
                         f"pod-{index}")
    await db.execute("UPDATE slurm_collectors SET reported_at = now(), undelivered = 0 "
                     "WHERE launch_id = $1 AND node_index = 0", launch_id)
    assert await job_follow.follow(db, launch_id, JobSeen("FAILED", 0)) == "failed"
    detail = await db.fetchval("SELECT detail FROM slurm_launches WHERE launch_id = $1",
                               launch_id)
    assert detail.startswith("job failed; "), detail
    assert said in detail, detail
    assert "index 0" not in detail


async def test_an_attempt_that_ran_a_while_before_its_preemption_starts_the_count_again(
        db: asyncpg.Connection, run_id: str) -> None:
    launch_id = await queued(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = 'uid-1', "
                     "options = options || jsonb_build_object('requeues', $2::int) "
                     "WHERE launch_id = $1", launch_id, MAX_REQUEUES)
    await job_follow.follow(db, launch_id, JobSeen("RUNNING", 0))
    await db.execute("UPDATE attempts SET started_at = now() - interval '2 hours' "
                     "WHERE run_id = $1", run_id)
    await job_follow.follow(db, launch_id, PREEMPTED)
    (_, again) = await launches_of(db, run_id)
    assert again[1:3] == (2, "queued")
    assert await db.fetchval("SELECT options->'requeues' FROM slurm_launches WHERE "
                             "launch_id = $1", again[0]) == "1"
