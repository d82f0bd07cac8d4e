"""The ingest service on real Kafka: auth, bounds and durability of its replies."""

from __future__ import annotations

import time

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.support.calls import auth, push
from tests.support.environment import Endpoints
from tests.support.truth import batch
from tuneplane.common.kafka import topics
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.ingest.sink import partition_for
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES, MAX_BATCH_POINTS


async def expect_error(stub: pb_grpc.TelemetryIngestAsyncStub, b: pb.Batch, token: str | None,
                       code: grpc.StatusCode, words: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.PushBatch(pb.PushBatchRequest(batch=b.SerializeToString()),
                             metadata=auth(token) if token is not None else None, timeout=30)
    assert caught.value.code() == code
    assert words in (caught.value.details() or "")


async def test_durable_reply_means_kafka_holds_the_batch_under_its_identity(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, initialised: Endpoints,
        run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    key = BatchKey(member, "e1", 1)
    consumer = AIOKafkaConsumer(bootstrap_servers=initialised.kafka_bootstrap,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        producer = AIOKafkaProducer(bootstrap_servers=initialised.kafka_bootstrap)
        await producer.start()
        partitions = await producer.partitions_for(topics.BATCHES)
        await producer.stop()
        assert len(partitions) >= 2
        where = TopicPartition(topics.BATCHES, partition_for(key, len(partitions)))
        start = (await consumer.end_offsets([where]))[where]
        sent = batch(member)
        reply = await push(stub, sent, signer.issue_workload(member, now=time.time(),
                                                             ttl_seconds=60))
        assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
        assert reply.points == 10
        consumer.assign([where])
        consumer.seek(where, start)
        records = await consumer.getmany(where, timeout_ms=5000)
        stored = [r for r in records.get(where, []) if r.key == key.kafka_key()]
        assert [r.value for r in stored] == [sent.SerializeToString()]
        again = await push(stub, sent, signer.issue_workload(member, now=time.time(),
                                                             ttl_seconds=60))
        assert again.outcome == pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE
    finally:
        await consumer.stop()


async def test_identity_reused_with_other_content_is_rejected(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=60)
    assert (await push(stub, batch(member, points=10), token)).outcome == \
        pb.PushBatchReply.OUTCOME_DURABLE
    reply = await push(stub, batch(member, points=12), token)
    assert reply.outcome == pb.PushBatchReply.OUTCOME_REJECTED
    assert "already made durable with different content" in reply.reason


async def test_missing_token_is_unauthenticated(stub: pb_grpc.TelemetryIngestAsyncStub,
                                                run_id: str) -> None:
    await expect_error(stub, batch(MemberKey(run_id, 1, "m")), None,
                       grpc.StatusCode.UNAUTHENTICATED, "missing workload token")


async def test_token_signed_with_another_secret_is_unauthenticated(
        stub: pb_grpc.TelemetryIngestAsyncStub, run_id: str) -> None:
    member = MemberKey(run_id, 1, "m")
    forged = TokenSigner("another-secret-of-enough-length").issue_workload(
        member, now=time.time(), ttl_seconds=60)
    await expect_error(stub, batch(member), forged, grpc.StatusCode.UNAUTHENTICATED,
                       "not a valid workload token")


async def test_garbage_token_is_unauthenticated(stub: pb_grpc.TelemetryIngestAsyncStub,
                                                run_id: str) -> None:
    await expect_error(stub, batch(MemberKey(run_id, 1, "m")), "not-a-jwt",
                       grpc.StatusCode.UNAUTHENTICATED, "malformed token")


async def test_expired_token_is_unauthenticated(stub: pb_grpc.TelemetryIngestAsyncStub,
                                                signer: TokenSigner, run_id: str) -> None:
    member = MemberKey(run_id, 1, "m")
    expired = signer.issue_workload(member, now=time.time() - 120, ttl_seconds=60)
    await expect_error(stub, batch(member), expired, grpc.StatusCode.UNAUTHENTICATED,
                       "token expired")


@pytest.mark.parametrize("kind", [TokenKind.NODE, TokenKind.USER])
async def test_node_and_user_tokens_are_not_accepted_on_the_telemetry_listener(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, run_id: str,
        kind: TokenKind) -> None:
    # Even carrying a workload binding, a token of another kind is refused.
    other = signer.issue(kind, "node-1", {"run": run_id, "attempt": 1, "member": "m"},
                         now=time.time(), ttl_seconds=60)
    await expect_error(stub, batch(MemberKey(run_id, 1, "m")), other,
                       grpc.StatusCode.UNAUTHENTICATED, "workload token refused")


@pytest.mark.parametrize("other", [
    MemberKey("another-run", 1, "m"), MemberKey("RUN", 2, "m"), MemberKey("RUN", 1, "rank-9")])
async def test_token_for_another_run_attempt_or_member_is_permission_denied(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, run_id: str,
        other: MemberKey) -> None:
    bound = MemberKey(run_id if other.run_id == "RUN" else other.run_id, other.attempt,
                      other.member)
    token = signer.issue_workload(bound, now=time.time(), ttl_seconds=60)
    await expect_error(stub, batch(MemberKey(run_id, 1, "m")), token,
                       grpc.StatusCode.PERMISSION_DENIED, "is not for the token's member")


async def test_batch_over_the_point_bound_is_invalid_argument(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, run_id: str) -> None:
    member = MemberKey(run_id, 1, "m")
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=60)
    await expect_error(stub, batch(member, points=MAX_BATCH_POINTS + 2, tags=2), token,
                       grpc.StatusCode.INVALID_ARGUMENT,
                       f"more than {MAX_BATCH_POINTS} points")


async def test_batch_over_the_byte_bound_is_invalid_argument(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, run_id: str) -> None:
    member = MemberKey(run_id, 1, "m")
    token = signer.issue_workload(member, now=time.time(), ttl_seconds=60)
    big = batch(member, points=1)
    big.chunks[0].tag = "t"
    for i in range(5000):  # many chunks of long names: bytes over the bound, points under
        big.chunks.add(source="s" * 500, tag=f"{i:0>500}", steps=[1], wall_times=[1.0],
                       values=[1.0])
    assert MAX_BATCH_BYTES < big.ByteSize() < 2 * MAX_BATCH_BYTES
    await expect_error(stub, big, token, grpc.StatusCode.INVALID_ARGUMENT,
                       f"over the {MAX_BATCH_BYTES} byte bound")


async def test_undecodable_batch_is_invalid_argument(
        stub: pb_grpc.TelemetryIngestAsyncStub, signer: TokenSigner, run_id: str) -> None:
    token = signer.issue_workload(MemberKey(run_id, 1, "m"), now=time.time(), ttl_seconds=60)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.PushBatch(pb.PushBatchRequest(batch=b"\xff\xff\xff"), metadata=auth(token))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "undecodable batch" in (caught.value.details() or "")
