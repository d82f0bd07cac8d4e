"""Export end to end, with a real OpenTelemetry Collector built by the official builder
(`scripts/otelcol build`) from the composed configuration: curves from the pipeline reach
a `file` exporter (writing in its sink's directory) and an `otlp_http` sink; the sink's
bearer token file is rotated mid-run and the next requests carry the new token without a
restart; the collector holds none of the exporter's secrets in its environment; a poison
record on the way is stepped over; a deleted run's batches are not exported; with no
destination the exporter does no export work and holds no backlog; a killed exporter skips
nothing."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import asyncpg
import pytest

from tests.support.environment import BIN, Endpoints, free_port
from tests.support.kafka import produce, produce_payloads, projected_to_end
from tests.support.otlp_file import gauge_points
from tests.support.processes import Process, environment
from tests.support.prometheus import scraped
from tests.support.truth import member_batch
from tuneplane.controlplane.destinations import store
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey


class Capture(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that records who called with which token."""

    tokens: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Capture.tokens.append(self.headers.get("Authorization", ""))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[int]:
    Capture.tokens = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def exported(path: Path) -> dict[tuple[str, str, str, int], float]:
    """(run, member, tag, wall time in ns) → value, from the file exporter's JSON lines."""
    found: dict[tuple[str, str, str, int], float] = {}
    if not path.exists():
        return found
    for name, attrs, time_ns, value in gauge_points(path.read_text()):
        assert name == attrs["tag"]
        assert {"run", "attempt", "member", "source", "tag"} <= set(attrs)
        found[(attrs["run"], attrs["member"], attrs["tag"], time_ns)] = value
    return found


def destination(port: int) -> dict[str, Any]:
    return {"apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
            "metadata": {"name": "observability"},
            "spec": {"sinks": [
                {"name": "capture", "exporter": "otlp_http",
                 "endpoint": f"http://127.0.0.1:{port}", "secretRef": {"name": "capture"},
                 "auth": {"bearerToken": {"key": "token"}},
                 "config": {"compression": "none", "retry_on_failure": {"enabled": True}}},
                {"name": "lake", "exporter": "file",
                 "config": {"path": "lake.jsonl", "flush_interval": "100ms"}}]}}


def truth(member: MemberKey, sequences: range) -> dict[tuple[str, str, str, int], float]:
    out = {}
    for seq in sequences:
        for chunk in member_batch(member, seq, 100).chunks:
            for wall, value in zip(chunk.wall_times, chunk.values, strict=True):
                out[(member.run_id, member.member, chunk.tag, int(wall * 1e9))] = value
    return out


async def wait_for(check: Any, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.2)


def rotate(token_file: Path, token: str) -> None:
    fresh = token_file.with_name(".token.new")
    fresh.write_text(token)
    fresh.rename(token_file)  # what a secret mount's update looks like


async def test_destinations_turn_export_on_and_off_and_a_rotated_token_is_used(
        initialised: Endpoints, fresh: str, capture: int, otelcol: Path,
        tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    (secrets / "capture").mkdir(parents=True)
    (secrets / "lake").mkdir()
    token_file = secrets / "capture" / "token"
    token_file.write_text("token-1")
    lake, config = secrets / "lake" / "lake.jsonl", tmp_path / "otelcol.json"
    group = f"exporter-{uuid.uuid4().hex[:8]}"
    metrics = free_port()
    exporter = Process(
        [str(BIN / "tuneplane-exporter"), "--config-path", str(config), "--otelcol",
         str(otelcol), "--otlp-endpoint", f"127.0.0.1:{free_port()}", "--secrets-root",
         str(secrets), "--group", group, "--poll-seconds", "0.5", "--metrics-port",
         str(metrics)],
        tmp_path / "exporter.log", ready="exporter watching destinations",
        env={"TUNEPLANE_DATABASE_URL": fresh})
    db = await asyncpg.connect(fresh)
    try:
        # No destination: nothing composed, nothing consumed, no collector.
        before = MemberKey(f"off-{uuid.uuid4().hex[:8]}", 1, "rank-0")
        await produce(initialised.kafka_bootstrap, [member_batch(before, s, 100)
                                                    for s in range(1, 11)])
        # The barrier: its first look at the destinations found none, and said so (that
        # nothing produced before is exported later is checked at the end).
        await wait_for(lambda: "no destination; nothing consumed" in exporter.tail(),
                       "the exporter never said it found no destination")
        assert not config.exists()
        assert "export on" not in exporter.tail()
        assert "composed collector started" not in exporter.tail()

        applied = await store.apply(db, destination(capture))
        assert applied.result == "created"
        await wait_for(lambda: "export on" in exporter.tail(), "export never turned on")
        composed = json.loads(config.read_text())
        assert composed["extensions"]["bearertokenauth/capture"] == {"filename":
                                                                     str(token_file)}
        assert composed["exporters"]["file/lake"]["path"] == str(lake)
        pid = int(re.findall(r"composed collector started \(pid (\d+)\)", exporter.tail())[-1])
        assert not [name for name in environment(pid)
                    if name.startswith(("TUNEPLANE_", "AWS_"))], environment(pid)
        assert fresh.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
        member = MemberKey(f"on-{uuid.uuid4().hex[:8]}", 1, "rank-0")
        await asyncio.sleep(2.0)  # the collector's receiver is listening
        await produce(initialised.kafka_bootstrap, [member_batch(member, s, 100)
                                                    for s in range(1, 11)])
        first = truth(member, range(1, 11))
        await wait_for(lambda: first.items() <= exported(lake).items(),
                       f"file exporter holds {len(exported(lake))} of {len(first)} points")
        await wait_for(lambda: "Bearer token-1" in Capture.tokens, "no request with token-1")

        rotate(token_file, "token-2")
        await asyncio.sleep(1.5)  # the extension notices the file changed
        # A poison record ahead of the next batches: stepped over, export goes on.
        crafted = BatchKey(MemberKey("crafted", 1, "poison"), "e", 0)
        await produce_payloads(initialised.kafka_bootstrap,
                               [(crafted, b"\x08\xff\xff not a batch")])
        # A deleted run's batches beside them: not exported (the deletion's table is what
        # a deletion writes: the run is known to no projector in this database).
        gone = MemberKey(f"gone-{uuid.uuid4().hex[:8]}", 1, "rank-0")
        await db.execute("INSERT INTO deletions (run_id, project, attempt, deleted_by, "
                         "purge_after) VALUES ($1, 'default', 0, 'test', now())", gone.run_id)
        await produce(initialised.kafka_bootstrap, [
            *(member_batch(gone, s, 100) for s in range(1, 6)),
            *(member_batch(member, s, 100) for s in range(11, 21))])
        second = truth(member, range(11, 21))
        await wait_for(lambda: second.items() <= exported(lake).items(),
                       "the second half never reached the file exporter")
        await projected_to_end(initialised.kafka_bootstrap, group)  # the barrier
        assert not [k for k in exported(lake) if k[0] == gone.run_id]
        await wait_for(lambda: Capture.tokens[-1] == "Bearer token-2",
                       f"requests after the rotation carry {Capture.tokens[-3:]}")
        assert "exporter: stepping over poison record" in exporter.tail()
        assert exporter.tail().count("composed collector started") == 1  # no restart
        # Its metrics say the same (at least: batches other tests produce count too).
        figures = scraped(metrics)
        assert figures["tuneplane_exporter_export_enabled"] == 1
        assert figures["tuneplane_exporter_destinations{state=composed}"] == 1
        assert figures["tuneplane_exporter_batches_total{outcome=deleted}"] == 5
        assert figures["tuneplane_exporter_batches_total{outcome=poison}"] >= 1
        assert figures["tuneplane_exporter_batches_total{outcome=exported}"] >= 20
        assert figures["tuneplane_exporter_exported_points_total"] >= 2000
        assert figures["tuneplane_exporter_otlp_requests_total{outcome=accepted}"] >= 20
        assert any(k.startswith("tuneplane_exporter_consumer_lag_records{") for k in figures)

        # The exporter killed; batches produced while it is down are exported after its
        # restart (same export epoch: it resumes from its committed offsets).
        written = exported(lake)  # the file exporter starts its file afresh when restarted
        exporter.kill()
        await produce(initialised.kafka_bootstrap, [member_batch(member, s, 100)
                                                    for s in range(21, 31)])
        await asyncio.to_thread(exporter.start)
        await wait_for(lambda: "from the group's committed offsets" in exporter.tail(),
                       "the restarted exporter did not resume")
        third = truth(member, range(21, 31))
        await wait_for(lambda: third.items() <= exported(lake).items(),
                       "batches produced while the exporter was down were never exported")

        stored = written | exported(lake)
        assert {k: v for k, v in stored.items() if k[0] == member.run_id} == \
            first | second | third
        assert not [k for k in stored if k[0] == before.run_id]  # no backlog from before

        assert await store.delete(db, "observability")
        await wait_for(lambda: "export off" in exporter.tail(), "export never turned off")
        assert not config.exists()
    finally:
        await db.close()
        exporter.stop()
