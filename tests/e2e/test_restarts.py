"""Processes killed with SIGKILL mid-stream and restarted: totals stay exact."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import asyncpg

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, projected_behind
from tests.support.truth import assert_exact, write_jsonl
from tuneplane.telemetry.v1.identity import MemberKey

COUNT = "SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c USING (series_id) " \
        "WHERE s.run_id = $1"


async def wait_for_some(db: asyncpg.Connection, run_id: str, at_least: int,
                        timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        count = int(await db.fetchval(COUNT, run_id))
        if count >= at_least:
            return count
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {at_least} points")


async def test_projector_killed_mid_stream_and_restarted_projects_every_batch_once(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "m.jsonl", range(100_000), ["loss", "acc"])
    token = workload_token(initialised, member, tmp_path / "token")
    collector = subprocess.Popen(
        [*collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                         {"train": tmp_path / "m.jsonl"}, "--max-batch-points", "500"),
         "--exit-when-idle"], stderr=subprocess.PIPE, text=True)
    seen = await wait_for_some(db, run_id, 1)
    projector.kill()
    assert seen < len(truth), "the projector finished before it could be killed mid-stream"
    projector.start()
    _, stderr = collector.communicate(timeout=300)
    assert collector.returncode == 0, stderr
    # Every batch is in Kafka (the collector ended 0); once a marker behind them is
    # projected, nothing more is on its way.
    await projected_behind(db, initialised.kafka_bootstrap, member)
    assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")


async def test_collector_killed_and_restarted_delivers_every_point_once(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "m.jsonl", range(100_000), ["loss", "acc"])
    token = workload_token(initialised, member, tmp_path / "token")
    args = collector_args(ingest.port, tls_dir, token, member,
                          tmp_path / "spool", {"train": tmp_path / "m.jsonl"},
                          "--max-batch-points", "500")
    kills = 0
    for at_least in (1, len(truth) // 3):
        collector = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        await wait_for_some(db, run_id, at_least)
        collector.kill()
        collector.wait()
        kills += 1
    done = run_collector(args)
    assert done.returncode == 0, done.stderr
    assert kills == 2
    # Every batch is in Kafka (the collector ended 0); once a marker behind them is
    # projected, nothing more is on its way.
    await projected_behind(db, initialised.kafka_bootstrap, member)
    assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")
