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

pytestmark = pytest.mark.usefixtures("slurm_cluster")

RANKS = "rank-{rank}"  # how task N names its member, unless the artifact says otherwise


def integration(name: str = RANKS) -> dict[str, object]:
    """Task N writes below its member's directory of its node's working directory
    (tests/slurm/training.py): the sources rank 0 and rank 1 own."""
    zero, one = (name.replace("{rank}", str(rank)) for rank in (0, 1))
    document: dict[str, object] = {"version": 1, "sources": [
        {"id": "tb-0", "kind": "tensorboard", "path": f"{zero}/tb", "owner": zero},
        {"id": "train", "kind": "jsonl", "path": f"{zero}/metrics.jsonl", "owner": zero},
        {"id": "tb-1", "kind": "tensorboard", "path": f"{one}/tb", "owner": one},
        {"id": "eval", "kind": "jsonl", "path": f"{one}/eval.jsonl", "owner": one}]}
    if name != RANKS:
        document["members"] = {"rank": name}
    return document


INTEGRATION = integration()
TWO_TASKS = ("--tasks-per-node", "2")


@pytest.fixture
def who(collector_artifact: Path, tls_dir: Path) -> Iterator[Tenant]:
    with tenant(collector_artifact, tls_dir) as found:
        yield found


def written(workdir: Path, name: str = RANKS) -> set[tuple[str, str, str, int, float]]:
    """Every point the tasks wrote to the files the collectors read, as the files hold them
    (TensorBoard's own loader for the event files; complete JSONL lines)."""
    zero, one = (name.replace("{rank}", str(rank)) for rank in (0, 1))
    found: set[tuple[str, str, str, int, float]] = set()
    for rank, member in enumerate((zero, one)):
        for (_, tag), points in tensorboard_runs(workdir / member / "tb").items():
            found |= {(member, f"tb-{rank}", tag, step, value) for step, _, value in points}
    for member, source, file, tag in ((zero, "train", "metrics.jsonl", "acc"),
                                      (one, "eval", "eval.jsonl", "score")):
        for line in (workdir / member / file).read_text().splitlines(keepends=True):
            if line.endswith("\n"):
                record = json.loads(line)
                found.add((member, source, tag, record["step"], record["metrics"][tag]))
    return found


def truth(steps: int, name: str = RANKS) -> set[tuple[str, str, str, int, float]]:
    zero, one = (name.replace("{rank}", str(rank)) for rank in (0, 1))
    return {(m, f"tb-{r}", "loss", s, s / 4) for r, m in enumerate((zero, one))
            for s in range(steps)} | {(zero, "train", "acc", s, s / 8) for s in range(steps)} | {
        (one, "eval", "score", s, s / 2) for s in range(steps)}


async def assert_stored_exactly(db: asyncpg.Connection, run_id: str,
                                expected: set[tuple[str, str, str, int, float]],
                                attempt: int | None = None) -> None:
    assert await wait_for_points(db, run_id, len(expected), attempt=attempt) == len(expected)
    points = await curve_points(db, run_id, attempt)
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


async def test_a_spool_root_the_nodes_users_share_as_tmp_is_holds_each_user_below_its_uid(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """Root's, sticky and writable by all: a user's first job makes <root>/<uid> its own,
    and no user's job makes the root itself theirs (which would refuse every other's)."""
    shared = who.place / "shared-spool"
    shared.mkdir()
    shared.chmod(0o1777)
    steps = 200
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log"):
        launch(initialised, run_id, who, INTEGRATION, ["--steps", str(steps)], *TWO_TASKS,
               "--spool-root", str(shared))
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("COMPLETED", "finished"), (row, output)
    info = shared.stat()
    assert (info.st_uid, info.st_mode & 0o7777) == (0, 0o1777)  # still everyone's
    mine = shared / str(who.user.pw_uid)
    assert (mine.stat().st_uid, mine.stat().st_mode & 0o777) == (who.user.pw_uid, 0o700)
    assert sorted(p.name for p in (mine / run_id / "1").iterdir()) == [
        "rank-0", "rank-1", "telemetry-ca.pem"]
    await assert_stored_exactly(db, run_id, truth(steps))


async def test_a_two_node_job_has_a_collector_per_node_each_reading_its_nodes_member(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 1000
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log"):
        launch(initialised, run_id, who, INTEGRATION, ["--steps", str(steps), "--seconds", "4"],
               "--nodes", "2", "--tasks-per-node", "1")
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("COMPLETED", "finished"), (row, output)
    assert sorted((c["node"], c["attempt"], c["undelivered"], c["reported"])
                  for c in collectors_of(row)) == [(0, 1, 0, True), (1, 1, 0, True)], row
    for node, member in ((0, "rank-0"), (1, "rank-1")):
        assert f"ready attempt=1 node={node} members={member}" in output, output
        assert f"tuneplane-collector: node {node} drained; 0 batches left" in output, output
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
    with (tampered / "tuneplane-collector").open("ab") as binary:
        binary.write(b"\0")  # one byte more
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log", artifact=tampered):
        launch(initialised, run_id, who, INTEGRATION, ["--steps", "100"], *TWO_TASKS)
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt_state"]) == ("FAILED", "failed"), (row, output)
    assert "collector artifact refused: " in str(row["detail"]), row
    assert "tuneplane-collector does not match its sha256 (tampered)" in str(row["detail"]), row
    assert collectors_of(row) == []  # nothing of the artifact ran: no ticket was redeemed
    assert not who.spool_root.exists()
    assert not who.workdir(row["job_id"]).exists()


async def test_training_tasks_reach_none_of_the_jobs_credentials(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 1000
    workers = "worker{rank}"  # the artifact names the tasks' members
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log") as control:
        started = launch(initialised, run_id, who, integration(workers), [
            "--steps", str(steps), "--seconds", "6", "--try-credentials",
            f"localhost:{control.port}", str(who.ca_file), str(who.artifact)], *TWO_TASKS)
        assert started["members"] == ["worker0", "worker1"]
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
    await assert_stored_exactly(db, run_id, truth(steps, workers))


async def test_a_preempted_job_ends_its_attempt_preempted_and_runs_again_as_the_next(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        who: Tenant, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 1000
    with slurm_control(tls_dir, ingest, who, tmp_path / "control.log"):
        launch(initialised, run_id, who, INTEGRATION, [
            "--steps", str(steps), "--seconds", "4", "--first-start-seconds", "90"],
            *TWO_TASKS)
        first = wait_for(run_id, job_state=("RUNNING",))
        assert await wait_for_points(db, run_id, 300, attempt=1) >= 300
        # A job of the urgent partition needs every CPU of the cluster: Slurm preempts ours
        # and requeues it.
        slurm("sbatch", "--partition=urgent", "--nodes=2", "--ntasks-per-node=2",
              "--output=/dev/null", "--wrap", "sleep 2")
        requeued = wait_for(run_id, restarts=1)
        assert requeued["attempt"] == 2
        states = await db.fetch("SELECT attempt, state FROM attempts WHERE run_id = $1 "
                                "ORDER BY attempt", run_id)
        assert [tuple(r) for r in states] in ([(1, "preempted"), (2, "pending")],
                                              [(1, "preempted"), (2, "running")])
        slurm("scontrol", "update", f"JobId={first['job_id']}", "StartTime=now")  # no delay
        row = wait_for(run_id, ended=True)
    output = job_output(row["job_id"], who.scratch)
    assert (row["job_state"], row["attempt"], row["attempt_state"]) == (
        "COMPLETED", 2, "finished"), (row, output)
    states = await db.fetch("SELECT attempt, state FROM attempts WHERE run_id = $1 "
                            "ORDER BY attempt", run_id)
    assert [tuple(r) for r in states] == [(1, "preempted"), (2, "finished")]
    by_start = {(c["restart"], c["attempt"]) for c in collectors_of(row)}
    assert by_start == {(0, 1), (1, 2)}, row  # each start's collector redeemed its own
    assert "tuneplane-collector: ready attempt=2 node=0" in output
    # The first start's points, as its tasks wrote them before the preemption; the second
    # start's, whole, as the next attempt.
    before = written(who.workdir(row["job_id"]))
    assert 300 <= len(before) < len(truth(steps))  # the preemption cut the first start short
    await assert_stored_exactly(db, run_id, before, attempt=1)
    second = who.workdir(row["job_id"], start=1)
    assert written(second) == truth(steps)
    await assert_stored_exactly(db, run_id, truth(steps), attempt=2)
