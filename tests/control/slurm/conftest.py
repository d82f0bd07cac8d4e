"""Fixtures of the Slurm backend's tests: control's Slurm side on real PostgreSQL, with a
Slurm that answers what each test tells it and records what control asked of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.support.environment import Endpoints
from tests.support.slurm_fake import FakeSlurm
from tuneplane.common.tokens import TokenSigner
from tuneplane.control.calls import Policy
from tuneplane.control.slurm.backend import Reach, SlurmBackend
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.control.slurm.users import JobUsers
from tuneplane.node.v1 import node_pb2 as pb


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
    return SlurmJobControl(TokenSigner(initialised.jwt_secret), pool, policy,
                           {"slurm": fake_slurm})


@pytest.fixture
def backend(pool: asyncpg.Pool, fake_slurm: FakeSlurm, service: SlurmJobControl,
            tmp_path: Path) -> SlurmBackend:
    reach = Reach(control="localhost:8443", server_name="", control_ca_pem="",
                  artifact=tmp_path / ("0" * 64), collector_environment={},
                  users=JobUsers(["nobody"]))  # uid 65534
    backend = SlurmBackend(pool, fake_slurm, reach)
    backend.serve(service)
    return backend
