"""What a PushBatch call must show before its message is read: a valid workload token, a
member under its calls in flight, and a token that still stands. A late delivery shows a
valid delivery token instead: it stands after its attempt's end, since it admits only the
batches its spool had sealed (``delivered``), and reading the member's checkpoints.

``Gate`` (a gRPC server interceptor) applies ``Admission.check`` to the call's metadata and,
when it refuses, answers with a handler that never reads the request: an unauthenticated,
busy or refused call costs ingest its headers, not its message (up to 8 MiB each, times the
calls in flight). The service checks again, authoritatively, once the message is in: the
member's call is held there, since one admitted here may still lose its race for a slot.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import grpc

from tuneplane.common.gateway.listener import bearer_in
from tuneplane.common.tokens import (
    DeliveryClaims,
    TokenError,
    TokenKind,
    TokenSigner,
    WorkloadClaims,
    kind_of,
)
from tuneplane.ingest.inflight import CallsInFlight
from tuneplane.ingest.token_facts import Standing

PUSH_BATCH: Final = "/tuneplane.telemetry.v1.TelemetryIngest/PushBatch"

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


@dataclass(frozen=True, slots=True)
class Refused:
    code: grpc.StatusCode
    message: str


class Admission:
    def __init__(self, signer: TokenSigner, standing: Standing, calls: CallsInFlight,
                 clock: Callable[[], float] = time.time) -> None:
        self._signer = signer
        self._standing = standing
        self.calls = calls
        self._clock = clock

    async def check(self, metadata: Iterable[tuple[str, str | bytes]],
                    ) -> WorkloadClaims | DeliveryClaims | Refused:
        """The token's claims, or why the call is refused (and with which code)."""
        token = bearer_in(metadata)
        if token is None:
            return Refused(grpc.StatusCode.UNAUTHENTICATED,
                           "missing workload token: send 'authorization: Bearer <token>'")
        delivery = kind_of(token) == TokenKind.DELIVERY
        claims: WorkloadClaims | DeliveryClaims
        try:
            claims = (self._signer.verify_delivery(token, now=self._clock()) if delivery
                      else self._signer.verify_workload(token, now=self._clock()))
        except TokenError as exc:
            kind = "delivery" if delivery else "workload"
            return Refused(grpc.StatusCode.UNAUTHENTICATED, f"{kind} token refused: {exc}")
        busy = self.calls.busy(claims.member)
        if busy is not None:
            return Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, busy)
        # A delivery token stands after its attempt's end (it admits only sealed batches),
        # while the node it was issued through does.
        why = (await self._standing.node_refusal(claims) if isinstance(claims, DeliveryClaims)
               else await self._standing.refusal(claims))
        if why is not None:
            return Refused(grpc.StatusCode.PERMISSION_DENIED, why)
        return claims


class Gate(grpc.aio.ServerInterceptor):
    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    async def intercept_service(
            self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
            handler_call_details: grpc.HandlerCallDetails) -> Handler | None:
        if handler_call_details.method == PUSH_BATCH:
            found = await self._admission.check(handler_call_details.invocation_metadata or ())
            if isinstance(found, Refused):
                return refusing(found)
        return await continuation(handler_call_details)


def refusing(refused: Refused) -> Handler:
    """A handler answering ``refused`` without reading the request: a request-streaming
    handler is not handed the message, it would have to ask for it."""
    async def refuse(requests: AsyncIterator[Any], context: Context) -> None:
        await context.abort(refused.code, refused.message)
    return grpc.stream_unary_rpc_method_handler(refuse)
