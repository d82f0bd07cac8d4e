"""Two tenants' launches on one node with a pool of two run-as users: they run at once, each
as a user of its own, and neither training command can enter the other's working
directory, read a file in it, read the other's process or signal it; both runs' curves
arrive exactly."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import asyncpg

from tests.support.environment import Endpoints
from tests.support.nodes import enrolled_node, launch, launch_states
from tests.support.processes import Process
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.users import SYSTEM_PYTHON, public_place, readable_copy, system_user

ARTIFACT: dict[str, object] = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"},
    {"id": "eval", "kind": "jsonl", "path": "eval.jsonl", "owner": "rank-0"}]}
#: What each training command tries against the launch beside it, and the error it must get.
NEIGHBOUR = {"neighbour working directory": errno.EACCES, "neighbour file": errno.EACCES,
             "neighbour environment": errno.EACCES, "neighbour memory": errno.EACCES,
             "neighbour signal": errno.EPERM}


async def test_launches_on_a_two_user_pool_run_at_once_and_cannot_reach_each_other(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        collector_artifact: Path, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    steps = 2000
    runs = (run_id, f"{run_id}-b")
    with system_user() as first, system_user() as second, public_place() as place:
        with enrolled_node(tls_dir, ingest, collector_artifact, place,
                           tmp_path / "control.log") as node:
            program = readable_copy(Path(__file__).with_name("hostile_training.py"), place)
            ids: list[int] = []
            for run, offset in zip(runs, ("1", "-1"), strict=True):  # launch ids n, n + 1
                started = launch(initialised, run, node, tmp_path, "rank-0", command=[
                    str(SYSTEM_PYTHON), str(program), "--state", str(node.state),
                    "--spool-root", str(place / "spool"), "--steps", str(steps), "--seconds",
                    "8", "--neighbour-offset", offset], artifact=ARTIFACT)
                assert isinstance(started["launches"], list)
                ids += started["launches"]
            node.run_launches(2, tmp_path / "agent.log", "--run-as", first.pw_name,
                              "--run-as", second.pw_name)
        assert ids[1] == ids[0] + 1
        for run in runs:
            assert [(s["state"], s["exit_code"]) for s in launch_states(run)] == [
                ("finished", 0)], run
        assert "waiting for a free run-as user" not in (tmp_path / "agent.log").read_text()
        seen = {i: json.loads((node.work / str(i) / "attempts.json").read_text()) for i in ids}
        assert sorted(seen[i]["uid"] for i in ids) == sorted([first.pw_uid, second.pw_uid])
        for launch_id, other in zip(ids, reversed(ids), strict=True):
            mine = seen[launch_id]
            assert mine["workdir"] == {"uid": mine["uid"], "mode": 0o700}  # its own user's
            assert mine["neighbour seen"], launch_id  # the other ran beside it
            tried = mine["attempts"]
            for name, code in NEIGHBOUR.items():
                assert tried[name]["errno"] == code, (launch_id, name, tried[name])
            assert tried["neighbour working directory"]["path"] == str(node.work / str(other))
            assert Path(tried["neighbour file"]["path"]).exists()  # there, and not for it
            assert not [name for name, outcome in tried.items() if "errno" not in outcome]
        for run in runs:
            assert await wait_for_points(db, run, 2 * steps) == 2 * steps
            truth = {("rank-0", "train", "acc", s, s / 8) for s in range(steps)} | {
                ("rank-0", "eval", "score", s, s / 2) for s in range(steps)}
            points = await curve_points(db, run)
            assert len(points) == len(truth)  # nothing duplicated
            assert set(points) == truth       # nothing lost, altered or the other run's
