"""End to end on the real services: JSONL → collector → ingest → Kafka → projector → PostgreSQL."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import numpy as np

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import assert_exact, write_jsonl
from tuneplane.collector.collector import Collector, CollectorConfig
from tuneplane.collector.reader import SourceSpec
from tuneplane.collector.sender import Target
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES


async def test_every_point_arrives_once_with_its_step_and_value(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "metrics.jsonl", range(5000), ["loss", "acc", "lr"])
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector(collector_args(ingest.port, tls_dir, token, member,
                                        tmp_path / "spool", {"train": tmp_path / "metrics.jsonl"},
                                        "--max-batch-points", "2000"))
    assert done.returncode == 0, done.stderr
    assert await wait_for_points(db, run_id, len(truth)) == len(truth)
    await asyncio.sleep(1.0)  # any duplicate would land right behind
    assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")


async def test_malformed_line_is_reported_and_the_rest_delivered(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-1")
    path = tmp_path / "metrics.jsonl"
    truth = write_jsonl(path, range(100), ["loss"])
    with path.open("a") as out:
        out.write('{"step": 100, "wall_time": 1.0, "metrics": {"loss": "high"}}\n{oops\n')
    truth |= write_jsonl(path, range(102, 200), ["loss"], append=True)
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector(collector_args(ingest.port, tls_dir, token, member,
                                        tmp_path / "spool", {"train": path}))
    assert done.returncode == 0, done.stderr
    assert f"{path}:101: metric 'loss' is 'high', not a number" in done.stderr
    assert f"{path}:102: not JSON" in done.stderr
    assert await wait_for_points(db, run_id, len(truth)) == len(truth)
    assert_exact(await curve_points(db, run_id), truth, "rank-1", "train")


class DropFirstReplies(grpc.UnaryUnaryClientInterceptor):
    """The call reaches ingest and completes there; its reply is lost on the way back."""

    def __init__(self, drops: int) -> None:
        self.drops = drops
        self.dropped = 0
        self.sent: list[bytes] = []

    def intercept_unary_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any],
        client_call_details: grpc.ClientCallDetails, request: Any,
    ) -> Any:
        self.sent.append(request.batch)
        outcome = continuation(client_call_details, request)
        outcome.result()  # the server has answered: the batch is durable in Kafka
        if self.dropped < self.drops:
            self.dropped += 1
            raise LostReply()
        return outcome


class LostReply(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection reset after the request was delivered (injected)"


async def test_lost_ack_resends_the_same_batch_and_postgres_holds_each_point_once(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "m.jsonl", range(3000), ["loss", "acc"])
    drop = DropFirstReplies(drops=3)
    collector = Collector(CollectorConfig(
        owner=MemberKey(run_id, 1, "rank-0"), spool_dir=tmp_path / "spool",
        target=Target(f"localhost:{ingest.port}", tls_dir / "ca.pem",
                      workload_token(initialised, member, tmp_path / "token")),
        sources=[SourceSpec("train", tmp_path / "m.jsonl")], max_batch_points=1000,
        max_batch_bytes=MAX_BATCH_BYTES // 2, interceptors=[drop]))
    while not collector.reader.run_once():
        pass
    await asyncio.to_thread(collector.sender.run_once)
    collector.close()
    assert drop.dropped == 3
    assert collector.sender.sent_batches == 6  # every batch ACKed in the end
    assert len(drop.sent) == 9
    # Three batches went out twice, each time with the same identity and the same bytes.
    assert sorted(Counter(drop.sent).values()) == [1, 1, 1, 2, 2, 2]
    assert await wait_for_points(db, run_id, len(truth)) == len(truth)
    await asyncio.sleep(1.0)
    assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")
    resent = await db.fetch("SELECT batch_id FROM batch_ledger WHERE run_id = $1", run_id)
    assert len(resent) == 6


async def test_tensorboard_logdir_scalars_arrive_once_with_steps_and_values(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    from tensorboardX import SummaryWriter
    member = MemberKey(run_id, 1, "rank-0")
    logdir = tmp_path / "logs"
    writer = SummaryWriter(logdir=str(logdir))
    truth: dict[tuple[str, int], float] = {}
    for step in range(2000):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step)
        truth[("train/loss", step)] = float(np.float32(1.0 / (step + 1)))
        if step % 500 == 0:
            writer.add_histogram("weights", np.arange(10.0), step)
    writer.close()
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector([*collector_args(ingest.port, tls_dir, token, member,
                                          tmp_path / "spool", {}), "--tensorboard",
                          f"tb={logdir}", "--max-batch-points", "700"])
    assert done.returncode == 0, done.stderr
    assert "4 rich records read" in done.stderr
    assert await wait_for_points(db, run_id, len(truth)) == len(truth)
    await asyncio.sleep(1.0)
    assert_exact(await curve_points(db, run_id), truth, "rank-0", "tb")


async def test_an_integration_artifact_gives_each_member_its_own_sources(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    # Both members log the same values: they are two series, never merged.
    truths = {m: write_jsonl(tmp_path / f"{m}.jsonl", range(500), ["loss"])
              for m in ("rank-0", "rank-1")}
    channel = tmp_path / "samples.jsonl"
    channel.write_text("".join(
        f'{{"step": {i}, "wall_time": 1.0, "record": {{"text": "sample {i}"}}}}\n'
        for i in range(5)))
    artifact = tmp_path / "integration.yaml"
    artifact.write_text(f"""
version: 1
sources:
  - {{id: train-0, kind: jsonl, path: {tmp_path}/rank-0.jsonl, owner: rank-0}}
  - {{id: train-1, kind: jsonl, path: {tmp_path}/rank-1.jsonl, owner: rank-1}}
channels:
  - {{id: samples, path: {channel}, owner: rank-1, max_record_bytes: 1000,
     max_bytes_per_minute: 100000, schema: {{type: object, required: [text]}}}}
""")
    for m in truths:
        member = MemberKey(run_id, 1, m)
        token = workload_token(initialised, member, tmp_path / f"token-{m}")
        done = run_collector([*collector_args(ingest.port, tls_dir, token, member,
                                              tmp_path / f"spool-{m}", {}),
                              "--integration", str(artifact)])
        assert done.returncode == 0, done.stderr
        expected_rich = 5 if m == "rank-1" else 0
        assert f"500 points and {expected_rich} rich records read" in done.stderr
    assert await wait_for_points(db, run_id, 1000) == 1000
    points = await curve_points(db, run_id)
    assert_exact(points, truths["rank-0"], "rank-0", "train-0")
    assert_exact(points, truths["rank-1"], "rank-1", "train-1")
