"""Fixtures of the Slurm backend's tests: control's Slurm side on real PostgreSQL, with a
Slurm that answers what each test tells it and records what control asked of it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import asyncpg
import pytest

from tests.support.environment import Endpoints
from tuneplane.common.tokens import TokenSigner
from tuneplane.control.server import Policy
from tuneplane.control.slurm.backend import Reach, SlurmBackend
from tuneplane.control.slurm.scheduler import Shown, Slurm, SlurmError
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.control.slurm.users import JobUsers
from tuneplane.controlplane.slurm_launches import JobSeen
from tuneplane.node.v1 import node_pb2 as pb


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


@pytest.fixture
async def pool(initialised: Endpoints) -> AsyncIterator[asyncpg.Pool]:
    created = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=4)
    yield created
    await created.close()


@pytest.fixture
def fake_slurm() -> FakeSlurm:
    return FakeSlurm()


@pytest.fixture
def service(initialised: Endpoints, pool: asyncpg.Pool, fake_slurm: FakeSlurm
            ) -> SlurmJobControl:
    policy = Policy(pb.CollectorConfig(telemetry_target="localhost:8444"))
    return SlurmJobControl(TokenSigner(initialised.jwt_secret), pool, policy, fake_slurm)


@pytest.fixture
def backend(pool: asyncpg.Pool, fake_slurm: FakeSlurm, service: SlurmJobControl,
            tmp_path: Path) -> SlurmBackend:
    reach = Reach(control="localhost:8443", server_name="", control_ca_pem="",
                  artifact=tmp_path / ("0" * 64), collector_environment={},
                  users=JobUsers(["nobody"]))  # uid 65534
    return SlurmBackend(pool, fake_slurm, service, reach)
