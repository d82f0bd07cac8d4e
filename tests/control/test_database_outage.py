"""PostgreSQL killed under Node control: calls answer UNAVAILABLE (the agent backs off),
never an internal error, and control serves again once the database is back, without a
restart."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import grpc
import pytest

from tests.faults.fleet import services
from tests.support.calls import auth
from tests.support.control import enroll
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, launch_env, start_control
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc


@pytest.fixture
def own_control(initialised: Endpoints, tls_dir: Path, tmp_path: Path) -> Iterator[Process]:
    process = start_control(tls_dir, free_port(), tmp_path / "control.log",
                            launch_env(8444, tmp_path / "spool", tmp_path / ("0" * 64)))
    yield process
    process.stop()


async def test_a_database_outage_is_unavailable_and_control_recovers(
        initialised: Endpoints, own_control: Process, tls_dir: Path) -> None:
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{own_control.port}", credentials) as ch:
        stub = pb_grpc.NodeControlStub(ch)
        db = await asyncpg.connect(initialised.database_url)
        node = await enroll(stub, db, f"outage-{time.time_ns()}")
        await db.close()
        await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token), timeout=10)
        services("kill", "postgres")
        try:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                     timeout=30)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE, caught.value.details()
            assert "control database unavailable" in (caught.value.details() or "")
        finally:
            services("up", "postgres")
        deadline = time.monotonic() + 60
        while True:
            try:
                await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                     timeout=10)
                break
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc.details()
                assert time.monotonic() < deadline, "control never recovered"
                time.sleep(0.5)
        assert own_control.proc is not None
        assert own_control.proc.poll() is None  # the same process, never restarted
