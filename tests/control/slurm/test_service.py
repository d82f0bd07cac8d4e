"""Redeeming a Slurm job's ticket, called as control's gRPC server calls the service:
what a ticket holder (any process of the job's user) can and cannot get, and what it
costs control before it is refused."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import grpc
import pytest

from tests.support.calls import Aborted, Context, redeem
from tests.support.slurm_fake import FakeSlurm, launch_row, queue
from tuneplane.common.tokens import TokenSigner
from tuneplane.control.jobs import Shown
from tuneplane.control.slurm.backend import SlurmBackend
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.controlplane import runs, slurm_nodes
from tuneplane.controlplane.job_follow import JobSeen
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.telemetry.v1.identity import MemberKey


async def running(backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
                  run_id: str) -> tuple[int, str]:
    """A launch whose job runs (its first start): its id and job id."""
    launch_id = await queue(db, run_id)
    await backend.step()
    job_id = str((await launch_row(db, launch_id))["job_id"])
    fake_slurm.shown[job_id] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid,
                                     JobSeen("RUNNING", 0))
    await backend.step()
    assert (await launch_row(db, launch_id))["attempt_state"] == "running"
    return launch_id, job_id


async def collectors(db: asyncpg.Connection, launch_id: int) -> int:
    return int(await db.fetchval("SELECT count(*) FROM slurm_collectors WHERE launch_id = $1",
                                 launch_id))


async def test_a_collector_redeems_its_nodes_ticket_once(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str) -> None:
    launch_id, job_id = await running(backend, fake_slurm, db, run_id)
    reply = await redeem(service, launch_id, job_id)
    assert (reply.attempt, [m.member for m in reply.credentials.members]) == (
        1, ["rank-0", "rank-1"])
    asked = fake_slurm.asked
    with pytest.raises(Aborted, match="already redeemed"):
        await redeem(service, launch_id, job_id)
    assert fake_slurm.asked == asked  # refused before squeue was run for it


async def test_the_ticket_of_an_ended_launch_is_refused_before_squeue_is_run(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str) -> None:
    """A ticket lives as long as a job may wait in the queue (30 days); each call of one
    whose launch ended must not cost control a squeue, or a kept ticket floods it."""
    launch_id, job_id = await running(backend, fake_slurm, db, run_id)
    fake_slurm.shown[job_id] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid,
                                     JobSeen("COMPLETED", 0))
    await backend.step()
    asked = fake_slurm.asked
    for node in (0, 1):
        with pytest.raises(Aborted, match="FAILED_PRECONDITION"):
            await redeem(service, launch_id, job_id, node=node)
    assert fake_slurm.asked == asked
    assert await collectors(db, launch_id) == 0


async def test_a_ticket_naming_another_job_neither_follows_that_job_nor_runs_squeue(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str) -> None:
    """The ticket's holder names the job: another job's state must not become the
    launch's (here: its attempt ended as another job ends)."""
    launch_id, _ = await running(backend, fake_slurm, db, run_id)
    fake_slurm.shown["777"] = Shown("other", 4321, JobSeen("COMPLETED", 3))
    asked = fake_slurm.asked
    with pytest.raises(Aborted, match="not this job's"):
        await redeem(service, launch_id, "777")
    assert fake_slurm.asked == asked
    row = await launch_row(db, launch_id)
    assert (row["state"], row["attempt_state"]) == ("submitted", "running")


async def test_a_slurm_job_shown_pending_is_refused_for_good(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str) -> None:
    """A Slurm job's collector runs in the job, so Slurm shows it running first: a call
    while it pends is a ticket holder's, refused (not told to retry, as a Kubernetes pod's
    sidecar is)."""
    launch_id = await queue(db, run_id)
    await backend.step()
    job_id = str((await launch_row(db, launch_id))["job_id"])
    fake_slurm.shown[job_id] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid,
                                     JobSeen("PENDING", 0, "Resources"))
    with pytest.raises(Aborted, match="FAILED_PRECONDITION") as refused:
        await redeem(service, launch_id, job_id)
    assert "Slurm shows the job PENDING, not running" in str(refused.value)
    assert await collectors(db, launch_id) == 0


async def test_an_attempt_an_editor_ended_gets_no_credentials(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str) -> None:
    launch_id, job_id = await running(backend, fake_slurm, db, run_id)
    await runs.end_attempt(db, run_id, 1, "cancelled")
    with pytest.raises(Aborted, match="cancelled"):
        await redeem(service, launch_id, job_id)
    assert await collectors(db, launch_id) == 0


async def test_a_flood_of_redemptions_costs_control_one_squeue_at_a_time_per_node_of_the_job(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str) -> None:
    """Any process of the job's user may hold its ticket while the job runs, and a start
    to come is never redeemed yet: each call would run squeue, as many at once as it
    sends, taking every call slot of control (Node control's too) and Slurm's."""
    launch_id, job_id = await running(backend, fake_slurm, db, run_id)  # one node
    fake_slurm.answer.clear()
    fake_slurm.asking.clear()
    asked = fake_slurm.asked
    first = asyncio.create_task(redeem(service, launch_id, job_id, restart=5))
    await fake_slurm.asking.wait()
    for _ in range(3):
        with pytest.raises(Aborted, match="RESOURCE_EXHAUSTED") as refused:
            await redeem(service, launch_id, job_id, restart=5)
        assert "retry" in str(refused.value)
    assert fake_slurm.asked == asked + 1
    fake_slurm.answer.set()
    with pytest.raises(Aborted, match="current start is 0"):
        await first
    reply = await redeem(service, launch_id, job_id)  # the node's collector, after it
    assert reply.attempt == 1


class Bearing(Context):
    """A call's context carrying ``authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self._token = token

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:  # type: ignore[override]
        return (("authorization", f"Bearer {self._token}"),)


def left(member: str, batches: int, root: str = "ab" * 32) -> spb.SpoolLeft:
    return spb.SpoolLeft(member=member, epoch="0123456789abcdef", root=root, batches=batches)


async def test_a_drain_that_left_batches_gets_a_credential_for_each_spools_tree_only(
        backend: SlurmBackend, fake_slurm: FakeSlurm, service: SlurmJobControl,
        db: asyncpg.Connection, run_id: str, signer: TokenSigner) -> None:
    launch_id, job_id = await running(backend, fake_slurm, db, run_id)
    job = Bearing((await redeem(service, launch_id, job_id)).credentials.credential)

    def report(*spools: spb.SpoolLeft) -> spb.JobNodeReport:
        # rank-9 is not this node's: its count is not kept, and its spool gets no credential.
        return spb.JobNodeReport(undelivered_batches=8, undelivered_by_member={
            "rank-0": 4, "rank-1": 3, "rank-9": 1}, spools=spools)

    for bad, why in (((left("rank-0", 5),), "counts 4 batches of 'rank-0' left, not the 5"),
                     ((left("rank-0", 1), left("rank-0", 1)), "named twice"),
                     ((left("rank-0", 1, root="xyz"),), "the root is the 64 hex digits"),
                     ((left("rank-7", 1),), "counts 0 batches of 'rank-7'")):
        with pytest.raises(Aborted, match=why) as refused:
            await service.Report(report(*bad), job)  # type: ignore[arg-type]
        assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    reply = await service.Report(report(left("rank-0", 4), left("rank-1", 2),
                                        left("rank-9", 1)), job)  # type: ignore[arg-type]
    assert reply.attempt_state == "running"
    claims = {given.member: signer.verify_delivery(given.token.token, now=time.time())
              for given in reply.delivery}
    assert {m: (c.member, c.batches, c.epoch, c.root.hex(), c.job, c.node)
            for m, c in claims.items()} == {
        m: (MemberKey(run_id, 1, m), n, "0123456789abcdef", "ab" * 32, f"{launch_id}/0/0", None)
        for m, n in (("rank-0", 4), ("rank-1", 2))}
    # What the node left is listed less what the read models hold as delivered late: a
    # late batch of the reported spool's epoch counts, one not late or of another epoch not.
    for batch_id, late in (("0123456789abcdef-1", True), ("0123456789abcdef-2", True),
                           ("0123456789abcdef-3", False), ("fedcba9876543210-1", True)):
        await db.execute("INSERT INTO readmodel.batch_ledger (run_id, attempt, member, "
                         "batch_id, kafka_partition, kafka_offset, points, sealed_at, late) "
                         "VALUES ($1, 1, 'rank-0', $2, 0, 0, 1, 0, $3)", run_id, batch_id, late)
    (listed,) = [c for launch in await slurm_nodes.listing(db, run_id)
                 for c in launch["collectors"]]
    assert (listed["undelivered"], listed["undelivered_by_member"], listed["delivered_late"]) == (
        6, {"rank-0": 2, "rank-1": 3}, 2)
