"""The collector killed at each step a batch goes through (read, seal, send, ACK, delete),
then started again: the delivered curves equal the sources exactly."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from tests.support import collector_binary
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import assert_exact, pieces
from tuneplane.telemetry.v1.identity import MemberKey

STEPS = 5_000

#: The steps a batch goes through, where the failpoints build can be made to die.
POINTS = ("read", "seal", "send", "ack", "delete")


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
                            {"train": jsonl}, "--max-batch-points", "400",
                            command=[str(collector_binary.failpoints_binary())]),
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
    await projected_to_end(initialised.kafka_bootstrap)  # a late duplicate would show by now
    points = await curve_points(db, run_id)
    assert_exact(points, {("loss", s): s / 3 for s in range(STEPS)}, "rank-0", "train")
    assert_exact(points, {("acc", s): float(np.float32(s / 7)) for s in range(STEPS)},
                 "rank-0", "tb")


@pytest.mark.parametrize("bad", ["sael=3", "seal", "seal=0", "seal=x", "seal=3,ack"])
def test_a_misspelt_failpoint_is_a_clear_error(tmp_path: Path, bad: str) -> None:
    args = collector_args(1, tmp_path, tmp_path / "token", MemberKey("r", 1, "rank-0"),
                          tmp_path / "spool", {"train": tmp_path / "m.jsonl"},
                          command=[str(collector_binary.failpoints_binary())])
    refused = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False,
                             env={**os.environ, "TUNEPLANE_COLLECTOR_FAILPOINTS": bad})
    assert refused.returncode == 2, refused.stderr
    item = bad.split(",")[-1]
    assert f"TUNEPLANE_COLLECTOR_FAILPOINTS has '{item}', which is not POINT=N" in refused.stderr
    assert not (tmp_path / "spool").exists()


def test_a_release_build_refuses_failpoints_rather_than_ignore_them(tmp_path: Path) -> None:
    args = collector_args(1, tmp_path, tmp_path / "token", MemberKey("r", 1, "rank-0"),
                          tmp_path / "spool", {"train": tmp_path / "m.jsonl"})
    refused = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False,
                             env={**os.environ, "TUNEPLANE_COLLECTOR_FAILPOINTS": "seal=1"})
    assert refused.returncode == 2, refused.stderr
    assert "this build has no failpoints" in refused.stderr
