"""Bad input, end to end: each case gets a clear error naming what and where, and the
good data around it arrives exactly (collector → ingest → Kafka → projector → PostgreSQL)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import ssl
import subprocess
import time
from pathlib import Path

import asyncpg
import grpc
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import frame
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

Stored = dict[tuple[str, int], float]


def good(steps: range) -> list[bytes]:
    return [json.dumps({"step": s, "wall_time": 1.0 + s, "metrics": {"loss": s / 4}}).encode()
            for s in steps]


def same(stored: Stored, truth: Stored) -> bool:
    """Equal, NaN equal to NaN."""
    return stored.keys() == truth.keys() and all(
        (math.isnan(v) and math.isnan(truth[k])) or v == truth[k] for k, v in stored.items())


async def stored(endpoints: Endpoints, db: asyncpg.Connection, run_id: str, expected: int
                 ) -> Stored:
    """The run's points once ``expected`` are stored and the projectors are past every batch
    on the topic (the collector has exited): nothing more can come."""
    assert await wait_for_points(db, run_id, expected) == expected
    await projected_to_end(endpoints.kafka_bootstrap)
    return {(tag, step): value for _, _, tag, step, value in await curve_points(db, run_id)}


async def test_malformed_jsonl_is_reported_by_line_and_the_rest_arrives_exactly(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    bad = [  # (line, what the collector must say about it)
        (b"this is not json", "not JSON"),
        (b'{"step": "7", "wall_time": 1, "metrics": {"loss": 1}}', "'step' must be a 64-bit"),
        (b'{"step": 1180591620717411303424, "wall_time": 1, "metrics": {"loss": 1}}',
         "'step' must be a 64-bit integer"),
        (b'{"wall_time": 1, "metrics": {"loss": 1}}', "'step' must be a 64-bit integer"),
        (b'{"step": 5, "wall_time": 1, "metrics": {}}', "'metrics' must be a non-empty"),
        (b'{"step": 5, "wall_time": 1, "metrics": {"loss": "abc"}}', "not a number"),
        (json.dumps({"step": 5, "wall_time": 1, "metrics": {"x" * 600: 1}}).encode(),
         "is 600 bytes, over the 512 byte bound"),
        (json.dumps({"step": 6, "wall_time": 1, "metrics": {f"m{i}": i for i in range(60_000)}}
                    ).encode(), "over the bounds of one batch"),
        (json.dumps({"step": 7, "wall_time": 1, "metrics": {"loss": 1}, "pad": "x" * (5 << 20)}
                    ).encode(), "over the 4194304 byte bound; skipped"),
    ]
    special = [b'{"step": 100, "wall_time": 1, "metrics": {"nan": NaN, "inf": Infinity, '
               b'"ninf": -Infinity, "quoted": "-inf"}}',
               json.dumps({"step": 2**63 - 1, "wall_time": 1, "metrics": {"far": 2.5}}).encode()]
    lines = [*good(range(100)), *(line for line, _ in bad), *special, *good(range(200, 300))]
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    member = MemberKey(run_id, 1, "rank-0")
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector(collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                                        {"train": path}))
    assert done.returncode == 0, done.stderr
    for number, (_, words) in enumerate(bad, start=101):  # lines count from 1
        assert f"{path}:{number}: " in done.stderr, (number, words, done.stderr[-3000:])
        line_report = done.stderr.split(f"{path}:{number}: ", 1)[1].splitlines()[0]
        assert words in line_report, (number, line_report)
    truth = {("loss", s): s / 4 for s in [*range(100), *range(200, 300)]} | {
        ("nan", 100): math.nan, ("inf", 100): math.inf, ("ninf", 100): -math.inf,
        ("quoted", 100): -math.inf, ("far", 2**63 - 1): 2.5}
    assert same(await stored(initialised, db, run_id, len(truth)), truth)


def event(step: int, tag: str, value: float) -> bytes:
    return frame(event_pb2.Event(step=step, wall_time=1.0 + step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])).SerializeToString())


async def test_damaged_event_files_are_reported_by_offset_and_the_rest_arrives_exactly(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    logdir = tmp_path / "tb"
    logdir.mkdir()
    records = [event(s, "loss", s / 4) for s in range(50)]
    corrupt = bytearray(event(50, "loss", 12.5))
    corrupt[20] ^= 0xFF  # a flipped bit in the payload: its data CRC fails
    special = [event(52, "loss", math.nan), event(53, "loss", math.inf),
               event(54, "loss", -math.inf), event(2**62, "loss", 1.5)]
    tail = event(99_999, "loss", 7.0)
    parts = [*records, bytes(corrupt), event(51, "t" * 600, 1.0), *special,
             *(event(s, "loss", s / 4) for s in range(56, 100)), tail[:len(tail) // 2]]
    path = logdir / "events.out.tfevents.1.bad"
    path.write_bytes(b"".join(parts))
    corrupt_at = sum(len(p) for p in records)
    long_tag_at = corrupt_at + len(corrupt)
    member = MemberKey(run_id, 1, "rank-0")
    token = workload_token(initialised, member, tmp_path / "token")
    args = [*collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool", {}),
            "--tensorboard", f"tb={logdir}"]
    done = run_collector(args)
    assert done.returncode == 0, done.stderr
    assert f"{path.name}@{corrupt_at}: " in done.stderr, done.stderr
    assert "CRC" in done.stderr.split(f"{path.name}@{corrupt_at}: ", 1)[1].splitlines()[0]
    assert f"{path.name}@{long_tag_at}: tag is 600 bytes, over the 512 byte bound: 'tttt" \
        in done.stderr
    truth = {("loss", s): float(np.float32(s / 4)) for s in [*range(50), *range(56, 100)]} | {
        ("loss", 52): math.nan, ("loss", 53): math.inf, ("loss", 54): -math.inf,
        ("loss", 2**62): 1.5}
    # The half-written tail waits.
    assert same(await stored(initialised, db, run_id, len(truth)), truth)
    with path.open("ab") as out:
        out.write(tail[len(tail) // 2:])  # the writer finishes it
    assert run_collector(args).returncode == 0
    assert same(await stored(initialised, db, run_id, len(truth) + 1),
                truth | {("loss", 99_999): 7.0})


@pytest.mark.parametrize("wrong", ["other-secret", "mis-bound", "expired", "garbage"])
async def test_a_bad_token_holds_the_batches_until_the_file_is_rewritten(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection, wrong: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join(good(range(500))) + b"\n")
    now = time.time()
    token = tmp_path / "token"
    token.write_text({
        "other-secret": TokenSigner("another-secret-of-enough-length").issue_workload(
            member, now=now, ttl_seconds=600),
        "mis-bound": TokenSigner(initialised.jwt_secret).issue_workload(
            MemberKey(run_id, 2, "rank-0"), now=now, ttl_seconds=600),
        "expired": TokenSigner(initialised.jwt_secret).issue_workload(
            member, now=now - 600, ttl_seconds=60),
        "garbage": "not.a.token"}[wrong])
    log = tmp_path / "collector.log"
    with log.open("wb") as out:
        collector = subprocess.Popen([*collector_args(
            ingest.port, tls_dir, token, member, tmp_path / "spool", {"train": path}),
            "--exit-when-idle"], stderr=out)
    words = "is not for the token's member" if wrong == "mis-bound" else "workload token refused"
    deadline = time.monotonic() + 60
    while words not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    assert collector.poll() is None  # holding, not giving up
    workload_token(initialised, member, tmp_path / "token.new").rename(token)
    assert collector.wait(timeout=60) == 0, log.read_text()
    assert same(await stored(initialised, db, run_id, 500),
                {("loss", s): s / 4 for s in range(500)})


def garbage_calls(port: int, ca: Path) -> None:
    """Raw bytes, TLS then HTTP/1.1, TLS then an unknown gRPC method: none may harm it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(os.urandom(4096))
        sock.settimeout(5)
        with contextlib.suppress(OSError):
            sock.recv(1024)
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock, \
            context.wrap_socket(sock, server_hostname="localhost") as tls:
        tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n" + os.urandom(2048))
        tls.settimeout(5)
        with contextlib.suppress(OSError):
            tls.recv(1024)
    with grpc.secure_channel(f"localhost:{port}", grpc.ssl_channel_credentials(
            ca.read_bytes())) as channel:
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/no.such.Service/Call")
        with pytest.raises(grpc.RpcError) as caught:
            call(os.urandom(512), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_garbage_on_both_grpc_ports_harms_neither_listener(
        initialised: Endpoints, ingest: Process, tls_dir: Path, tmp_path: Path,
        run_id: str) -> None:
    from tests.support.environment import free_port
    from tests.support.processes import launch_env, start_control
    from tuneplane.node.v1 import node_pb2, node_pb2_grpc
    control = start_control(tls_dir, free_port(), tmp_path / "control.log",
                            launch_env(ingest.port, tmp_path / "spool", tmp_path / ("0" * 64)))
    try:
        for port in (ingest.port, control.port):
            for _ in range(3):
                garbage_calls(port, tls_dir / "ca.pem")
        credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
        member = MemberKey(run_id, 1, "rank-0")
        token = TokenSigner(initialised.jwt_secret).issue_workload(member, now=time.time(),
                                                                   ttl_seconds=60)
        with grpc.secure_channel(f"localhost:{ingest.port}", credentials) as channel:
            batch = pb.Batch(identity=pb.BatchIdentity(
                run_id=run_id, attempt=1, member="rank-0", spool_epoch="e", sequence=1),
                chunks=[pb.SeriesChunk(source="s", tag="t", steps=[1], wall_times=[1.0],
                                       values=[1.0])])
            reply = pb_grpc.TelemetryIngestStub(channel).PushBatch(
                pb.PushBatchRequest(batch=batch.SerializeToString()),
                metadata=(("authorization", f"Bearer {token}"),), timeout=30)
            assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
            with pytest.raises(grpc.RpcError) as caught:  # a garbage batch: a clear refusal
                pb_grpc.TelemetryIngestStub(channel).PushBatch(
                    pb.PushBatchRequest(batch=b"\xff" * 64),
                    metadata=(("authorization", f"Bearer {token}"),), timeout=30)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "undecodable batch" in (caught.value.details() or "")
        with grpc.secure_channel(f"localhost:{control.port}", credentials) as channel:
            with pytest.raises(grpc.RpcError) as caught:
                node_pb2_grpc.NodeControlStub(channel).Heartbeat(node_pb2.HeartbeatRequest(),
                                                                 timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # still answering
        for process in (ingest, control):
            assert process.proc is not None
            assert process.proc.poll() is None
    finally:
        control.stop()
