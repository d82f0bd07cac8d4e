"""Sends sealed batches to ingest in spool order; deletes a batch only after its ACK."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential_jitter,
)

from tuneplane.collector import failpoints
from tuneplane.collector.spool import SealedBatch, Spool
from tuneplane.contract.errors import BROKEN_CALL_CODES, RETRYABLE_CODES, TOKEN_CODES
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc

log = logging.getLogger("tuneplane.collector")

#: Answers after which the same batch may succeed later: back off and resend it. The token
#: ones (UNAUTHENTICATED, PERMISSION_DENIED for a token bound to another member) pass when
#: the platform rewrites the token file, so the batch waits for that instead of being set
#: aside.
TRANSIENT = RETRYABLE_CODES | BROKEN_CALL_CODES | TOKEN_CODES | {grpc.StatusCode.CANCELLED}


class TransientSendError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Target:
    """Where batches go, and the workload token they carry: read from ``token_file`` for
    every batch (the platform rewrites it when it renews the token), or asked of
    ``token_source`` (a collector holding its tokens in memory alone: a Slurm job's, which
    renews them itself). Exactly one of the two."""

    address: str
    ca_file: Path
    token_file: Path | None
    server_name: str | None = None
    token_source: Callable[[], str] | None = None

    def __post_init__(self) -> None:
        if (self.token_file is None) == (self.token_source is None):
            raise ValueError("a target's token comes from a file or from a source: one")


def open_channel(target: Target,
                 interceptors: Sequence[grpc.UnaryUnaryClientInterceptor] = ()) -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(root_certificates=target.ca_file.read_bytes())
    options = [("grpc.ssl_target_name_override", target.server_name)] if target.server_name else []
    channel = grpc.secure_channel(target.address, credentials, options=options)
    return grpc.intercept_channel(channel, *interceptors) if interceptors else channel


class Sender:
    def __init__(self, spool: Spool, target: Target, *, timeout: float = 30.0,
                 in_flight: int = 4,
                 interceptors: Sequence[grpc.UnaryUnaryClientInterceptor] = ()) -> None:
        self._spool = spool
        self._target = target
        self._timeout = timeout
        self.in_flight = in_flight
        self._channel = open_channel(target, interceptors)
        self._stub = pb_grpc.TelemetryIngestStub(self._channel)
        self.sent_batches = 0
        self.sent_points = 0

    def _token(self) -> str:
        if self._target.token_file is None:
            assert self._target.token_source is not None  # one of the two: Target says so
            return self._target.token_source()
        return self._target.token_file.read_text().strip()

    def _start(self, batch: SealedBatch) -> Callable[[], pb.PushBatchReply]:
        """Put the batch on the wire; returns what waits for its reply."""
        future = self._stub.PushBatch.future(
            pb.PushBatchRequest(batch=batch.payload), timeout=self._timeout,
            metadata=(("authorization", f"Bearer {self._token()}"),))
        return future.result

    def push(self, batch: SealedBatch) -> None:
        """One attempt; raises TransientSendError when the batch should be resent later."""
        try:
            self._settle(batch, self._start(batch))
        except OSError as exc:  # token file unreadable: wait for the platform to write it
            raise TransientSendError(f"token file {self._target.token_file}: {exc}") from None

    def _settle(self, batch: SealedBatch, reply_of: Callable[[], pb.PushBatchReply]) -> None:
        """ACK → delete; permanent refusal → quarantine; else TransientSendError."""
        failpoints.reach("send")
        try:
            reply = reply_of()
        except grpc.RpcError as exc:
            code = exc.code()
            if code in TRANSIENT:
                raise TransientSendError(f"batch {batch.sequence}: {code.name}: "
                                         f"{exc.details()}") from None
            self._spool.quarantine(batch.sequence, f"{code.name}: {exc.details()}")
            log.error("batch %d refused and quarantined: %s: %s", batch.sequence, code.name,
                      exc.details())
            return
        if reply.outcome == pb.PushBatchReply.OUTCOME_REJECTED:
            self._spool.quarantine(batch.sequence, reply.reason)
            log.error("batch %d rejected and quarantined: %s", batch.sequence, reply.reason)
            return
        failpoints.reach("ack")
        self._spool.acknowledge(batch.sequence)
        failpoints.reach("delete")
        self.sent_batches += 1
        self.sent_points += batch.points

    def run_once(self, *, give_up_after: float | None = None,
                 stop: Callable[[], bool] = lambda: False) -> int:
        """Send until the spool has nothing pending; returns the batches handled.

        Up to ``in_flight`` batches are on the wire at once; a batch whose first try
        fails is retried alone, with capped exponential backoff and jitter. With
        ``give_up_after`` (seconds), a batch still failing then stays in the spool and
        TransientSendError is raised. ``stop`` is asked between batches.
        """
        handled = 0
        while not stop() and (batches := self._spool.pending(limit=self.in_flight)):
            started: list[tuple[SealedBatch, Callable[[], pb.PushBatchReply]]] = []
            for batch in batches:
                try:
                    started.append((batch, self._start(batch)))
                except OSError:
                    break  # the token file is unreadable: the retry path waits for it
            for batch, reply_of in started:
                try:
                    self._settle(batch, reply_of)
                except TransientSendError:
                    if stop():
                        return handled
                    self._send_with_retries(batch, give_up_after)
                handled += 1
            for batch in batches[len(started):]:
                self._send_with_retries(batch, give_up_after)
                handled += 1
        return handled

    def _send_with_retries(self, batch: SealedBatch, give_up_after: float | None) -> None:
        for attempt in Retrying(
            retry=retry_if_exception_type(TransientSendError),
            wait=wait_exponential_jitter(initial=0.1, max=5.0),
            stop=stop_after_delay(give_up_after) if give_up_after is not None else (
                lambda _state: False),
            before_sleep=before_sleep_log(log, logging.WARNING),
            reraise=True,
        ):
            with attempt:
                self.push(batch)

    def close(self) -> None:
        self._channel.close()
        self._spool.close()
