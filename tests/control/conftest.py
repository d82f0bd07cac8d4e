"""Fixtures of the Node control tests: the service on real PostgreSQL, a client, nodes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from tests.support.control import WORKLOAD_TTL
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, launch_env, start_control
from tuneplane.common.tokens import TokenSigner
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc


@pytest.fixture(scope="session")
def control(initialised: Endpoints, tls_dir: Path, ingest: Process,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    place = tmp_path_factory.mktemp("control")
    artifact = place / ("0" * 64)  # the RPC tests launch nothing
    process = start_control(tls_dir, free_port(), place / "control.log",
                            launch_env(ingest.port, place / "spool", artifact),
                            "--workload-token-ttl", str(WORKLOAD_TTL))
    yield process
    process.stop()


@pytest.fixture
async def stub(control: Process, tls_dir: Path) -> AsyncIterator[pb_grpc.NodeControlAsyncStub]:
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{control.port}", credentials) as channel:
        yield pb_grpc.NodeControlStub(channel)


@pytest.fixture
def signer(initialised: Endpoints) -> TokenSigner:
    return TokenSigner(initialised.jwt_secret)










