"""The sender's answers to each reply kind, against a scripted TelemetryIngest on TLS."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from tests.support.environment import free_port
from tuneplane.collector.draft import BatchDraft
from tuneplane.collector.sender import Sender, Target, TransientSendError
from tuneplane.collector.spool import SavedPosition, Spool
from tuneplane.common.gateway import tls
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

Script = list[tuple[grpc.StatusCode | None, int]]  # (error, or None for a reply outcome)


class Scripted(pb_grpc.TelemetryIngestServicer):
    """Answers calls from a script, then durable; records the tokens it saw."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[int] = []
        self.tokens: list[str] = []

    def PushBatch(self, request: pb.PushBatchRequest,
                  context: grpc.ServicerContext) -> pb.PushBatchReply:
        self.calls.append(pb.Batch.FromString(request.batch).identity.sequence)
        self.tokens.append(str(dict(context.invocation_metadata())["authorization"]))
        code, outcome = self.script.pop(0) if self.script else (None, 1)
        if code is not None:
            context.abort(code, f"scripted {code.name}")
        return pb.PushBatchReply(outcome=pb.PushBatchReply.Outcome.ValueType(outcome),
                                 reason="scripted refusal")


@pytest.fixture
def tls_dir(tmp_path: Path) -> Path:
    tls.generate(["localhost"], now=dt.datetime.now(dt.UTC)).write(tmp_path / "tls")
    return tmp_path / "tls"


@pytest.fixture
def serve(tls_dir: Path) -> Iterator[tuple[Scripted, int]]:
    service = Scripted([])
    server = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_TelemetryIngestServicer_to_server(service, server)
    identity = tls.TlsIdentity.read(tls_dir)
    port = free_port()
    server.add_secure_port(f"127.0.0.1:{port}", grpc.ssl_server_credentials(
        [(identity.private_key_pem, identity.certificate_pem)]))
    server.start()
    yield service, port
    server.stop(None)


def sender_with(tmp_path: Path, tls_dir: Path, port: int, batches: int) -> tuple[Sender, Spool]:
    spool = Spool(tmp_path / "spool", MemberKey("r", 1, "m"))
    for i in range(batches):
        draft = BatchDraft("s")
        draft.add(i, 0.0, [("loss", 1.0)])
        spool.seal(draft, "", SavedPosition("k", i + 1), sealed_at=0.0)
    (tmp_path / "token").write_text("token-1\n")
    return Sender(spool, Target(f"localhost:{port}", tls_dir / "ca.pem", tmp_path / "token"),
                  in_flight=2), spool


def test_overload_outages_and_token_refusals_back_off_and_resend(
        serve: tuple[Scripted, int], tls_dir: Path, tmp_path: Path) -> None:
    service, port = serve
    service.script = [(grpc.StatusCode.RESOURCE_EXHAUSTED, 0), (grpc.StatusCode.UNAVAILABLE, 0),
                      (grpc.StatusCode.PERMISSION_DENIED, 0)]
    sender, spool = sender_with(tmp_path, tls_dir, port, 3)
    assert sender.run_once() == 3
    assert spool.pending() == []
    assert spool.quarantined() == []
    assert len(service.calls) == 3 + 3  # every refused try was resent
    assert set(service.calls) == {1, 2, 3}


@pytest.mark.parametrize(("answer", "reason"), [
    ((grpc.StatusCode.INVALID_ARGUMENT, 0), "INVALID_ARGUMENT: scripted INVALID_ARGUMENT"),
    ((None, pb.PushBatchReply.OUTCOME_REJECTED), "scripted refusal"),
])
def test_permanent_refusals_are_quarantined_with_the_reason_and_the_rest_goes_on(
        serve: tuple[Scripted, int], tls_dir: Path, tmp_path: Path,
        answer: tuple[grpc.StatusCode | None, int], reason: str) -> None:
    service, port = serve
    service.script = [answer]
    sender, spool = sender_with(tmp_path, tls_dir, port, 2)
    sender.in_flight = 1
    assert sender.run_once() == 2
    assert spool.quarantined() == [(1, reason)]
    assert spool.pending() == []
    assert sender.sent_batches == 1


def test_duplicate_safe_is_an_ack(serve: tuple[Scripted, int], tls_dir: Path,
                                  tmp_path: Path) -> None:
    service, port = serve
    service.script = [(None, pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE)]
    sender, spool = sender_with(tmp_path, tls_dir, port, 1)
    assert sender.run_once() == 1
    assert spool.pending() == []


def test_the_token_file_is_reread_for_every_send(serve: tuple[Scripted, int], tls_dir: Path,
                                                 tmp_path: Path) -> None:
    service, port = serve
    sender, _ = sender_with(tmp_path, tls_dir, port, 2)
    sender.in_flight = 1
    sender.push(sender._spool.pending()[0])
    (tmp_path / "token").write_text("token-2")
    sender.run_once()
    assert service.tokens == ["Bearer token-1", "Bearer token-2"]


def test_an_unreachable_ingest_gives_up_only_when_told(tls_dir: Path, tmp_path: Path) -> None:
    sender, spool = sender_with(tmp_path, tls_dir, free_port(), 1)
    with pytest.raises(TransientSendError, match="UNAVAILABLE"):
        sender.run_once(give_up_after=0.5)
    assert len(spool.pending()) == 1  # kept for the next try
