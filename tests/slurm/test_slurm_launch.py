"""Runs launched as Slurm jobs on the local cluster: a collector per node from the verified
artifact, its credentials redeemed once and held in memory, the attempt following the job,
curves arriving exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import asyncpg

from tests.support.environment import ROOT, Endpoints
from tests.support.processes import Process
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.slurm import collectors_of, job_output, launch, slurm_control, wait_for

STEPS = 2000
#: Each task writes below its member's directory (rank-0/, rank-1/) of the node's workdir.
TRAINING = ["/bin/sh", "-c", f'exec "{sys.executable}" '
            f'"{ROOT / "examples" / "train_tensorboard.py"}" --out "$TUNEPLANE_MEMBER" '
            '--steps "$0" --seconds "$1"']
INTEGRATION = {"version": 1, "sources": [
    {"id": "tb-0", "kind": "tensorboard", "path": "rank-0/tb", "owner": "rank-0"},
    {"id": "train", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"},
    {"id": "tb-1", "kind": "tensorboard", "path": "rank-1/tb", "owner": "rank-1"},
    {"id": "eval", "kind": "jsonl", "path": "rank-1/eval.jsonl", "owner": "rank-1"}]}


def truth(steps: int) -> set[tuple[str, str, str, int, float]]:
    return {(f"rank-{r}", f"tb-{r}", "loss", s, s / 4) for r in (0, 1) for s in range(steps)} | {
        ("rank-0", "train", "acc", s, s / 8) for s in range(steps)} | {
        ("rank-1", "eval", "score", s, s / 2) for s in range(steps)}


async def test_a_two_task_job_delivers_both_members_exactly_and_completes(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        collector_artifact: Path, tmp_path: Path, run_id: str,
        db: asyncpg.Connection) -> None:
    with slurm_control(tls_dir, ingest, collector_artifact, tmp_path,
                       "--workload-token-ttl", "6"):
        started = launch(initialised, run_id, tmp_path, INTEGRATION,
                         [*TRAINING, str(STEPS), "8"], "--tasks-per-node", "2",
                         "--spool-root", str(tmp_path / "spool"))
        assert started["members"] == ["rank-0", "rank-1"]
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"])
    assert (row["job_state"], row["attempt_state"]) == ("COMPLETED", "finished"), (row, output)
    (collector,) = collectors_of(row)
    assert (collector["undelivered"], collector["reported"], collector["refused"]) == (
        0, True, None), row
    assert "tuneplane-collector: node 0 drained; 0 batches left in the spool" in output
    assert output.count("credentials renewed") >= 1, output  # 8 s of training, 6 s tokens
    expected = truth(STEPS)
    assert await wait_for_points(db, run_id, len(expected)) == len(expected)
    points = await curve_points(db, run_id)
    assert len(points) == len(expected)
    assert set(points) == expected
