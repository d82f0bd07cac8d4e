"""The collector killed at each step a batch goes through (read, seal, send, ACK, delete),
then started again: the delivered curves equal the sources exactly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import assert_exact, pieces
from tuneplane.collector.failpoints import POINTS
from tuneplane.telemetry.v1.identity import MemberKey

STEPS = 5_000


@pytest.mark.parametrize("point", POINTS)
async def test_a_collector_killed_at_each_step_delivers_exactly_after_restart(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection, point: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    jsonl, logdir = tmp_path / "m.jsonl", tmp_path / "tb"
    logdir.mkdir()
    with jsonl.open("wb") as j, (logdir / "events.out.tfevents.1.sweep").open("wb") as t:
        for step0 in range(0, STEPS, 500):
            lines, events = pieces(step0)
            j.write(lines)
            t.write(events)
    token = workload_token(initialised, member, tmp_path / "token")
    args = [*collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                            {"train": jsonl}, "--max-batch-points", "400"),
            "--tensorboard", f"tb={logdir}", "--exit-when-idle", "--loglevel", "WARNING"]
    for hit in (3, 7):  # killed twice at the same step, a few batches apart
        crashed = subprocess.run(args, capture_output=True, text=True, timeout=120,
                                 check=False,
                                 env={**os.environ, "TUNEPLANE_COLLECTOR_FAILPOINTS":
                                      f"{point}={hit}"})
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    finished = run_collector(args)
    assert finished.returncode == 0, finished.stderr
    assert await wait_for_points(db, run_id, 2 * STEPS) == 2 * STEPS
    await asyncio.sleep(1.0)  # a late duplicate would show now
    points = await curve_points(db, run_id)
    assert_exact(points, {("loss", s): s / 3 for s in range(STEPS)}, "rank-0", "train")
    assert_exact(points, {("acc", s): float(np.float32(s / 7)) for s in range(STEPS)},
                 "rank-0", "tb")


def test_a_misspelt_failpoint_is_a_clear_error() -> None:
    from tuneplane.collector.failpoints import parse
    assert parse("seal=3, ack=1") == {"seal": 3, "ack": 1}
    for bad in ("sael=3", "seal", "seal=0", "seal=x"):
        with pytest.raises(ValueError, match="is not POINT=N"):
            parse(bad)
