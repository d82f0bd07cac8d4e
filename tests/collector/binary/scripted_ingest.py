"""An ingest that answers as a test scripts it: the TelemetryIngest service on TLS, in the
test's own process. Each PushBatch takes the next answer of the script (then
OUTCOME_DURABLE), or the outage's code while one is set; every call is recorded with the
batch's bytes and the token it carried. The collector under test sees only the wire;
``collecting`` runs one against it."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import grpc

from tests.support.processes import collector_args
from tuneplane.common.gateway.tls import TlsIdentity
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey


@dataclass(frozen=True, slots=True)
class Answer:
    """A gRPC error of ``code``, or (no code) a reply of ``outcome`` with ``reason``."""

    code: grpc.StatusCode | None = None
    outcome: int = pb.PushBatchReply.OUTCOME_DURABLE
    reason: str = ""

    @property
    def acked(self) -> bool:
        return self.code is None and self.outcome in (pb.PushBatchReply.OUTCOME_DURABLE,
                                                      pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE)


@dataclass(frozen=True, slots=True)
class Call:
    """One PushBatch as it arrived, and how it was answered."""

    payload: bytes
    token: str
    answer: Answer
    at: float = field(default_factory=time.monotonic)

    @property
    def batch(self) -> pb.Batch:
        return pb.Batch.FromString(self.payload)

    @property
    def sequence(self) -> int:
        return self.batch.identity.sequence


class ScriptedIngest(pb_grpc.TelemetryIngestServicer):
    def __init__(self) -> None:
        self.port = 0
        self.script: deque[Answer] = deque()
        #: While set, every call is refused with this code (the script waits).
        self.outage: grpc.StatusCode | None = None
        self.calls: list[Call] = []
        #: What GetCheckpoints answers: a member with no earlier spool, unless set; it answers
        #: through an outage of PushBatch, and is refused with this code while it is set.
        self.checkpoints = pb.GetCheckpointsReply()
        self.checkpoints_refused: grpc.StatusCode | None = None
        self.asked = 0
        self._arrived = threading.Condition()

    def GetCheckpoints(self, request: pb.GetCheckpointsRequest,
                       context: grpc.ServicerContext) -> pb.GetCheckpointsReply:
        with self._arrived:
            self.asked += 1
            refused = self.checkpoints_refused
        if refused is not None:
            context.abort(refused, f"scripted {refused.name}")
        return self.checkpoints

    def PushBatch(self, request: pb.PushBatchRequest,
                  context: grpc.ServicerContext) -> pb.PushBatchReply:
        token = str(dict(context.invocation_metadata()).get("authorization", ""))
        with self._arrived:
            if self.outage is not None:
                answer = Answer(self.outage)
            else:
                answer = self.script.popleft() if self.script else Answer()
            self.calls.append(Call(request.batch, token, answer))
            self._arrived.notify_all()
        if answer.code is not None:
            context.abort(answer.code, f"scripted {answer.code.name}")
        return pb.PushBatchReply(
            outcome=pb.PushBatchReply.Outcome.ValueType(answer.outcome), reason=answer.reason)

    def wait_for(self, done: Callable[[list[Call]], bool], timeout: float = 60) -> list[Call]:
        """The calls, once ``done`` holds of them (failing after ``timeout`` seconds)."""
        with self._arrived:
            assert self._arrived.wait_for(lambda: done(self.calls), timeout), self.calls
            return list(self.calls)

    def delivered(self) -> dict[tuple[str, int], float]:
        """{(tag, step): value} of every batch ingest took."""
        points: dict[tuple[str, int], float] = {}
        for call in self.calls:
            if call.answer.acked:
                for chunk in call.batch.chunks:
                    points.update({(chunk.tag, s): v for s, v in zip(chunk.steps, chunk.values,
                                                                     strict=True)})
        return points


@contextmanager
def scripted_ingest(tls_dir: Path) -> Iterator[ScriptedIngest]:
    """A ScriptedIngest serving on localhost with the certificate of ``tls_dir``."""
    identity = TlsIdentity.read(tls_dir)
    ingest = ScriptedIngest()
    server = grpc.server(futures.ThreadPoolExecutor(8))
    pb_grpc.add_TelemetryIngestServicer_to_server(ingest, server)
    ingest.port = server.add_secure_port("localhost:0", grpc.ssl_server_credentials(
        [(identity.private_key_pem, identity.certificate_pem)]))
    server.start()
    try:
        yield ingest
    finally:
        server.stop(None)


@dataclass
class Collecting:
    """A collector's ``run --exit-when-idle`` against a scripted ingest, its log in a file."""

    process: subprocess.Popen[bytes]
    log: Path

    def said(self) -> str:
        return self.log.read_text()

    def wait_until(self, reached: Callable[[], bool], timeout: float = 60) -> None:
        """Returns once ``reached()`` holds; fails if the collector ends or time runs out."""
        deadline = time.monotonic() + timeout
        while not reached():
            assert self.process.poll() is None, self.said()
            assert time.monotonic() < deadline, self.said()
            time.sleep(0.1)

    def ended(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)


class Listening(Protocol):
    """What a collector is pointed at: a server's port on localhost."""

    port: int


@contextmanager
def collecting(ingest: Listening, tls_dir: Path, tmp_path: Path, spool: Path,
               source: Path, *extra: str, env: dict[str, str] | None = None,
               until_idle: bool = True) -> Iterator[Collecting]:
    """Member r/1/rank-0 collecting the JSONL ``source`` into ``spool`` for ``ingest`` (a
    token file of its own under ``tmp_path``), its log tmp_path/collector.log, until idle
    (or, not ``until_idle``, until SIGTERM); killed at the end if still running."""
    (tmp_path / "token").write_text("t\n")
    log = tmp_path / "collector.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*collector_args(ingest.port, tls_dir, tmp_path / "token",
                             MemberKey("r", 1, "rank-0"), spool, {"train": source}, *extra),
             *(["--exit-when-idle"] if until_idle else [])],
            stderr=out, env={**os.environ, **(env or {})})
    try:
        yield Collecting(process, log)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
