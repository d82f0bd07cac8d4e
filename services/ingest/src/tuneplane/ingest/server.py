"""The TelemetryIngest gRPC service: admit the call (a valid token, its member under its
calls in flight, a token that still stands: ``gate``, which also runs before the message is
read), validate (the contract, then the attempt's series bound), make durable, then
reply. A late delivery's batch must also be one its delivery token covers (``delivered``);
it goes to Kafka marked late."""

from __future__ import annotations

import logging
from typing import TypeAlias

import asyncpg
import grpc

from tuneplane.common.db import TRANSIENT_ERRORS
from tuneplane.common.metrics.calls import CallMetrics
from tuneplane.common.tokens import DeliveryClaims, WorkloadClaims
from tuneplane.ingest import delivered, metrics
from tuneplane.ingest.checkpoints import Behind, Checkpoints
from tuneplane.ingest.gate import Admission, Gate, Refused
from tuneplane.ingest.inflight import TooManyCalls
from tuneplane.ingest.recent import RecentBatches, Seen
from tuneplane.ingest.series import SeriesBound
from tuneplane.ingest.sink import BatchSink, SinkUnavailable
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import BatchKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES
from tuneplane.telemetry.v1.validation import InvalidBatch, parse, validate

log = logging.getLogger("tuneplane.ingest")

#: gRPC refuses (RESOURCE_EXHAUSTED) a message over this; between MAX_BATCH_BYTES and it,
#: the service answers INVALID_ARGUMENT with the sizes.
MAX_RECEIVE_BYTES = 2 * MAX_BATCH_BYTES


Context: TypeAlias = "grpc.aio.ServicerContext[pb.PushBatchRequest, pb.PushBatchReply]"
AskContext: TypeAlias = (
    "grpc.aio.ServicerContext[pb.GetCheckpointsRequest, pb.GetCheckpointsReply]")


class TelemetryIngest(pb_grpc.TelemetryIngestServicer):
    def __init__(self, admission: Admission, sink: BatchSink,
                 series: SeriesBound | None = None,
                 checkpoints: Checkpoints | None = None) -> None:
        self.admission = admission
        self._sink = sink
        self._series = series  # None: no bound on an attempt's series
        self._checkpoints = checkpoints  # None: GetCheckpoints is UNIMPLEMENTED
        self._recent = RecentBatches()

    async def _claims(self, context: Context | AskContext,
                      ) -> WorkloadClaims | DeliveryClaims:
        """The call's token's claims; a refused call is aborted with its code."""
        found = await self.admission.check(context.invocation_metadata() or ())
        if isinstance(found, Refused):
            await context.abort(found.code, found.message)
        return found

    async def GetCheckpoints(self, request: pb.GetCheckpointsRequest,
                             context: AskContext) -> pb.GetCheckpointsReply:
        found = await self._claims(context)
        if self._checkpoints is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "checkpoints are not kept here")
        try:
            with self.admission.calls.held(found.member):
                return await self._checkpoints.page(found.member, request)
        except TooManyCalls as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except Behind as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except asyncpg.DataError as exc:  # a NUL in the page's (source, file), say
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a page: {exc}")
        except (*TRANSIENT_ERRORS, asyncpg.InsufficientResourcesError) as exc:
            log.warning("GetCheckpoints of %s: PostgreSQL did not answer: %r", found.member, exc)
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                "the read models cannot be asked now; ask again")
        raise AssertionError("unreachable")  # abort raises

    async def PushBatch(self, request: pb.PushBatchRequest,
                        context: Context) -> pb.PushBatchReply:
        found = await self._claims(context)
        try:
            with self.admission.calls.held(found.member):
                return await self._push(request, found, context)
        except TooManyCalls as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        raise AssertionError("unreachable")  # abort raises

    async def _push(self, request: pb.PushBatchRequest,
                    claims: WorkloadClaims | DeliveryClaims,
                    context: Context) -> pb.PushBatchReply:
        payload = request.batch
        try:
            batch = parse(payload)
        except InvalidBatch as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        key = BatchKey.from_proto(batch.identity)
        late = False
        if isinstance(claims, DeliveryClaims):
            late = True
            why = delivered.refusal(claims, key, batch.identity.spool_epoch,
                                    batch.identity.sequence, payload,
                                    delivered.proof_in(context.invocation_metadata() or ()))
            if why is not None:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, why)
        elif key.member != claims.member:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED,
                                f"batch {key} is not for the token's member {claims.member}")
        try:
            points = validate(batch, len(payload))
        except InvalidBatch as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"batch {key}: {exc}")
        digest = RecentBatches.digest(payload)
        seen = self._recent.check(key, digest)
        if seen is Seen.SAME:
            metrics.DUPLICATES.inc()
            return pb.PushBatchReply(outcome=pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE,
                                     points=points)
        if seen is Seen.CONFLICT:
            log.error("batch %s resent with different content; refused", key)
            metrics.REFUSED.labels(metrics.CONFLICT).inc()
            return pb.PushBatchReply(outcome=pb.PushBatchReply.OUTCOME_REJECTED, points=points,
                                     reason=f"batch identity {key} was already made durable "
                                            "with different content")
        if self._series is not None:
            why = await self._series.refusal(key.member, batch)
            if why is not None:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"batch {key}: {why}")
        try:
            await self._sink.put(key, payload, late=late)
        except SinkUnavailable as exc:
            log.warning("%s", exc)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "Kafka unavailable; retry the batch")
        self._recent.remember(key, digest)
        metrics.durable(points, late=late)
        log.log(logging.INFO if late else logging.DEBUG, "batch %s durable (%d points%s)", key,
                points, ", delivered late" if late else "")
        return pb.PushBatchReply(outcome=pb.PushBatchReply.OUTCOME_DURABLE, points=points)


#: Seconds gRPC holds a call the replica has not taken up yet before cancelling it: past
#: every collector's own deadline for a call (30 s), so that the collector's deadline ends
#: a call left waiting, never gRPC unseen.
WAITING_SECONDS = 60


def create_server(service: TelemetryIngest, *, max_concurrent_rpcs: int,
                  max_waiting_calls: int = 4096) -> grpc.aio.Server:
    """The service behind its gate: calls refused on their metadata are never read. Every
    call answered, refused ones too, is counted and timed (``metrics``).

    A busy replica takes up arrived calls late: gRPC holds them meanwhile, and by default
    cancels some unseen (CANCELLED) once a thousand wait, or one has waited 30 s. Held up
    to ``max_waiting_calls`` and ``WAITING_SECONDS``, every call reaches the gate, which
    answers an overload RESOURCE_EXHAUSTED (the collectors' word to back off).

    A waiting call is read before anyone has checked its token: without BDP probing its
    stream's window stays at HTTP/2's 64 KiB, so what gRPC buffers for the waiting calls
    is bounded by their number (4,096 at 64 KiB: 256 MiB), not by the 8 MiB message
    bound (with probing, one 4 MiB message a call was measured waiting whole)."""
    server = grpc.aio.server(
        maximum_concurrent_rpcs=max_concurrent_rpcs,
        interceptors=[CallMetrics(metrics.observe), Gate(service.admission)],
        options=[("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
                 ("grpc.max_send_message_length", 4 * 1024 * 1024),
                 ("grpc.server.max_pending_requests", max_waiting_calls),
                 ("grpc.server.max_pending_requests_hard_limit", max_waiting_calls),
                 ("grpc.server_max_unrequested_time_in_server", WAITING_SECONDS),
                 ("grpc.http2.bdp_probe", 0)],
    )
    pb_grpc.add_TelemetryIngestServicer_to_server(service, server)
    return server
