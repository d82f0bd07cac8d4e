"""``tuneplane-control``: clear startup errors, help, and launches refused with a reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.control import cli as control
from tests.support.environment import BIN, Endpoints, free_port
from tests.support.processes import launch_env


def test_help_explains_each_command() -> None:
    done = control("--help")
    assert done.returncode == 0
    for command in ("serve", "enrollment-token", "launch", "launches", "nodes", "node-revoke"):
        assert command in done.stdout
    serve = control("serve", "--help").stdout
    assert "--max-concurrent-rpcs" in serve
    assert "--db-pool-size" in serve
    assert "--node-calls-per-second" in serve


@pytest.mark.parametrize(("drop", "artifact", "words"), [
    ("TUNEPLANE_TELEMETRY_TARGET", "0" * 64, "TUNEPLANE_TELEMETRY_TARGET is not set"),
    ("TUNEPLANE_TELEMETRY_SPOOL_ROOT", "0" * 64, "TUNEPLANE_TELEMETRY_SPOOL_ROOT is not set"),
    ("", "latest", "must name a content-addressed artifact directory"),
])
def test_serve_refuses_to_start_without_what_launches_need(
        initialised: Endpoints, tls_dir: Path, tmp_path: Path, drop: str, artifact: str,
        words: str) -> None:
    env = launch_env(8444, tmp_path / "spool", tmp_path / artifact)
    env = {**{k: v for k, v in os.environ.items() if k != drop},
           **{k: v for k, v in env.items() if k != drop}}
    done = subprocess.run([str(BIN / "tuneplane-control"), "serve", "--port", str(free_port()),
                           "--tls-dir", str(tls_dir)], capture_output=True, text=True, env=env,
                          check=False, timeout=60)
    assert done.returncode == 2
    assert words in done.stderr


def test_a_launch_for_an_unknown_run_or_node_says_which(initialised: Endpoints) -> None:
    done = control("launch", "--run", "no-such-run", "--node", "n", "--member", "rank-0", "--",
                   "true")
    assert done.returncode == 2
    assert "no enrolled node 'n'" in done.stderr
    done = control("enrollment-token", "--node", "bad name!")
    assert done.returncode == 2
    assert "node name 'bad name!'" in done.stderr
