"""A full launch on localhost: enroll a node, create a run, the node agent starts the
training job with a collector beside it, tokens renew mid-run, curves arrive exactly; and
training run as a separate user reads none of the node's credentials, its launches taking
turns on that one user."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.support.environment import ROOT, Endpoints, free_port
from tests.support.nodes import Node, enrolled_node, launch, launch_states
from tests.support.processes import Process, launch_env, start_control
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.users import SYSTEM_PYTHON, public_place, readable_copy, system_user

STEPS = 3000
TRAINING = [sys.executable, str(ROOT / "examples" / "train_tensorboard.py"), "--steps",
            str(STEPS), "--seconds", "8"]
SOURCES = [{"id": "tb", "kind": "tensorboard", "path": "tb", "owner": "rank-0"},
           {"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"},
           {"id": "eval", "kind": "jsonl", "path": "eval.jsonl", "owner": "rank-1"}]
INTEGRATION = {"version": 1, "sources": SOURCES}


@pytest.fixture
def control(initialised: Endpoints, ingest: Process, tls_dir: Path, collector_artifact: Path,
            tmp_path: Path) -> Iterator[Process]:
    process = start_control(tls_dir, free_port(), tmp_path / "control.log",
                            launch_env(ingest.port, tmp_path / "spool", collector_artifact),
                            "--workload-token-ttl", "4", "--heartbeat-seconds", "1")
    yield process
    process.stop()


async def test_a_launch_runs_training_beside_a_collector_and_curves_arrive_exactly(
        initialised: Endpoints, control: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    node = Node(control, tls_dir, tmp_path)
    started = launch(initialised, run_id, node, tmp_path, "rank-0", "rank-1",
                     command=TRAINING, artifact=INTEGRATION)
    assert started["attempt"] == 1
    agent_log = tmp_path / "agent.log"
    node.run_launches(2, agent_log, "--allow-same-user", "--share-run-as")  # both at once
    states = launch_states(run_id)
    assert [(s["member"], s["state"], s["exit_code"], s["undelivered"]) for s in states] == [
        ("rank-0", "finished", 0, 0), ("rank-1", "finished", 0, 0)], states
    assert await db.fetchval("SELECT state FROM attempts WHERE run_id = $1", run_id) == \
        "finished"
    log = agent_log.read_text()
    assert log.count("workload token renewed") >= 2, log  # 8 s of training, 4 s tokens
    assert await wait_for_points(db, run_id, 3 * STEPS) == 3 * STEPS
    truth = {("rank-0", "tb", "loss", s, s / 4) for s in range(STEPS)} | {
        ("rank-0", "train", "acc", s, s / 8) for s in range(STEPS)} | {
        ("rank-1", "eval", "score", s, s / 2) for s in range(STEPS)}
    points = await curve_points(db, run_id)
    assert len(points) == len(truth)  # nothing duplicated
    assert set(points) == truth       # nothing lost or altered
    for launch_dir in (node.state / "launches").iterdir():
        assert (launch_dir.stat().st_mode & 0o077) == 0
        assert (launch_dir / "token").stat().st_mode & 0o077 == 0


async def test_a_tampered_collector_artifact_refuses_the_launch(
        initialised: Endpoints, ingest: Process, tls_dir: Path, collector_artifact: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    tampered = tmp_path / "artifacts" / collector_artifact.name
    shutil.copytree(collector_artifact, tampered, symlinks=True)
    with (tampered / "tuneplane-collector").open("ab") as binary:
        binary.write(b"\0")  # one byte more
    control = start_control(tls_dir, free_port(), tmp_path / "control.log",
                            launch_env(ingest.port, tmp_path / "spool", tampered))
    try:
        node = Node(control, tls_dir, tmp_path)
        launch(initialised, run_id, node, tmp_path, "rank-0", command=TRAINING,
               artifact=INTEGRATION)
        node.run_launches(1, tmp_path / "agent.log")
    finally:
        control.stop()
    (state,) = launch_states(run_id)
    assert state["state"] == "refused"
    assert "tuneplane-collector does not match its sha256 (tampered)" in str(state["detail"])
    assert await db.fetchval("SELECT state FROM attempts WHERE run_id = $1", run_id) == "failed"
    (launch_dir,) = (node.state / "launches").iterdir()
    assert not (launch_dir / "training.log").exists()  # the training command never started
    assert not (tmp_path / "spool").exists()            # nor was anything spooled


#: What the hostile training command tries, each of which must fail with EACCES.
FORBIDDEN = ("node credential", "own token", "own trust bundle", "own launch record",
             "launches", "other launch", "other token", "spool root", "spool",
             "spool database", "agent environment", "agent descriptors", "agent memory",
             "own log, reopened", *(f"{process} {what}" for process in (
                 "collector", "collector reader") for what in (
                 "environment", "descriptors", "memory", "working directory")))


async def test_training_run_as_another_user_reads_no_credential_and_curves_arrive_exactly(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        collector_artifact: Path, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 2000
    with system_user() as user, public_place() as place:
        # Another tenant's metrics, which only the agent's user (root) may read: the
        # artifact names them, the collector opens sources as the training user.
        theirs = place / "theirs" / "metrics.jsonl"
        theirs.parent.mkdir(mode=0o700)
        theirs.write_text("".join(json.dumps({"step": s, "wall_time": 1.7e9, "metrics": {
            "secret": 1.0}}) + "\n" for s in range(10)))
        artifact = {"version": 1, "sources": [
            *SOURCES[1:],
            {"id": "stolen", "kind": "jsonl", "path": str(theirs), "owner": "rank-0"}]}
        # State and spool where every user may pass by their parents: only their own modes
        # keep the training user out.
        with enrolled_node(tls_dir, ingest, collector_artifact, place,
                           tmp_path / "control.log") as node:
            program = readable_copy(Path(__file__).with_name("hostile_training.py"), place)
            started = launch(initialised, run_id, node, tmp_path, "rank-0", "rank-1", command=[
                str(SYSTEM_PYTHON), str(program), "--state", str(node.state), "--spool-root",
                str(place / "spool"), "--steps", str(steps)], artifact=artifact)
            node.run_launches(2, tmp_path / "agent.log", "--run-as", user.pw_name)
        ids = started["launches"]
        assert isinstance(ids, list)
        assert ids[1] == ids[0] + 1  # the program finds its neighbour's launch so
        states = launch_states(run_id)
        assert [(s["member"], s["state"], s["exit_code"]) for s in states] == [
            ("rank-0", "finished", 0), ("rank-1", "finished", 0)], states
        # One user: the launches took turns on it (no --share-run-as).
        agent_log = (tmp_path / "agent.log").read_text()
        assert agent_log.count(": waiting for a free run-as user: the only one is busy") == 1, \
            agent_log
        for launch_id in ids:
            workdir = node.work / str(launch_id)  # the agent's again once the launch ended
            assert (workdir.stat().st_uid, workdir.stat().st_mode & 0o777) == (os.geteuid(),
                                                                               0o700)
            seen = json.loads((workdir / "attempts.json").read_text())
            assert seen["workdir"] == {"uid": user.pw_uid, "mode": 0o700}  # while it ran
            assert (seen["uid"], seen["euid"], seen["gid"]) == (user.pw_uid, user.pw_uid,
                                                                user.pw_gid)
            assert seen["groups"] == [user.pw_gid]  # none of the agent's groups
            assert seen["cwd"] == str(workdir)
            assert seen["descriptors"] == [0, 1, 2]  # nothing inherited but its output
            environment: dict[str, str] = seen["environment"]
            assert not [k for k, v in environment.items() if str(node.state) in v
                        or str(place / "spool") in v or "token" in k.lower()]
            assert set(environment) <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME",
                                        "USER", "LOGNAME", "PWD", "TUNEPLANE_RUN_ID",
                                        "TUNEPLANE_ATTEMPT", "TUNEPLANE_MEMBER",
                                        "TUNEPLANE_PROJECT"}
            tried = seen["attempts"]
            assert sorted(tried) == sorted(FORBIDDEN)  # its collector was found and tried
            for name in FORBIDDEN:
                assert tried[name]["errno"] == errno.EACCES, (launch_id, name, tried[name])
                path = Path(tried[name]["path"])
                assert path.parts[1] == "proc" or path.exists(), (name, path)  # not a typo
        collector_log = (node.state / "launches" / str(ids[0]) / "collector.log").read_text()
        assert f"source stolen: refused: {theirs} cannot be opened as {user.pw_name}: " \
            "Permission denied" in collector_log
        for launch_dir in (node.state / "launches").iterdir():
            for path in (launch_dir, *launch_dir.iterdir()):
                info = path.stat()
                assert (info.st_uid, info.st_mode & 0o077) == (os.geteuid(), 0), path
        assert await wait_for_points(db, run_id, 2 * steps) == 2 * steps
        truth = {("rank-0", "train", "acc", s, s / 8) for s in range(steps)} | {
            ("rank-1", "eval", "score", s, s / 2) for s in range(steps)}
        points = await curve_points(db, run_id)
        assert len(points) == len(truth)
        assert set(points) == truth
