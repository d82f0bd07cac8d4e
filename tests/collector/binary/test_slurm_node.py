"""``slurm-node`` before it holds anything: outside a Slurm step, with a malformed node id,
or traced (a tracer attached before it made itself undumpable would read the ticket), it
refuses on its standard output, where the job script reads the reason, and redeems
nothing. The whole path, with control and a real Slurm cluster, is tests/slurm's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.collector_binary import command
from tuneplane.contract.slurmlines import REFUSED

HOST = "x86_64-unknown-linux-musl"


def slurm_node(tmp_path: Path, env: dict[str, str], *wrapper: str,
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*wrapper, *command(HOST), "slurm-node", "--control", "localhost:1", "--launch", "1",
         "--spool-root", str(tmp_path / "spool"), "--workdir", str(tmp_path / "work")],
        input="a-ticket\n", capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": os.environ["PATH"], "TUNEPLANE_SLURM_CONTROL_CA": "", **env})


@pytest.mark.parametrize(("env", "said"), [
    ({}, "not run as a Slurm job step (SLURM_JOB_ID or SLURM_NODEID unset)"),
    ({"SLURM_JOB_ID": "7", "SLURM_NODEID": "first"},
     'SLURM_NODEID must be a whole number, got "first"'),
])
def test_outside_a_slurm_step_it_refuses_saying_why(tmp_path: Path, env: dict[str, str],
                                                    said: str) -> None:
    done = slurm_node(tmp_path, env)
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith(REFUSED), done.stdout
    assert said in done.stdout, done.stdout
    assert not (tmp_path / "spool").exists()


def test_a_collector_traced_from_its_start_holds_nothing(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    assert strace, "strace is needed (Debian's strace)"
    done = slurm_node(tmp_path, {"SLURM_JOB_ID": "7", "SLURM_NODEID": "0"}, strace, "-f",
                      "-o", str(tmp_path / "trace"))
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith(REFUSED), done.stdout
    assert "traces the collector; it holds no credential while traced" in done.stdout
    assert "a-ticket" not in (tmp_path / "trace").read_text()  # stdin was never read
    assert not (tmp_path / "spool").exists()
