"""Fixtures of the Node control tests: the service on real PostgreSQL, a client, nodes."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import grpc
import pytest

from tests.support import Endpoints, Process, free_port, launch_env, start_control
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import nodes, runs
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc

WORKLOAD_TTL = 60


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


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def enrollment_token(db: asyncpg.Connection, name: str,
                           ttl: dt.timedelta = dt.timedelta(minutes=5)) -> str:
    return await nodes.new_enrollment_token(db, name, created_by="test",
                                            now=dt.datetime.now(dt.UTC), ttl=ttl)


async def enroll(stub: pb_grpc.NodeControlAsyncStub, db: asyncpg.Connection,
                 name: str) -> pb.EnrollReply:
    reply: pb.EnrollReply = await stub.Enroll(pb.EnrollRequest(
        enrollment_token=await enrollment_token(db, name), hostname="test-host"), timeout=10)
    return reply


ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"},
    {"id": "eval", "kind": "jsonl", "path": "eval.jsonl", "owner": "rank-1"}]}


async def new_run(db: asyncpg.Connection, run_id: str) -> str:
    return await runs.create_run(db, json.loads(json.dumps(ARTIFACT)), created_by="test",
                                 now=dt.datetime.now(dt.UTC), run_id=run_id)
