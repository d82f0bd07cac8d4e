"""Fixtures of the ingest tests: a TLS client of the session's ingest and a token signer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from tests.support.environment import Endpoints
from tests.support.processes import Process
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc


@pytest.fixture
async def stub(ingest: Process, tls_dir: Path,
               ) -> AsyncIterator[pb_grpc.TelemetryIngestAsyncStub]:
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{ingest.port}", credentials,
                                       options=[("grpc.max_send_message_length", 64 << 20)],
                                       ) as channel:
        yield pb_grpc.TelemetryIngestStub(channel)


@pytest.fixture
def signer(initialised: Endpoints) -> TokenSigner:
    return TokenSigner(initialised.jwt_secret)
