"""Redeeming a Slurm job's ticket, called as control's gRPC server calls the service:
what a ticket holder (any process of the job's user) can and cannot get, and what it
costs control before it is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import grpc
import pytest

from tests.support.slurm_fake import FakeSlurm, launch_row, queue
from tuneplane.control.slurm.backend import SlurmBackend
from tuneplane.control.slurm.scheduler import Shown
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.controlplane import runs
from tuneplane.controlplane.slurm_launches import JobSeen
from tuneplane.node.v1 import slurm_pb2 as spb


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code


class Context:
    """What the service asks of a call's context."""

    async def abort(self, code: grpc.StatusCode, details: str) -> Any:
        raise Aborted(code, details)

    def invocation_metadata(self) -> tuple[()]:
        return ()


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


async def redeem(service: SlurmJobControl, launch_id: int, job_id: str, node: int = 0,
                 restart: int = 0) -> spb.RedeemReply:
    start = spb.JobStart(ticket=service.issue_ticket(launch_id, 600), job_id=job_id,
                         restart=restart, node_index=node, hostname="n")
    return await service.Redeem(spb.RedeemRequest(start=start), Context())  # type: ignore[arg-type]


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
