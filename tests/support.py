"""Helpers for tests on the real services: processes, JSONL truth, waiting on PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from aiokafka import AIOKafkaProducer
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from tuneplane.common.gateway import tls
from tuneplane.common.kafka import topics
from tuneplane.common.tokens import TokenSigner
from tuneplane.ingest.sink import partition_for
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@dataclass(frozen=True, slots=True)
class Endpoints:
    database_url: str
    kafka_bootstrap: str
    s3_endpoint: str
    s3_bucket: str
    jwt_secret: str

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> Endpoints:
        return cls(env["TUNEPLANE_DATABASE_URL"], env["TUNEPLANE_KAFKA_BOOTSTRAP"],
                   env["TUNEPLANE_S3_ENDPOINT"], env["TUNEPLANE_S3_BUCKET"],
                   env["TUNEPLANE_WEB_JWT_SECRET"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def bench_workspace(endpoints: Endpoints, prefix: str = "tuneplane-bench-") -> tuple[Path, Path]:
    """For benchmarks: storage initialised, a fresh work directory and a TLS directory in it
    for localhost."""
    run_admin(endpoints, "init")
    work = Path(tempfile.mkdtemp(prefix=prefix))
    tls.generate(["localhost", "127.0.0.1"], now=dt.datetime.now(dt.UTC)).write(work / "tls")
    return work, work / "tls"


def served_certificate(port: int, ca_pem: bytes) -> bytes:
    """The certificate a new TLS connection to the port is given (PEM), verified by the CA."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock, \
            context.wrap_socket(sock, server_hostname="localhost") as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).public_bytes(Encoding.PEM)


def run_admin(endpoints: Endpoints, *args: str) -> str:
    done = subprocess.run([str(BIN / "tuneplane-admin"), *args], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, f"tuneplane-admin {' '.join(args)}: {done.stderr}"
    return done.stdout


class Process:
    """A service process of the project, started as users start it, with its log kept."""

    def __init__(self, args: list[str], log: Path, ready: str, *, port: int = 0,
                 env: dict[str, str] | None = None) -> None:
        self.args, self.log, self.ready, self.port, self.env = args, log, ready, port, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self, timeout: float = 90.0) -> None:
        mark = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         env={**os.environ, **(self.env or {})})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_bytes()[mark:].decode(errors="replace")
            if self.ready in text:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.args[0]} exited {self.proc.returncode}:\n{text}")
            time.sleep(0.1)
        raise AssertionError(f"{self.args[0]} not ready in {timeout}s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL: no chance to flush, commit or say goodbye."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def start_ingest(endpoints: Endpoints, tls_dir: Path, port: int, log: Path,
                 *extra: str) -> Process:
    """Ingest with the development TLS identity; ``extra`` arguments as given (for example
    ``--max-concurrent-rpcs 16``)."""
    return Process([str(BIN / "tuneplane-ingest"), "--host", "127.0.0.1", "--port", str(port),
                    "--tls-dir", str(tls_dir), "--kafka-timeout", "5", *extra], log,
                   ready="ingest listening", port=port)


def launch_env(ingest_port: int, spool_root: Path, artifact: Path) -> dict[str, str]:
    return {"TUNEPLANE_TELEMETRY_TARGET": f"localhost:{ingest_port}",
            "TUNEPLANE_TELEMETRY_SPOOL_ROOT": str(spool_root),
            "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT": str(artifact),
            "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "20"}


def start_control(tls_dir: Path, port: int, log: Path, env: dict[str, str],
                  *extra: str) -> Process:
    """Node control with the development TLS identity; ``env`` holds the launch settings
    (TUNEPLANE_TELEMETRY_TARGET, _SPOOL_ROOT, _COLLECTOR_ARTIFACT, ...)."""
    return Process([str(BIN / "tuneplane-control"), "serve", "--host", "127.0.0.1", "--port",
                    str(port), "--tls-dir", str(tls_dir), *extra], log,
                   ready="control listening", port=port, env=env)


def start_projector(endpoints: Endpoints, log: Path, env: dict[str, str] | None = None,
                    ) -> Process:
    return Process([str(BIN / "tuneplane-projector")], log, ready="Worker ready", env=env)


def workload_token(endpoints: Endpoints, member: MemberKey, path: Path, ttl: int = 3600) -> Path:
    path.write_text(TokenSigner(endpoints.jwt_secret).issue_workload(
        member, now=time.time(), ttl_seconds=ttl))
    return path


def write_jsonl(path: Path, steps: range, tags: list[str], *, append: bool = False,
                wall0: float = 1.7e9) -> dict[tuple[str, int], float]:
    """Writes one line per step with every tag; returns the truth {(tag, step): value}."""
    truth: dict[tuple[str, int], float] = {}
    with path.open("a" if append else "w") as out:
        for step in steps:
            metrics = {tag: (step * 0.5 + k) / 7.0 for k, tag in enumerate(tags)}
            truth.update({(tag, step): value for tag, value in metrics.items()})
            out.write(json.dumps({"step": step, "wall_time": wall0 + step,
                                  "metrics": metrics}) + "\n")
    return truth


def collector_args(ingest_port: int, tls_dir: Path, token: Path, member: MemberKey,
                   spool: Path, sources: dict[str, Path], *extra: str) -> list[str]:
    args = [str(BIN / "tuneplane-collector"), "run", "--run", member.run_id, "--attempt",
            str(member.attempt), "--member", member.member, "--spool", str(spool),
            "--target", f"localhost:{ingest_port}", "--ca-file", str(tls_dir / "ca.pem"),
            "--token-file", str(token), *extra]
    for source_id, path in sources.items():
        args += ["--source", f"{source_id}={path}"]
    return args


async def curve_points(conn: asyncpg.Connection, run_id: str) -> list[tuple[str, str, str, int,
                                                                             float]]:
    """Every stored point of a run as (member, source, tag, step, value), duplicates kept."""
    rows = await conn.fetch("""
        SELECT s.member, s.source, s.tag, p.step, p.value
        FROM series s JOIN curve_chunks c USING (series_id),
             unnest(c.steps, c."values") AS p(step, value)
        WHERE s.run_id = $1""", run_id)
    return [tuple(row) for row in rows]


async def wait_for_points(conn: asyncpg.Connection, run_id: str, expected: int,
                          timeout: float = 120.0) -> int:
    """Waits until the run has at least ``expected`` points (or the timeout); returns the count."""
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        count = await conn.fetchval("""
            SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c USING (series_id)
            WHERE s.run_id = $1""", run_id)
        if count >= expected:
            break
        await asyncio.sleep(0.2)
    return int(count)


def member_batch(member: MemberKey, sequence: int, points: int, *, tags: int = 2,
                 epoch: str = "e") -> pb.Batch:
    """A batch as a collector seals it: ``points`` spread over ``tags`` columnar chunks."""
    per_tag = points // tags
    first = sequence * per_tag
    return pb.Batch(
        identity=pb.BatchIdentity(run_id=member.run_id, attempt=member.attempt,
                                  member=member.member, spool_epoch=epoch, sequence=sequence),
        sealed_at=1.7e9 + sequence,
        chunks=[pb.SeriesChunk(source="train", tag=f"tag{t}",
                               steps=list(range(first, first + per_tag)),
                               wall_times=[1.7e9 + s for s in range(first, first + per_tag)],
                               values=[s * 0.25 + t for s in range(first, first + per_tag)])
                for t in range(tags)])


async def produce(bootstrap: str, batches: list[pb.Batch]) -> None:
    """Put batches on the topic exactly as ingest does (key, partition, acks=all)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                enable_idempotence=True, max_request_size=8 << 20,
                                linger_ms=5)
    await producer.start()
    try:
        partitions = len(await producer.partitions_for(topics.BATCHES))
        sent = []
        for batch in batches:
            key = BatchKey.from_proto(batch.identity)
            sent.append(await producer.send(topics.BATCHES, batch.SerializeToString(),
                                            key=key.kafka_key(),
                                            partition=partition_for(key, partitions)))
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def group_at_end(bootstrap: str, group: str) -> dict[str, str]:
    """A projector group committed at the topic's end (no backlog of earlier runs); returns
    the settings that put a projector in it."""
    await topics.commit_group_at_end(bootstrap, group)
    return {"TUNEPLANE_PROJECTOR_GROUP": group}


async def first_and_last(count: Callable[[], Awaitable[int]], expected: int, what: str,
                         seconds: float = 900.0) -> tuple[float, float]:
    """Polls ``count`` until it reaches ``expected``; returns when (perf_counter) the first
    and the last were seen. For benchmarks: the span between them is the throughput's."""
    first, deadline, seen = 0.0, time.perf_counter() + seconds, 0
    while time.perf_counter() < deadline:
        seen = await count()
        now = time.perf_counter()
        if seen and not first:
            first = now
        if seen >= expected:
            return first, now
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{seen:,} of {expected:,} {what} after {seconds:.0f} s")
