"""Workload tokens end with their attempt, on the real ingest and PostgreSQL: refused once the
attempt ended beyond the drain window (PERMISSION_DENIED naming the attempt and its state),
accepted within it, so a collector's drain after the end still delivers; a refused
collector keeps its batches spooled. Runs started by hand (no attempts row) keep working."""

from __future__ import annotations

import time
from pathlib import Path

import asyncpg
import grpc
import pytest

from tests.support.calls import push
from tests.support.collector_binary import spool_status
from tests.support.control import new_run
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, refused_then_stopped, run_collector
from tests.support.truth import batch, write_jsonl
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import runs
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey


async def ended(db: asyncpg.Connection, run_id: str, state: str, seconds_ago: int) -> MemberKey:
    """A run whose attempt 1 ended as ``state`` that many seconds ago."""
    await new_run(db, run_id)
    assert await runs.start_attempt(db, run_id) == 1
    assert await runs.end_attempt(db, run_id, 1, state)
    await db.execute("UPDATE attempts SET ended_at = now() - make_interval(secs => $2) "
                     "WHERE run_id = $1", run_id, float(seconds_ago))
    return MemberKey(run_id, 1, "rank-0")


@pytest.mark.parametrize("state", ["finished", "failed"])
async def test_a_token_of_an_attempt_ended_beyond_the_drain_window_is_refused(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, db: asyncpg.Connection,
        run_id: str, state: str) -> None:
    member = await ended(db, run_id, state, seconds_ago=600)
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=600)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await push(stub, batch(member), token)
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert f"run {run_id!r} attempt 1 ended ({state})" in (caught.value.details() or "")
    assert "beyond the drain window of 60 s" in (caught.value.details() or "")


async def test_a_token_of_an_attempt_ended_within_the_drain_window_is_accepted(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, db: asyncpg.Connection,
        run_id: str) -> None:
    member = await ended(db, run_id, "finished", seconds_ago=20)
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=600)
    reply = await push(stub, batch(member), token)
    assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE


async def test_a_token_of_a_run_started_by_hand_keeps_working(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, db: asyncpg.Connection,
        run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")  # `tuneplane-admin token`: no run, no attempt
    assert await db.fetchval("SELECT count(*) FROM attempts WHERE run_id = $1", run_id) == 0
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=600)
    assert (await push(stub, batch(member), token)).outcome == \
        pb.PushBatchReply.OUTCOME_DURABLE


async def test_the_collectors_drain_after_its_attempt_ended_delivers_everything(
        initialised: Endpoints, ingest: Process, tls_dir: Path, db: asyncpg.Connection,
        tmp_path: Path, run_id: str) -> None:
    member = await ended(db, run_id, "finished", seconds_ago=5)
    write_jsonl(tmp_path / "metrics.jsonl", range(3000), ["loss"])
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector(collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                                        {"train": tmp_path / "metrics.jsonl"},
                                        "--max-batch-points", "500"))
    assert done.returncode == 0, done.stderr
    assert "3000 points sent" in done.stderr


async def test_a_refused_collector_keeps_its_batches_spooled(
        initialised: Endpoints, ingest: Process, tls_dir: Path, db: asyncpg.Connection,
        tmp_path: Path, run_id: str) -> None:
    member = await ended(db, run_id, "failed", seconds_ago=600)
    write_jsonl(tmp_path / "metrics.jsonl", range(1000), ["loss"])
    token = workload_token(initialised, member, tmp_path / "token")
    log = tmp_path / "collector.log"
    args = collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                          {"train": tmp_path / "metrics.jsonl"}, "--max-batch-points", "500")
    assert refused_then_stopped(args, log) == 3  # batches left undelivered, none dropped
    held = spool_status(tmp_path / "spool")
    pending = held["pending"]
    assert isinstance(pending, dict)
    assert pending["points"] == 1000
    assert held["quarantined"] == []
    assert "ended (failed)" in log.read_text()
