"""The call interceptor says how each call was answered: OK, the code it was aborted with
(by the service, or by an interceptor after it that refuses on metadata), UNKNOWN for an
exception the handler let out; a method no service has is not counted (no label is made up
from what a caller sends). A real gRPC server
in this process, on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest

from tuneplane.common.metrics.calls import Answered, CallMetrics, names
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc


class Answers(pb_grpc.TelemetryIngestServicer):
    """Answers by the batch's bytes: ``bad`` aborts INVALID_ARGUMENT, ``boom`` raises."""

    async def PushBatch(self, request: pb.PushBatchRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> pb.PushBatchReply:
        if request.batch == b"bad":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "not a batch")
        if request.batch == b"boom":
            raise RuntimeError("a bug")
        return pb.PushBatchReply()

    async def GetCheckpoints(self, request: pb.GetCheckpointsRequest,
                             context: grpc.aio.ServicerContext[Any, Any],
                             ) -> pb.GetCheckpointsReply:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not here")
        raise AssertionError("unreachable")


class RefuseUnsigned(grpc.aio.ServerInterceptor):
    """As ingest's gate: a call without a token is answered by a handler that aborts."""

    async def intercept_service(
            self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
            handler_call_details: grpc.HandlerCallDetails) -> Any:
        if not any(k == "authorization" for k, _ in handler_call_details.invocation_metadata):
            async def refuse(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "no token")
            return grpc.stream_unary_rpc_method_handler(refuse)
        return await continuation(handler_call_details)


@pytest.fixture
async def answered() -> AsyncIterator[tuple[grpc.aio.Channel, list[Answered]]]:
    seen: list[Answered] = []
    ticks = iter(range(0, 1000, 2))  # each call takes 2 "seconds": read twice per call
    server = grpc.aio.server(interceptors=[CallMetrics(seen.append, clock=lambda: next(ticks)),
                                           RefuseUnsigned()])
    pb_grpc.add_TelemetryIngestServicer_to_server(Answers(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel, seen
    finally:
        await server.stop(None)


SIGNED = (("authorization", "Bearer t"),)


async def observed(seen: list[Answered], count: int) -> list[Answered]:
    """``seen`` once it holds ``count`` answers: a call is observed as its handler ends,
    which can come just after its caller has the answer (the server and the client share
    this loop)."""
    async with asyncio.timeout(10):
        while len(seen) < count:
            await asyncio.sleep(0.005)
    return list(seen)


async def test_each_call_is_seen_with_the_code_it_was_answered_with(
        answered: tuple[grpc.aio.Channel, list[Answered]]) -> None:
    channel, seen = answered
    stub: pb_grpc.TelemetryIngestAsyncStub = pb_grpc.TelemetryIngestStub(channel)
    await stub.PushBatch(pb.PushBatchRequest(batch=b"ok"), metadata=SIGNED)
    for sent, metadata in ((b"bad", SIGNED), (b"boom", SIGNED), (b"ok", ())):
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.PushBatch(pb.PushBatchRequest(batch=sent), metadata=metadata)
    assert [(a.service, a.method, a.code) for a in await observed(seen, 4)] == [
        ("TelemetryIngest", "PushBatch", "OK"),
        ("TelemetryIngest", "PushBatch", "INVALID_ARGUMENT"),
        ("TelemetryIngest", "PushBatch", "UNKNOWN"),
        ("TelemetryIngest", "PushBatch", "UNAUTHENTICATED")]
    assert {a.seconds for a in seen} == {2}


async def test_a_method_no_service_has_is_not_counted(
        answered: tuple[grpc.aio.Channel, list[Answered]]) -> None:
    channel, seen = answered
    stub: pb_grpc.TelemetryIngestAsyncStub = pb_grpc.TelemetryIngestStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetCheckpoints(pb.GetCheckpointsRequest(), metadata=SIGNED)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED  # the servicer's answer
    assert [a.code for a in await observed(seen, 1)] == ["UNIMPLEMENTED"]
    unknown: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
        "/no.such.Service/Call")
    with pytest.raises(grpc.aio.AioRpcError) as nowhere:
        await unknown(b"", metadata=SIGNED)
    assert nowhere.value.code() == grpc.StatusCode.UNIMPLEMENTED
    # A known call after it: once its answer is seen, the unknown method's would have been.
    await stub.PushBatch(pb.PushBatchRequest(batch=b"ok"), metadata=SIGNED)
    assert [a.code for a in await observed(seen, 2)] == ["UNIMPLEMENTED", "OK"]


def test_names_are_the_short_service_and_the_method() -> None:
    assert names("/tuneplane.telemetry.v1.TelemetryIngest/PushBatch") == (
        "TelemetryIngest", "PushBatch")
    assert names("/Bare/Call") == ("Bare", "Call")
