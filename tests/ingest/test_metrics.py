"""Ingest's metrics count what its answers say: batches and points made durable, a resend
as a duplicate, and each PushBatch that made nothing durable by its reason (the status code,
or CONFLICT), whether the gate refused it before its message was read or the service after;
every call by method and code. Ingest's service in this process, on a sink that keeps what
it is handed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import grpc
import pytest
from prometheus_client import REGISTRY

from tests.support.calls import auth, push
from tests.support.truth import batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane.standing import AttemptFacts, NodeFacts
from tuneplane.ingest.gate import Admission
from tuneplane.ingest.inflight import CallsInFlight
from tuneplane.ingest.server import TelemetryIngest, create_server
from tuneplane.ingest.token_facts import Standing
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

SECRET = "metrics-test-secret-of-enough-length"
MEMBER = MemberKey("run-metrics", 1, "rank-0")


class KeptSink:
    async def put(self, key: BatchKey, payload: bytes, *, late: bool = False) -> None:
        """Durable at once."""


class NoFacts:
    async def attempt(self, key: tuple[str, int]) -> AttemptFacts | None:
        return None

    async def node(self, node_id: str) -> NodeFacts | None:
        return None


@pytest.fixture
async def stub() -> AsyncIterator[pb_grpc.TelemetryIngestAsyncStub]:
    admission = Admission(TokenSigner(SECRET), Standing(NoFacts(), drain_seconds=30),
                          CallsInFlight(8))
    server = create_server(TelemetryIngest(admission, KeptSink()), max_concurrent_rpcs=16)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield pb_grpc.TelemetryIngestStub(channel)
    finally:
        await server.stop(None)


def figures() -> dict[str, float]:
    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0
    push_batch = {"service": "TelemetryIngest", "method": "PushBatch"}
    return {
        "batches": value("tuneplane_ingest_accepted_batches_total", delivery="live"),
        "points": value("tuneplane_ingest_accepted_points_total"),
        "duplicates": value("tuneplane_ingest_duplicate_batches_total"),
        "ok": value("tuneplane_ingest_rpcs_total", **push_batch, code="OK"),
        "timed": value("tuneplane_ingest_rpc_duration_seconds_count", **push_batch),
        **{reason: value("tuneplane_ingest_refused_batches_total", reason=reason)
           for reason in ("UNAUTHENTICATED", "INVALID_ARGUMENT", "PERMISSION_DENIED",
                          "CONFLICT")}}


async def refused(stub: pb_grpc.TelemetryIngestAsyncStub, payload: bytes,
                  metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.PushBatch(pb.PushBatchRequest(batch=payload), metadata=metadata, timeout=30)
    code: grpc.StatusCode = caught.value.code()
    return code


async def test_answers_are_counted_by_what_they_say(
        stub: pb_grpc.TelemetryIngestAsyncStub) -> None:
    token = TokenSigner(SECRET).issue_workload(MEMBER, now=time.time(), ttl_seconds=600)
    before = figures()
    first = batch(MEMBER, sequence=1, points=30)
    assert (await push(stub, first, token)).outcome == pb.PushBatchReply.OUTCOME_DURABLE
    assert (await push(stub, first, token)).outcome == pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE
    changed = batch(MEMBER, sequence=1, points=20)
    assert (await push(stub, changed, token)).outcome == pb.PushBatchReply.OUTCOME_REJECTED
    assert await refused(stub, first.SerializeToString(), ()) == \
        grpc.StatusCode.UNAUTHENTICATED
    assert await refused(stub, b"\xff not a batch", auth(token)) == \
        grpc.StatusCode.INVALID_ARGUMENT
    other = batch(MemberKey(MEMBER.run_id, 1, "rank-1"), sequence=1)
    assert await refused(stub, other.SerializeToString(), auth(token)) == \
        grpc.StatusCode.PERMISSION_DENIED
    after = figures()
    assert {k: after[k] - before[k] for k in after} == {
        "batches": 1, "points": 30, "duplicates": 1, "ok": 3, "timed": 6,
        "UNAUTHENTICATED": 1, "INVALID_ARGUMENT": 1, "PERMISSION_DENIED": 1, "CONFLICT": 1}
