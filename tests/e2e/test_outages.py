"""Ingest unreachable: the collector spools up to its cap, pauses, drains on SIGTERM, and
delivers everything once ingest is back."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import asyncpg

from tests.support.collector_binary import spool_status
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, collector_args, run_collector, start_ingest
from tests.support.readmodels import curve_points, projected_behind, wait_for_points
from tests.support.truth import assert_exact, write_jsonl
from tuneplane.telemetry.v1.identity import MemberKey


async def test_spool_full_pauses_reading_then_everything_arrives_when_ingest_comes_back(
        initialised: Endpoints, projector: Process, tls_dir: Path, tmp_path: Path,
        run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "m.jsonl", range(20_000), ["loss", "acc"])
    port = free_port()  # nothing listens here yet
    token = workload_token(initialised, member, tmp_path / "token")
    spool = tmp_path / "spool"
    log = tmp_path / "collector.log"
    with log.open("wb") as out:
        collector = subprocess.Popen(
            [*collector_args(port, tls_dir, token, member, spool, {"train": tmp_path / "m.jsonl"},
                             "--max-batch-points", "1000"), "--exit-when-idle"],
            stderr=out, env={**os.environ, "TUNEPLANE_TELEMETRY_SPOOL_BYTES": "100000"})
    deadline = time.monotonic() + 60
    while "reading paused" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.1)
    held = spool_status(spool)["pending"]
    assert isinstance(held, dict)
    assert 100_000 <= held["bytes"] < 200_000  # the cap, plus the batch that crossed it
    ingest = start_ingest(initialised, tls_dir, port, tmp_path / "ingest.log")
    try:
        assert collector.wait(timeout=120) == 0, log.read_text()
        # Every batch is in Kafka (the collector ended 0); once a marker behind them is
        # projected, nothing more is on its way.
        await projected_behind(db, initialised.kafka_bootstrap, member)
        assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")
    finally:
        ingest.stop()


async def test_sigterm_drains_for_the_drain_time_and_the_next_start_resumes(
        initialised: Endpoints, projector: Process, tls_dir: Path, tmp_path: Path,
        run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "m.jsonl", range(3000), ["loss"])
    port = free_port()
    token = workload_token(initialised, member, tmp_path / "token")
    spool = tmp_path / "spool"
    args = collector_args(port, tls_dir, token, member, spool, {"train": tmp_path / "m.jsonl"},
                          "--max-batch-points", "500")
    collector = subprocess.Popen(args, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "2"})
    deadline = time.monotonic() + 60
    while json.dumps(spool_status(spool).get("pending", {})).find('"points": 3000') < 0:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    started = time.monotonic()
    collector.send_signal(signal.SIGTERM)
    _, stderr = collector.communicate(timeout=60)
    assert 2.0 <= time.monotonic() - started < 30
    assert collector.returncode == 3, stderr  # batches left in the spool, and it says so
    assert "drain ended with 6 batches left in the spool" in stderr
    ingest = start_ingest(initialised, tls_dir, port, tmp_path / "ingest.log")
    try:
        done = run_collector(args)
        assert done.returncode == 0, done.stderr
        # Every batch is in Kafka (the collector ended 0); once a marker behind them is
        # projected, nothing more is on its way.
        await projected_behind(db, initialised.kafka_bootstrap, member)
        assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")
    finally:
        ingest.stop()


async def test_an_expired_token_holds_batches_until_the_platform_rewrites_the_file(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    truth = write_jsonl(tmp_path / "m.jsonl", range(2000), ["loss"])
    token = workload_token(initialised, member, tmp_path / "token", ttl=-60)  # expired
    log = tmp_path / "collector.log"
    with log.open("wb") as out:
        collector = subprocess.Popen(
            [*collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                             {"train": tmp_path / "m.jsonl"}), "--exit-when-idle"],
            stderr=out)
    deadline = time.monotonic() + 60
    while "token expired" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.1)
    assert await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1", run_id) == 0
    renewed = workload_token(initialised, member, tmp_path / "token.new")
    renewed.rename(token)  # the platform's atomic rewrite
    assert collector.wait(timeout=60) == 0, log.read_text()
    assert await wait_for_points(db, run_id, len(truth)) == len(truth)
    assert_exact(await curve_points(db, run_id), truth, "rank-0", "train")
