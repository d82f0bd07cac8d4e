"""The collector SIGKILLed again and again while its files grow: after the last restart the
delivered set equals the source set exactly (TensorBoard and JSONL)."""

from __future__ import annotations

import asyncio
import random
import subprocess
import threading
import time
from pathlib import Path

import asyncpg
import numpy as np

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, projected_behind
from tests.support.truth import PIECE, assert_exact, pieces
from tuneplane.telemetry.v1.identity import MemberKey

STEPS = 30_000




def grow(jsonl: Path, events: Path, rng: random.Random, done: threading.Event) -> None:
    """Appends both files piece by piece, each piece in two writes: records are often
    half-written while the collector reads (and dies)."""
    with jsonl.open("ab") as j, events.open("ab") as t:
        for step0 in range(0, STEPS, PIECE):
            parts = pieces(step0)
            cuts = [rng.randrange(1, len(p)) for p in parts]
            for handle, part, cut in zip((j, t), parts, cuts, strict=True):
                handle.write(part[:cut])
                handle.flush()
            time.sleep(rng.uniform(0.05, 0.15))
            for handle, part, cut in zip((j, t), parts, cuts, strict=True):
                handle.write(part[cut:])
                handle.flush()
    done.set()


async def test_collector_killed_at_many_points_while_files_grow_delivers_exactly(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    rng = random.Random(20261129)
    member = MemberKey(run_id, 1, "rank-0")
    jsonl, logdir = tmp_path / "m.jsonl", tmp_path / "tb"
    logdir.mkdir()
    events = logdir / "events.out.tfevents.1.crash"
    token = workload_token(initialised, member, tmp_path / "token")
    args = [*collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                            {"train": jsonl}, "--max-batch-points", "700"),
            "--tensorboard", f"tb={logdir}", "--loglevel", "WARNING"]
    done = threading.Event()
    writer = threading.Thread(target=grow, args=(jsonl, events, rng, done))
    writer.start()
    kills = 0
    while not done.is_set():
        collector = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        await asyncio.sleep(rng.uniform(0.1, 1.2))
        collector.kill()
        collector.wait()
        kills += 1
    writer.join()
    finished = run_collector(args)
    assert finished.returncode == 0, finished.stderr
    assert kills >= 5
    # Every batch is in Kafka (the collector ended 0); once a marker behind them is
    # projected, nothing more is on its way.
    await projected_behind(db, initialised.kafka_bootstrap, member)
    points = await curve_points(db, run_id)
    assert_exact(points, {("loss", s): s / 3 for s in range(STEPS)}, "rank-0", "train")
    assert_exact(points, {("acc", s): float(np.float32(s / 7)) for s in range(STEPS)},
                 "rank-0", "tb")
