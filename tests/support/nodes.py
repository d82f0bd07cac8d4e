"""An enrolled node agent (the static binary's ``node``) on this host for end-to-end tests,
and the control commands that launch on it and list how its launches went."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import collector_binary
from tests.support.environment import BIN, Endpoints, free_port, run_admin
from tests.support.processes import Process, launch_env, start_control


def control_cli(*args: str) -> str:
    done = subprocess.run([str(BIN / "tuneplane-control"), *args], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def agent() -> list[str]:
    """The node agent: this host's static collector binary, ``node``."""
    return [*collector_binary.command(collector_binary.HOST_TARGET), "node"]


class Node:
    """An enrolled node: its state directory and the agent's command."""

    def __init__(self, control: Process, tls_dir: Path, place: Path) -> None:
        self.name = f"host-{uuid.uuid4().hex[:8]}"
        self.state = place / "node"
        self.work = place / "work"
        token = place / "enrollment-token"
        token.write_text(control_cli("enrollment-token", "--node", self.name))
        done = subprocess.run(
            [*agent(), "enroll", "--control", f"localhost:{control.port}",
             "--ca-file", str(tls_dir / "ca.pem"), "--token-file", str(token),
             "--state-dir", str(self.state)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr

    def run_launches(self, count: int, log: Path, *run_as: str) -> None:
        """Run ``count`` launches, ``run_as`` the agent's flags saying who training runs as
        (default: the agent's own user, one launch at a time)."""
        with log.open("wb") as out:
            done = subprocess.run([*agent(), "run", "--state-dir",
                                   str(self.state), "--work-root", str(self.work),
                                   *(run_as or ("--allow-same-user",)),
                                   "--exit-after", str(count)],
                                  stdout=out, stderr=subprocess.STDOUT, timeout=240, check=False)
        assert done.returncode == 0, log.read_text()


@contextmanager
def enrolled_node(tls_dir: Path, ingest: Process, artifact: Path, place: Path,
                  log: Path) -> Iterator[Node]:
    """A node in ``place`` enrolled with a Node control of its own (1 s heartbeats, spool
    root ``place``/spool), which stops afterwards."""
    control = start_control(tls_dir, free_port(), log,
                            launch_env(ingest.port, place / "spool", artifact),
                            "--heartbeat-seconds", "1")
    try:
        yield Node(control, tls_dir, place)
    finally:
        control.stop()


def launch(endpoints: Endpoints, run_id: str, node: Node, place: Path,
           *members: str, command: list[str], artifact: dict[str, object]) -> dict[str, object]:
    """Create the run with ``artifact`` and launch ``command`` for its ``members`` on the
    node; what control answers (the attempt, the launch ids)."""
    integration = place / f"integration-{run_id}.json"
    integration.write_text(json.dumps(artifact))
    run_admin(endpoints, "run-create", "--integration", str(integration),
              "--run", run_id)
    member_args = [arg for m in members for arg in ("--member", m)]
    started: dict[str, object] = json.loads(control_cli(
        "launch", "--run", run_id, "--node", node.name, *member_args, "--", *command))
    return started


def launch_states(run_id: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in control_cli("launches", "--run", run_id).splitlines()]
