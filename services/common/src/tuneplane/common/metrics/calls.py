"""A gRPC server interceptor that times each call and says how it was answered: OK, the code
it was aborted with, UNKNOWN for an exception its handler let out, CANCELLED when the caller
went away. What it saw goes to the service's ``observe`` (its metrics module), so the names
and labels stay the service's.

Listed first among a server's interceptors, it sees every call the others refuse too (their
answer is a handler that aborts). A call gRPC itself turns away before any interceptor (past
``maximum_concurrent_rpcs``), or one to a method no service has, is not seen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import grpc

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Behavior: TypeAlias = Callable[[Any, "grpc.aio.ServicerContext[Any, Any]"], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Answered:
    """One call, answered."""

    service: str  # its service's short name: "TelemetryIngest"
    method: str  # "PushBatch"
    code: str  # the status code's name: "OK", "RESOURCE_EXHAUSTED", ...
    seconds: float  # from the call's arrival (before the other interceptors) to its answer


Observe = Callable[[Answered], None]


def names(full: str) -> tuple[str, str]:
    """``/tuneplane.telemetry.v1.TelemetryIngest/PushBatch`` → its service and method."""
    service, _, method = full.lstrip("/").rpartition("/")
    return service.rsplit(".", 1)[-1], method


def code_of(context: grpc.aio.ServicerContext[Any, Any], error: BaseException | None) -> str:
    """How the call was answered: the code set on it (abort sets one), else by its end."""
    code = context.code()  # None until a handler or abort sets one
    if isinstance(code, grpc.StatusCode):
        return code.name
    if error is None:
        return "OK"
    return "CANCELLED" if isinstance(error, asyncio.CancelledError) else "UNKNOWN"


class CallMetrics(grpc.aio.ServerInterceptor):
    def __init__(self, observe: Observe, clock: Callable[[], float] = time.perf_counter,
                 ) -> None:
        self._observe = observe
        self._clock = clock

    async def intercept_service(
            self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
            handler_call_details: grpc.HandlerCallDetails) -> Handler | None:
        started = self._clock()
        handler = await continuation(handler_call_details)
        if handler is None:
            return None  # no such method: gRPC answers UNIMPLEMENTED, with no label made up
        service, method = names(handler_call_details.method)
        if handler.unary_unary is not None:
            make, behavior = grpc.unary_unary_rpc_method_handler, handler.unary_unary
        elif handler.stream_unary is not None:
            make, behavior = grpc.stream_unary_rpc_method_handler, handler.stream_unary
        else:
            return handler  # answers streamed back: none of the services has one
        return make(self._timed(cast(Behavior, behavior), service, method, started),
                    request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)

    def _timed(self, behavior: Behavior, service: str, method: str,
               started: float) -> Behavior:
        async def timed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            error: BaseException | None = None
            try:
                return await behavior(request, context)
            except BaseException as exc:
                error = exc
                raise
            finally:
                self._observe(Answered(service, method, code_of(context, error),
                                       self._clock() - started))
        return timed
