"""End to end on the real services: JSONL → collector → ingest → Kafka → projector → PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import numpy as np

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import assert_exact, write_jsonl
from tuneplane.telemetry.v1.identity import MemberKey


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
    await projected_to_end(initialised.kafka_bootstrap)  # any duplicate is in by now
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
    await projected_to_end(initialised.kafka_bootstrap)
    assert_exact(await curve_points(db, run_id), truth, "rank-1", "train")


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
    await projected_to_end(initialised.kafka_bootstrap)
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
    await projected_to_end(initialised.kafka_bootstrap)
    points = await curve_points(db, run_id)
    assert_exact(points, truths["rank-0"], "rank-0", "train-0")
    assert_exact(points, truths["rank-1"], "rank-1", "train-1")
