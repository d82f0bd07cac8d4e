"""A deliver-only credential on the real ingest, as a hostile holder would try it: it admits
exactly the batches of its tree, byte for byte, after the attempt ended; any other batch
(altered bytes, a new sequence, another spool epoch or member, a proof of another leaf, no
proof) is PERMISSION_DENIED, and the batches it admits reach Kafka marked late."""

from __future__ import annotations

import time
from typing import TypeAlias

import asyncpg
import grpc
import pytest
from aiokafka import AIOKafkaConsumer

from tests.ingest.test_attempt_end import ended
from tests.support.calls import auth
from tests.support.environment import Endpoints
from tests.support.truth import batch
from tuneplane.common.kafka import topics
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import delivery
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

Stub: TypeAlias = "pb_grpc.TelemetryIngestAsyncStub"


class Tree:
    """A spool's sealed batches (epoch e1, sequences 1..n) and its delivery token."""

    def __init__(self, signer: TokenSigner, member: MemberKey, n: int) -> None:
        self.member = member
        self.payloads = [batch(member, sequence=s).SerializeToString() for s in range(1, n + 1)]
        self.leaves = [delivery.leaf(s, p) for s, p in enumerate(self.payloads, start=1)]
        self.token = signer.issue_delivery(member, "e1", delivery.root(self.leaves), n,
                                           now=time.time(), ttl_seconds=600)

    def proof(self, index: int) -> str:
        return delivery.Proof(index, delivery.audit_path(self.leaves, index)).render()


async def pushed(stub: Stub, payload: bytes, token: str,
                 proof: str | None) -> pb.PushBatchReply:
    metadata = auth(token) + (((delivery.PROOF_HEADER, proof),) if proof is not None else ())
    reply: pb.PushBatchReply = await stub.PushBatch(pb.PushBatchRequest(batch=payload),
                                                    metadata=metadata, timeout=30)
    return reply


async def denied(stub: Stub, payload: bytes, token: str, proof: str | None) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await pushed(stub, payload, token, proof)
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED, caught.value.details()
    return caught.value.details() or ""


async def late_headers(bootstrap: str, key: BatchKey) -> list[bool]:
    """For each record of ``key`` on the batches topic: whether it is marked late."""
    parts = await topics.topic_partitions(bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        found: list[bool] = []
        async def behind() -> bool:
            return any([await consumer.position(p) < ends[p] for p in parts])
        while await behind():
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                found += [dict(r.headers).get(topics.LATE_HEADER) == b"1"
                          for r in records if r.key == key.kafka_key()]
        return found
    finally:
        await consumer.stop()


async def test_a_delivery_token_admits_its_tree_after_the_attempt_ended_and_nothing_else(
        initialised: Endpoints, stub: Stub, signer: TokenSigner, db: asyncpg.Connection,
        run_id: str) -> None:
    member = await ended(db, run_id, "finished", seconds_ago=600)
    tree = Tree(signer, member, 5)
    altered = batch(member, sequence=2, points=11).SerializeToString()
    assert "not one of the 5 sealed batches" in await denied(stub, altered, tree.token,
                                                              tree.proof(1))
    new = batch(member, sequence=6).SerializeToString()
    assert "not one of the 5" in await denied(stub, new, tree.token, tree.proof(4))
    assert "not one of the 5" in await denied(stub, tree.payloads[0], tree.token,
                                              tree.proof(1))  # another leaf's proof
    assert "carries no tuneplane-delivery-proof" in await denied(stub, tree.payloads[0],
                                                                 tree.token, None)
    assert "INDEX:HEX" in await denied(stub, tree.payloads[0], tree.token, "garbage")
    other_epoch = pb.Batch()
    other_epoch.ParseFromString(tree.payloads[0])
    other_epoch.identity.spool_epoch = "e2"
    assert "covers 'e1' only" in await denied(stub, other_epoch.SerializeToString(),
                                              tree.token, tree.proof(0))
    stranger = batch(MemberKey(run_id, 1, "rank-1")).SerializeToString()
    assert "not for the delivery token's member" in await denied(stub, stranger, tree.token,
                                                                 tree.proof(0))
    for index, payload in enumerate(tree.payloads):
        reply = await pushed(stub, payload, tree.token, tree.proof(index))
        assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
    again = await pushed(stub, tree.payloads[0], tree.token, tree.proof(0))
    assert again.outcome == pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE
    first = BatchKey.from_proto(batch(member, sequence=1).identity)
    assert await late_headers(initialised.kafka_bootstrap, first) == [True]


async def test_a_delivery_token_reads_its_members_checkpoints_and_no_one_elses(
        stub: Stub, signer: TokenSigner, db: asyncpg.Connection, run_id: str) -> None:
    member = await ended(db, run_id, "finished", seconds_ago=600)
    tree = Tree(signer, member, 1)
    reply = await stub.GetCheckpoints(pb.GetCheckpointsRequest(), metadata=auth(tree.token),
                                      timeout=30)
    assert list(reply.positions) == []


async def test_a_forged_delivery_token_is_unauthenticated(
        stub: Stub, db: asyncpg.Connection, run_id: str) -> None:
    member = await ended(db, run_id, "finished", seconds_ago=600)
    forged = Tree(TokenSigner("another-secret-of-length"), member, 1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await pushed(stub, forged.payloads[0], forged.token, forged.proof(0))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "delivery token refused" in (caught.value.details() or "")
