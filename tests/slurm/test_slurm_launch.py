"""Runs launched as Slurm jobs on the local cluster: a collector per node from the verified
artifact, its credentials redeemed once and held in memory, the attempt following the job,
curves arriving exactly."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import asyncpg

from tests.support.environment import ROOT, Endpoints
from tests.support.processes import Process
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.slurm import (
    collectors_of,
    job_output,
    launch,
    slurm,
    slurm_control,
    wait_for,
)
from tests.support.truth import tensorboard_runs

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


def written(workdir: Path) -> set[tuple[str, str, str, int, float]]:
    """Every point the tasks wrote to the files the collectors read, as the files hold them
    (TensorBoard's own loader for the event files; JSONL lines complete)."""
    found: set[tuple[str, str, str, int, float]] = set()
    for rank in (0, 1):
        for (_, tag), points in tensorboard_runs(workdir / f"rank-{rank}" / "tb").items():
            found |= {(f"rank-{rank}", f"tb-{rank}", tag, step, value)
                      for step, _, value in points}
    for member, source, name, tag in (("rank-0", "train", "metrics.jsonl", "acc"),
                                      ("rank-1", "eval", "eval.jsonl", "score")):
        for line in (workdir / member / name).read_text().splitlines(keepends=True):
            if line.endswith("\n"):
                record = json.loads(line)
                found.add((member, source, tag, record["step"], record["metrics"][tag]))
    return found


async def test_a_job_cancelled_mid_run_ends_cancelled_drained_with_every_point_written(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        collector_artifact: Path, tmp_path: Path, run_id: str,
        db: asyncpg.Connection) -> None:
    with slurm_control(tls_dir, ingest, collector_artifact, tmp_path):
        launch(initialised, run_id, tmp_path, INTEGRATION, [*TRAINING, "100000", "300"],
               "--tasks-per-node", "2", "--spool-root", str(tmp_path / "spool"))
        row = wait_for(run_id, job_state=("RUNNING",))
        assert await wait_for_points(db, run_id, 2000) >= 2000  # well into its run
        slurm("scancel", str(row["job_id"]))
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"])
    assert (row["job_state"], row["attempt_state"]) == ("CANCELLED", "cancelled"), (row, output)
    (collector,) = collectors_of(row)
    assert (collector["undelivered"], collector["reported"]) == (0, True), (row, output)
    assert "tuneplane-collector: node 0 drained; 0 batches left in the spool" in output
    expected = written(Path(f"/tmp/tuneplane-{row['job_id']}-0"))
    assert 2000 < len(expected) < 4 * 100000  # the cancel cut the tasks short
    assert await wait_for_points(db, run_id, len(expected)) == len(expected)
    points = await curve_points(db, run_id)
    assert len(points) == len(expected)
    assert set(points) == expected


def mount_table_with(place: Path, fs_type: str, source: str) -> str:
    """This host's mount table with ``place`` mounted from ``source`` as ``fs_type``."""
    table = Path("/proc/self/mountinfo").read_text()
    return table + f"999 1 0:999 / {place} rw,relatime shared:999 - {fs_type} {source} rw\n"


async def test_a_spool_root_on_a_shared_filesystem_refuses_the_job_with_the_reason(
        initialised: Endpoints, ingest: Process, tls_dir: Path, collector_artifact: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    shared = tmp_path / "lustre-scratch"  # a mount point, as the table says
    shared.mkdir()
    table = tmp_path / "mountinfo"
    table.write_text(mount_table_with(shared, "lustre", "10.0.0.1@tcp:/scratch"))
    with slurm_control(tls_dir, ingest, collector_artifact, tmp_path,
                       env={"TUNEPLANE_COLLECTOR_MOUNT_TABLE": str(table)}):
        launch(initialised, run_id, tmp_path, INTEGRATION, [*TRAINING, "100", "1"],
               "--tasks-per-node", "2", "--spool-root", str(shared / "spool"))
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"])
    assert (row["job_state"], row["attempt_state"]) == ("FAILED", "failed"), (row, output)
    reason = (f"spool root refused: spool directory {shared / 'spool'} is on Lustre (lustre "
              f"10.0.0.1@tcp:/scratch at {shared}); the spool must be on a host-local disk")
    assert reason in str(row["detail"]), row
    (collector,) = collectors_of(row)
    assert reason in str(collector["refused"]), row  # the ticket is spent for this node
    assert list(shared.iterdir()) == []  # nothing was made there
    assert not Path(f"/tmp/tuneplane-{row['job_id']}-0").exists()  # no task ever ran
    assert await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1",
                             run_id) == 0


async def test_a_tampered_collector_artifact_is_refused_on_the_compute_node(
        initialised: Endpoints, ingest: Process, tls_dir: Path, collector_artifact: Path,
        tmp_path: Path, run_id: str) -> None:
    tampered = tmp_path / "artifacts" / collector_artifact.name
    shutil.copytree(collector_artifact, tampered, symlinks=True)
    launcher = tampered / "bin" / "cli.py"
    launcher.write_text(launcher.read_text() + "\nimport os  # an extra line\n")
    with slurm_control(tls_dir, ingest, tampered, tmp_path):
        launch(initialised, run_id, tmp_path, INTEGRATION, [*TRAINING, "100", "1"],
               "--tasks-per-node", "2", "--spool-root", str(tmp_path / "spool"))
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"])
    assert (row["job_state"], row["attempt_state"]) == ("FAILED", "failed"), (row, output)
    assert "collector artifact refused: " in str(row["detail"]), row
    assert "bin/cli.py does not match its sha256 (tampered)" in str(row["detail"]), row
    assert collectors_of(row) == []  # nothing of the artifact ran: no ticket was redeemed
    assert not (tmp_path / "spool").exists()
    assert not Path(f"/tmp/tuneplane-{row['job_id']}-0").exists()
