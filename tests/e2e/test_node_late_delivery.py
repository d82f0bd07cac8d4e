"""Late delivery by the node agent, end to end on the real services: a launch runs while
ingest is down, so its collector leaves every batch in the spool and the launch ends
reporting them left. The agent, restarted once ingest is back, gets a deliver-only
credential from Node control and delivers every point once; the launch is reported again
with nothing left, and the run page lists the batches as late."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import asyncpg

from tests.support.environment import Endpoints, free_port
from tests.support.kafka import projected_to_end
from tests.support.nodes import Node, agent, launch, launch_states
from tests.support.processes import Process, launch_env, start_control, start_ingest
from tests.support.readmodels import curve_points, wait_for_points
from tuneplane.web.read import listings

LINES = 3000
WRITE = "\n".join([
    "import json, time",
    "with open('metrics.jsonl', 'w') as out:",
    f"    for s in range({LINES}):",
    "        line = {'step': s, 'wall_time': 1.0 + s, 'metrics': {'loss': s / 4}}",
    "        out.write(json.dumps(line) + '\\n')",
    f"        if s % {LINES // 3} == 0:",  # a few rounds of reading: a few batches
    "            out.flush()",
    "            time.sleep(1.5)"])
INTEGRATION = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"}]}


def wait_for(said: Path, words: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while words not in (said.read_text() if said.exists() else ""):
        assert process.poll() is None, words
        assert time.monotonic() < deadline, words
        time.sleep(0.1)


async def test_the_node_agent_delivers_what_a_launch_left_once_ingest_is_back(
        initialised: Endpoints, projector: Process, tls_dir: Path, collector_artifact: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    ingest_port = free_port()  # nothing listens there until the launch has ended
    env = {**launch_env(ingest_port, tmp_path / "spool", collector_artifact),
           "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "2"}
    control = start_control(tls_dir, free_port(), tmp_path / "control.log", env,
                            "--heartbeat-seconds", "1")
    try:
        node = Node(control, tls_dir, tmp_path)
        launch(initialised, run_id, node, tmp_path, "rank-0",
               command=[sys.executable, "-c", WRITE], artifact=INTEGRATION)
        node.run_launches(1, tmp_path / "agent.log")
        (ended,) = launch_states(run_id)
        assert (ended["state"], ended["exit_code"]) == ("finished", 0), ended
        left = ended["undelivered"]
        assert isinstance(left, int), ended
        assert left > 0, ended
        launch_dir = node.state / "launches" / str(ended["launch_id"])
        note = json.loads((launch_dir / "late-delivery.json").read_text())
        assert note["batches"] == left
        assert await curve_points(db, run_id) == []  # nothing reached ingest
        # Restarted, the agent delivers what the note says; ingest comes back meanwhile.
        with (tmp_path / "agent-again.log").open("wb") as out:
            again = subprocess.Popen(
                [*agent(), "run", "--state-dir", str(node.state), "--work-root",
                 str(node.work), "--allow-same-user", "--exit-when-delivered"],
                stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(launch_dir / "delivery.log", "asking ingest for the member's checkpoints",
                     again)
            ingest = start_ingest(initialised, tls_dir, ingest_port, tmp_path / "ingest.log")
            try:
                assert again.wait(timeout=240) == 0, (tmp_path / "agent-again.log").read_text()
            finally:
                ingest.stop()
        finally:
            again.kill()
    finally:
        control.stop()
    said = (tmp_path / "agent-again.log").read_text()
    assert "what it left in its spool is delivered" in said, said
    assert not (launch_dir / "late-delivery.json").exists()
    assert not (launch_dir / "delivery-token").exists()
    (reported,) = launch_states(run_id)
    assert reported["undelivered"] == 0, reported
    assert f"the {left} batches left in the spool" in str(reported["detail"]), reported
    assert await wait_for_points(db, run_id, LINES) == LINES
    await projected_to_end(initialised.kafka_bootstrap)  # a duplicate would be stored by now
    steps = [step for _, _, _, step, _ in await curve_points(db, run_id)]
    assert sorted(steps) == list(range(LINES))  # each once
    late = await listings.late(db, run_id, 1, 100)
    assert len(late) == left
    assert sum(b["points"] for b in late) == LINES
