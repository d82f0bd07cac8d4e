"""Runs launched as Slurm jobs on the local cluster, as an unprivileged user: a collector
per node from the artifact verified there, its credentials redeemed once and held where the
training tasks cannot reach them, the attempt following the job, curves arriving exactly."""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.support.environment import Endpoints
from tests.support.processes import Process
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.slurm import (
    Tenant,
    collectors_of,
    job_output,
    launch,
    slurm,
    slurm_control,
    tenant,
    wait_for,
)
from tests.support.truth import tensorboard_runs

#: Task i writes below rank-i/ of its node's working directory (tests/slurm/training.py).
INTEGRATION = {"version": 1, "sources": [
    {"id": "tb-0", "kind": "tensorboard", "path": "rank-0/tb", "owner": "rank-0"},
    {"id": "train", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"},
    {"id": "tb-1", "kind": "tensorboard", "path": "rank-1/tb", "owner": "rank-1"},
    {"id": "eval", "kind": "jsonl", "path": "rank-1/eval.jsonl", "owner": "rank-1"}]}
TWO_TASKS = ("--tasks-per-node", "2")


@pytest.fixture
def who(collector_artifact: Path, tls_dir: Path) -> Iterator[Tenant]:
    with tenant(collector_artifact, tls_dir) as found:
        yield found


def written(workdir: Path) -> set[tuple[str, str, str, int, float]]:
    """Every point the tasks wrote to the files the collectors read, as the files hold them
    (TensorBoard's own loader for the event files; complete JSONL lines)."""
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


def truth(steps: int) -> set[tuple[str, str, str, int, float]]:
    return {(f"rank-{r}", f"tb-{r}", "loss", s, s / 4) for r in (0, 1) for s in range(steps)} | {
        ("rank-0", "train", "acc", s, s / 8) for s in range(steps)} | {
        ("rank-1", "eval", "score", s, s / 2) for s in range(steps)}


async def assert_stored_exactly(db: asyncpg.Connection, run_id: str,
                                expected: set[tuple[str, str, str, int, float]]) -> None:
    assert await wait_for_points(db, run_id, len(expected)) == len(expected)
    points = await curve_points(db, run_id)
    assert len(points) == len(expected)  # nothing duplicated
    assert set(points) == expected        # nothing lost or altered


async def test_a_two_task_job_delivers_both_members_exactly_and_completes(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 2000
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log",
                       "--workload-token-ttl", "6"):
        started = launch(initialised, run_id, who, INTEGRATION,
                         ["--steps", str(steps), "--seconds", "8"], *TWO_TASKS)
        assert (started["attempt"], started["members"]) == (1, ["rank-0", "rank-1"])
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("COMPLETED", "finished"), (row, output)
    assert await db.fetchval("SELECT state FROM attempts WHERE run_id = $1", run_id) == \
        "finished"
    (collector,) = collectors_of(row)
    assert (collector["undelivered"], collector["reported"], collector["refused"]) == (
        0, True, None), row
    assert "tuneplane-collector: ready attempt=1 node=0 members=rank-0,rank-1" in output
    assert "tuneplane-collector: node 0 drained; 0 batches left in the spool" in output
    assert output.count("credentials renewed") >= 1, output  # 8 s of training, 6 s tokens
    workdir = who.workdir(row["job_id"])
    assert (workdir.stat().st_uid, workdir.stat().st_mode & 0o077) == (who.user.pw_uid, 0)
    for spool in who.spool_root.glob(f"{run_id}/1/rank-*"):
        assert (spool.stat().st_uid, spool.stat().st_mode & 0o777) == (who.user.pw_uid, 0o700)
    await assert_stored_exactly(db, run_id, truth(steps))


async def test_a_job_cancelled_mid_run_ends_cancelled_drained_with_every_point_written(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log"):
        launch(initialised, run_id, who, INTEGRATION,
               ["--steps", "100000", "--seconds", "300"], *TWO_TASKS)
        row = wait_for(run_id, job_state=("RUNNING",))
        assert await wait_for_points(db, run_id, 2000) >= 2000  # well into its run
        slurm("scancel", str(row["job_id"]))
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("CANCELLED", "cancelled"), (row, output)
    (collector,) = collectors_of(row)
    assert (collector["undelivered"], collector["reported"]) == (0, True), (row, output)
    assert "tuneplane-collector: node 0 drained; 0 batches left in the spool" in output
    expected = written(who.workdir(row["job_id"]))
    assert 2000 < len(expected) < 4 * 100000  # the cancel cut the tasks short
    await assert_stored_exactly(db, run_id, expected)


def mount_table_with(place: Path, fs_type: str, source: str) -> str:
    """This host's mount table with ``place`` mounted from ``source`` as ``fs_type``."""
    table = Path("/proc/self/mountinfo").read_text()
    return table + f"999 1 0:999 / {place} rw,relatime shared:999 - {fs_type} {source} rw\n"


async def test_a_spool_root_on_a_shared_filesystem_refuses_the_job_with_the_reason(
        initialised: Endpoints, ingest: Process, tls_dir: Path, who: Tenant, tmp_path: Path,
        run_id: str, db: asyncpg.Connection) -> None:
    table = who.place / "mountinfo"
    table.write_text(mount_table_with(who.scratch, "lustre", "10.0.0.1@tcp:/scratch"))
    table.chmod(0o644)
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log",
                       env={"TUNEPLANE_COLLECTOR_MOUNT_TABLE": str(table)}):
        launch(initialised, run_id, who, INTEGRATION, ["--steps", "100"], *TWO_TASKS)
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("FAILED", "failed"), (row, output)
    reason = (f"spool root refused: spool directory {who.spool_root} is on Lustre (lustre "
              f"10.0.0.1@tcp:/scratch at {who.scratch}); the spool must be on a host-local "
              "disk. Launch with --spool-root on a node-local directory")
    assert reason in str(row["detail"]), row
    (collector,) = collectors_of(row)
    assert reason in str(collector["refused"]), row  # the ticket is spent for this node
    assert not who.spool_root.exists()  # nothing was made there
    assert not who.workdir(row["job_id"]).exists()  # no task ever ran
    assert await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1",
                             run_id) == 0


async def test_a_tampered_collector_artifact_is_refused_on_the_compute_node(
        initialised: Endpoints, ingest: Process, tls_dir: Path, who: Tenant, tmp_path: Path,
        run_id: str) -> None:
    tampered = who.place / "tampered" / who.artifact.name
    shutil.copytree(who.artifact, tampered, symlinks=True)
    tampered.parent.chmod(0o755)
    launcher = tampered / "bin" / "cli.py"
    launcher.write_text(launcher.read_text() + "\nimport os  # an extra line\n")
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log", artifact=tampered):
        launch(initialised, run_id, who, INTEGRATION, ["--steps", "100"], *TWO_TASKS)
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("FAILED", "failed"), (row, output)
    assert "collector artifact refused: " in str(row["detail"]), row
    assert "bin/cli.py does not match its sha256 (tampered)" in str(row["detail"]), row
    assert collectors_of(row) == []  # nothing of the artifact ran: no ticket was redeemed
    assert not who.spool_root.exists()
    assert not who.workdir(row["job_id"]).exists()


async def test_training_tasks_reach_none_of_the_jobs_credentials(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 1000
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log") as control:
        launch(initialised, run_id, who, INTEGRATION, [
            "--steps", str(steps), "--seconds", "6", "--try-credentials",
            f"localhost:{control.port}", str(who.ca_file), str(who.artifact)], *TWO_TASKS)
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("COMPLETED", "finished"), (row, output)
    tried = json.loads((who.workdir(row["job_id"]) / "attempts.json").read_text())
    (pid,) = tried["collectors found"]  # its node's collector, found and tried
    for what in ("environment", "memory", "descriptors"):
        assert tried[f"collector {pid} {what}"].get("errno") == errno.EACCES, tried
    assert tried[f"collector {pid} ptrace"].get("errno") == errno.EPERM, tried
    assert tried["job script tickets"] == 1  # the script's ticket is there to read...
    (answer,) = tried["ticket redeemed"]     # ...and spent
    assert answer.startswith("refused: FAILED_PRECONDITION: "), tried
    assert "its ticket was already redeemed" in answer, tried
    assert (tried["environment tokens"], tried["token files"]) == ([], []), tried
    assert len(collectors_of(row)) == 1  # the thief's redemption left no collector row
    await assert_stored_exactly(db, run_id, truth(steps))
