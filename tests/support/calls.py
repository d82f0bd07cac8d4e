"""gRPC calls as clients make them: bearer metadata, a batch pushed to ingest."""

from __future__ import annotations

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def push(stub: pb_grpc.TelemetryIngestAsyncStub, b: pb.Batch,
               token: str) -> pb.PushBatchReply:
    reply: pb.PushBatchReply = await stub.PushBatch(
        pb.PushBatchRequest(batch=b.SerializeToString()), metadata=auth(token), timeout=30)
    return reply
