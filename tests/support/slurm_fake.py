"""A Slurm for the unit tests of control's Slurm side (on real PostgreSQL): it answers what
each test tells it and records what control asked of it. The end-to-end tests run the real
cluster (``tests.support.slurm``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import asyncpg

from tests.support.control import new_run
from tuneplane.control.jobs import Shown
from tuneplane.control.slurm.scheduler import Slurm, SlurmError
from tuneplane.controlplane import slurm_launches
from tuneplane.controlplane.job_follow import JobSeen
from tuneplane.controlplane.slurm_launches import JobOptions


class FakeSlurm(Slurm):
    """Slurm as a test sets it up: ``shown`` is what squeue shows (by job id); every
    submission, release and squeue is recorded. Jobs it submits are user ``uid``'s."""

    def __init__(self, uid: int = 65534) -> None:
        super().__init__(environ={})
        self.uid = uid
        self.shown: dict[str, Shown] = {}
        self.submitted: list[tuple[str, list[str], dict[str, str]]] = []
        self.released: list[str] = []
        self.cancelled: list[str] = []
        self.asked = 0
        self.refusing = ""  # sbatch's error, when it refuses every submission
        self.asking = asyncio.Event()   # set while squeue is asked
        self.answer = asyncio.Event()   # squeue answers once set
        self.answer.set()

    async def submit(self, script: str, options: Sequence[str],
                     environment: Mapping[str, str]) -> str:
        if self.refusing:
            raise SlurmError(self.refusing)
        job_id = str(900000 + len(self.submitted))
        self.submitted.append((script, list(options), dict(environment)))
        name = next(o.split("=", 1)[1] for o in options if o.startswith("--job-name="))
        self.shown[job_id] = Shown(name, self.uid, JobSeen("PENDING", 0, "JobHeldUser"))
        return job_id

    async def jobs(self) -> dict[str, Shown]:
        self.asked += 1
        self.asking.set()
        await self.answer.wait()
        return dict(self.shown)

    async def release(self, job_id: str) -> None:
        self.released.append(job_id)

    async def cancel(self, job_id: str) -> None:
        self.cancelled.append(job_id)


async def queue(db: asyncpg.Connection, run_id: str, environment: dict[str, str] | None = None,
                nodes: int = 1) -> int:
    await new_run(db, run_id)
    queued = await slurm_launches.create(
        db, run_id, nodes=nodes, tasks_per_node=2, command=["python3", "train.py"],
        environment=environment or {}, spool_root="/tmp/spool", options=JobOptions())
    return queued.launch_id


async def launch_row(db: asyncpg.Connection, launch_id: int) -> asyncpg.Record:
    row = await db.fetchrow("SELECT l.state, l.job_id, l.detail, a.state AS attempt_state "
                            "FROM slurm_launches l JOIN attempts a ON a.run_id = l.run_id "
                            "AND a.attempt = l.attempt WHERE l.launch_id = $1", launch_id)
    assert row is not None
    return row
