"""PostgreSQL away under ingest: workload tokens are decided on the facts last seen, or
accepted when none were (fail open, said in the log), so no telemetry is refused or lost for
it; once PostgreSQL is back, tokens that no longer stand are refused again, by the same
process. Also: ingest starts without PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import grpc
import pytest

from tests.faults.fleet import services
from tests.support.calls import push
from tests.support.control import new_run
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, start_ingest
from tests.support.truth import batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import runs
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey


@pytest.fixture
def own_ingest(initialised: Endpoints, tls_dir: Path, tmp_path: Path) -> Iterator[Process]:
    """An ingest of its own: nothing it decided before is kept."""
    process = start_ingest(initialised, tls_dir, free_port(), tmp_path / "ingest.log")
    yield process
    process.stop()


def stub_of(process: Process, tls_dir: Path) -> grpc.aio.Channel:
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    return grpc.aio.secure_channel(f"localhost:{process.port}", credentials)


async def ended_long_ago(database_url: str, run_id: str) -> MemberKey:
    db = await asyncpg.connect(database_url)
    try:
        await new_run(db, run_id)
        assert await runs.start_attempt(db, run_id) == 1
        assert await runs.end_attempt(db, run_id, 1, "finished")
        await db.execute("UPDATE attempts SET ended_at = now() - interval '10 minutes' "
                         "WHERE run_id = $1", run_id)
    finally:
        await db.close()
    return MemberKey(run_id, 1, "rank-0")


async def test_with_postgresql_down_ingest_fails_open_and_refuses_again_once_it_is_back(
        initialised: Endpoints, own_ingest: Process, tls_dir: Path, run_id: str) -> None:
    signer = TokenSigner(initialised.jwt_secret)
    ended = await ended_long_ago(initialised.database_url, run_id)
    by_hand = MemberKey(f"{run_id}-by-hand", 1, "rank-0")
    ended_token = signer.issue_workload(ended, now=time.time(), ttl_seconds=600)
    async with stub_of(own_ingest, tls_dir) as channel:
        stub = pb_grpc.TelemetryIngestStub(channel)
        services("kill", "postgres")
        try:
            for member, token in ((by_hand, signer.issue_workload(by_hand, now=time.time(),
                                                                  ttl_seconds=600)),
                                  (ended, ended_token)):
                reply = await push(stub, batch(member), token)
                assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
        finally:
            services("up", "postgres")
        assert "token standing unknown" in own_ingest.tail()  # the outage took effect
        deadline = time.monotonic() + 60
        while True:  # the failed lookup is retried after the cache period
            try:
                await push(stub, batch(ended, sequence=2), ended_token)
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.PERMISSION_DENIED, exc.details()
                assert "attempt 1 ended (finished)" in (exc.details() or "")
                break
            assert time.monotonic() < deadline, "ingest never refused the ended attempt again"
            time.sleep(0.5)
    assert own_ingest.proc is not None
    assert own_ingest.proc.poll() is None  # the same process throughout
    assert "token standing lookups answer again" in own_ingest.tail()


async def test_ingest_starts_and_serves_without_postgresql(
        initialised: Endpoints, tls_dir: Path, tmp_path: Path, run_id: str) -> None:
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/tuneplane"
    process = start_ingest(initialised, tls_dir, free_port(), tmp_path / "ingest.log",
                           env={"TUNEPLANE_DATABASE_URL": nowhere})
    try:
        assert "PostgreSQL unreachable at start" in process.tail()
        member = MemberKey(run_id, 1, "rank-0")
        token = TokenSigner(initialised.jwt_secret).issue_workload(member, now=time.time(),
                                                                   ttl_seconds=600)
        async with stub_of(process, tls_dir) as channel:
            reply = await push(pb_grpc.TelemetryIngestStub(channel), batch(member), token)
        assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
        assert "token standing unknown" in process.tail()
    finally:
        process.stop()
