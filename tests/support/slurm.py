"""Slurm launches on the local cluster ``scripts/slurm`` starts: a control serving Slurm
jobs, runs launched as Slurm jobs, and how they went."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.environment import BIN, Endpoints, free_port, run_admin
from tests.support.nodes import control_cli
from tests.support.processes import Process, launch_env, start_control


def cluster() -> str:
    """SLURM_CONF of the running local cluster, or the test fails saying how to start it."""
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or not Path(conf).exists():
        pytest.fail("SLURM_CONF is not set: start the cluster with "
                    "`eval \"$(scripts/slurm up)\"`", pytrace=False)
    return conf


def slurm(*args: str) -> str:
    cluster()
    done = subprocess.run(list(args), capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
    return done.stdout


@contextmanager
def slurm_control(tls_dir: Path, ingest: Process, artifact: Path, place: Path,
                  *extra: str, env: dict[str, str] | None = None) -> Iterator[Process]:
    """A control service with its Slurm backend on, spool root ``place``/spool."""
    cluster()
    port = free_port()
    process = start_control(tls_dir, port, place / "control.log",
                            {**launch_env(ingest.port, place / "spool", artifact),
                             **(env or {})},
                            "--slurm", "--slurm-control-address", f"localhost:{port}",
                            "--slurm-poll-seconds", "0.5", *extra)
    try:
        yield process
    finally:
        process.stop()


def launch(endpoints: Endpoints, run_id: str, place: Path, artifact: dict[str, object],
           command: list[str], *options: str) -> dict[str, object]:
    """Create the run and launch it as a Slurm job; what control answers."""
    integration = place / f"integration-{run_id}.json"
    integration.write_text(json.dumps(artifact))
    run_admin(endpoints, "run-create", "--integration", str(integration), "--run", run_id)
    started: dict[str, object] = json.loads(control_cli(
        "launch", "--backend", "slurm", "--run", run_id, *options, "--", *command))
    return started


def launch_of(run_id: str) -> dict[str, object]:
    (row,) = [json.loads(line) for line in control_cli("launches", "--run", run_id)
              .splitlines()]
    return row


def wait_for(run_id: str, *, job_state: tuple[str, ...] = (), ended: bool = False,
             seconds: float = 180.0) -> dict[str, object]:
    """The run's Slurm launch once its job is in one of ``job_state`` (or has ended)."""
    deadline, row = time.monotonic() + seconds, {}
    while time.monotonic() < deadline:
        row = launch_of(run_id)
        if (ended and row["state"] == "ended") or row["job_state"] in job_state:
            return row
        time.sleep(0.25)
    raise AssertionError(f"launch of {run_id} not {'ended' if ended else job_state} after "
                         f"{seconds:.0f} s: {row}")


def job_output(job_id: object, workdir: Path = Path("/tmp")) -> str:
    path = workdir / f"tuneplane-{job_id}.out"
    return path.read_text(errors="replace") if path.exists() else f"({path} missing)"


def collectors_of(row: dict[str, object]) -> list[dict[str, object]]:
    found = row["collectors"]
    assert isinstance(found, list)
    return found


__all__ = ["BIN", "collectors_of", "job_output", "launch", "launch_of", "slurm",
           "slurm_control", "wait_for"]
