"""GetCheckpoints on real Kafka and PostgreSQL: a member's own checkpoints only, the highest
of each file, answered only once the projectors hold every batch Kafka holds."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from tests.support.calls import auth, push
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, start_ingest
from tests.support.truth import batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey


def positioned(member: MemberKey, epoch: str, sequence: int, file: str,
               offset: int) -> pb.Batch:
    sealed = batch(member, sequence)
    sealed.identity.spool_epoch = epoch
    sealed.position.CopyFrom(pb.SourcePosition(source="s", file=file, offset=offset,
                                               fingerprint=f"{offset}:0000abcd",
                                               generation=1, line=offset, state="{}"))
    return sealed


async def ask(stub: pb_grpc.TelemetryIngestAsyncStub, token: str | None,
              ) -> pb.GetCheckpointsReply:
    reply: pb.GetCheckpointsReply = await stub.GetCheckpoints(
        pb.GetCheckpointsRequest(), metadata=auth(token) if token is not None else None,
        timeout=60)
    return reply


async def test_a_member_gets_its_own_highest_checkpoints_of_its_spools(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, projector: Process,
        run_id: str) -> None:
    member, other = MemberKey(run_id, 1, "rank-0"), MemberKey(run_id, 1, "rank-1")
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=60)
    assert list((await ask(stub, token)).positions) == []  # a member with no spool yet
    # Out of order within one epoch (batches in flight together), then a later epoch's.
    for sealed, whose in [(positioned(member, "e1", 2, "a", 200), member),
                          (positioned(member, "e1", 1, "a", 100), member),
                          (positioned(member, "e1", 3, "b", 50), member),
                          (positioned(member, "e2", 1, "b", 70), member),
                          (positioned(other, "e9", 1, "a", 999), other)]:
        owner = signer.issue_workload(whose, now=time.time(), ttl_seconds=60)
        assert (await push(stub, sealed, owner)).outcome == pb.PushBatchReply.OUTCOME_DURABLE
    reply = await ask(stub, token)
    assert [(p.file, p.offset) for p in reply.positions] == [("a", 200), ("b", 70)]
    assert list(reply.spool_epochs) == ["e1", "e2"]
    assert not reply.more


async def test_no_token_is_unauthenticated(stub: pb_grpc.TelemetryIngestAsyncStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await ask(stub, None)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.fixture
async def unprojected_ingest(initialised: Endpoints, tls_dir: Path, tmp_path: Path,
                             ) -> AsyncIterator[pb_grpc.TelemetryIngestAsyncStub]:
    """Ingest judging the read models by a projector group no projector is in: never
    caught up once a batch is on the member's partition."""
    port = free_port()
    process = start_ingest(initialised, tls_dir, port, tmp_path / "ingest.log",
                           env={"TUNEPLANE_PROJECTOR_GROUP": f"nobody-{time.time_ns()}",
                                "TUNEPLANE_INGEST_CHECKPOINT_WAIT": "1"})
    try:
        credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", credentials) as channel:
            yield pb_grpc.TelemetryIngestStub(channel)
    finally:
        process.stop()


async def test_read_models_behind_kafka_are_unavailable_never_an_old_answer(
        unprojected_ingest: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner,
        run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=60)
    await push(unprojected_ingest, positioned(member, "e1", 1, "a", 10), token)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await ask(unprojected_ingest, token)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "read models are behind Kafka" in (caught.value.details() or "")

