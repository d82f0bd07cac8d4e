"""Kafka stopped under a running ingest: UNAVAILABLE, never a false ACK; then durable again."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import grpc
import pytest

from tests.support.calls import push
from tests.support.environment import ROOT
from tests.support.processes import Process
from tests.support.truth import batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey


def services(*args: str) -> None:
    done = subprocess.run([str(ROOT / "scripts" / "services"), *args], capture_output=True,
                          text=True, check=False, timeout=180)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def kafka_stopped(ingest: Process) -> Iterator[None]:
    services("down", "kafka")
    try:
        yield
    finally:
        services("up", "kafka")


async def test_kafka_down_answers_unavailable_and_the_same_batch_is_durable_after(
        kafka_stopped: None, stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner,
        run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=600)
    sent = batch(member)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await push(stub, sent, token)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "Kafka unavailable" in (caught.value.details() or "")
    services("up", "kafka")
    deadline = time.monotonic() + 60
    while True:
        try:
            reply = await push(stub, sent, token)
            break
        except grpc.aio.AioRpcError as exc:
            assert exc.code() == grpc.StatusCode.UNAVAILABLE
            assert time.monotonic() < deadline, "ingest did not recover after Kafka came back"
    assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
