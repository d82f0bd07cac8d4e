"""Slurm launches on the local cluster ``scripts/slurm`` starts: a control serving Slurm
jobs, runs launched as Slurm jobs, and how they went."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.environment import BIN, Endpoints, free_port, run_admin
from tests.support.nodes import control_cli
from tests.support.processes import Process, launch_env, start_control
from tests.support.users import SYSTEM_PYTHON, public_place, readable_copy, system_user


def cluster() -> str:
    """SLURM_CONF of the running local cluster, or the test fails saying how to start it."""
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or not Path(conf).exists():
        pytest.fail("SLURM_CONF is not set: start the cluster with "
                    "`eval \"$(scripts/slurm up)\"`", pytrace=False)
    return conf


def slurm(*args: str, cwd: Path | None = None) -> str:
    """A Slurm client command's output; the test fails with its error otherwise."""
    cluster()
    done = subprocess.run(list(args), capture_output=True, text=True, check=False, cwd=cwd,
                          timeout=60)
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
    return done.stdout


@dataclass(frozen=True)
class Tenant:
    """The unprivileged user a project's jobs run as, and what it may reach: the collector
    artifact and the training program (readable copies), a scratch directory of its own
    (the jobs' TMPDIR, below which the spool root is)."""

    user: pwd.struct_passwd
    place: Path
    artifact: Path
    training: Path
    ca_file: Path
    scratch: Path

    @property
    def spool_root(self) -> Path:
        return self.scratch / "spool"

    def workdir(self, job_id: object, start: int = 0) -> Path:
        """The tasks' working directory of a start of the job (the script's default,
        tuneplane-<job>-<start>-<random>), or a path that does not exist when none was
        made."""
        found = sorted(self.scratch.glob(f"tuneplane-{job_id}-{start}-*"))
        assert len(found) <= 1, found
        return found[0] if found else self.scratch / f"tuneplane-{job_id}-{start}-none"


@contextmanager
def tenant(artifact: Path, tls_dir: Path) -> Iterator[Tenant]:
    with system_user() as user, public_place() as place:
        copy = place / "artifacts" / artifact.name
        shutil.copytree(artifact, copy, symlinks=True)
        for path in (copy.parent, copy, *copy.rglob("*")):
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
        training = readable_copy(Path(__file__).parent.parent / "slurm" / "training.py", place)
        ca_file = readable_copy(tls_dir / "ca.pem", place)
        scratch = place / "scratch"
        scratch.mkdir(mode=0o700)
        os.chown(scratch, user.pw_uid, user.pw_gid)
        yield Tenant(user, place, copy, training, ca_file, scratch)


@contextmanager
def slurm_control(tls_dir: Path, ingest: Process | int, who: Tenant, log: Path, *extra: str,
                  env: dict[str, str] | None = None,
                  artifact: Path | None = None) -> Iterator[Process]:
    """A control service with its Slurm backend on, every project's jobs run as ``who``,
    their collectors sending to ``ingest`` (or to that port, where ingest may not be yet)."""
    cluster()
    port = free_port()
    target = ingest if isinstance(ingest, int) else ingest.port
    process = start_control(tls_dir, port, log,
                            {**launch_env(target, who.spool_root, artifact or who.artifact),
                             **(env or {})},
                            "--slurm", "--slurm-control-address", f"localhost:{port}",
                            "--slurm-poll-seconds", "0.5", "--slurm-run-as", who.user.pw_name,
                            *extra)
    try:
        yield process
    finally:
        process.stop()


def launch(endpoints: Endpoints, run_id: str, who: Tenant, artifact: dict[str, object],
           command: list[str], *options: str) -> dict[str, object]:
    """Create the run and launch ``command`` (the tenant's training program and its
    arguments) as a Slurm job of ``who``; what control answers."""
    integration = who.place / f"integration-{run_id}.json"
    integration.write_text(json.dumps(artifact))
    run_admin(endpoints, "run-create", "--integration", str(integration), "--run", run_id)
    started: dict[str, object] = json.loads(control_cli(
        "launch", "--backend", "slurm", "--run", run_id, "--env", f"TMPDIR={who.scratch}",
        "--spool-root", str(who.spool_root), *options, "--", str(SYSTEM_PYTHON),
        str(who.training), *command))
    return started


def launch_of(run_id: str) -> dict[str, object]:
    rows = [json.loads(line) for line in control_cli("launches", "--run", run_id).splitlines()]
    assert len(rows) == 1, rows
    row: dict[str, object] = rows[0]
    return row


def wait_for(run_id: str, *, job_state: tuple[str, ...] = (), ended: bool = False,
             restarts: int | None = None, seconds: float = 180.0) -> dict[str, object]:
    """The run's Slurm launch once its job is in one of ``job_state``, has ended, or has been
    requeued ``restarts`` times."""
    deadline, row = time.monotonic() + seconds, {}
    while time.monotonic() < deadline:
        row = launch_of(run_id)
        if (ended and row["state"] == "ended") or row["job_state"] in job_state or (
                restarts is not None and row["restarts"] == restarts):
            return row
        time.sleep(0.25)
    raise AssertionError(f"launch of {run_id} not {'ended' if ended else job_state} after "
                         f"{seconds:.0f} s: {row}")


def job_output(job_id: object, place: Path) -> str:
    """The job's output, in the files its script made below ``place`` (its TMPDIR), one per
    start of the job, in the order they were made."""
    found = sorted(place.glob(f"tuneplane-{job_id}.out.*"), key=lambda p: p.stat().st_mtime)
    return "".join(path.read_text(errors="replace") for path in found) if found else \
        f"(no output of job {job_id} in {place})"


def collectors_of(row: dict[str, object]) -> list[dict[str, object]]:
    found = row["collectors"]
    assert isinstance(found, list)
    return found


__all__ = ["BIN", "Tenant", "collectors_of", "job_output", "launch", "launch_of", "slurm",
           "slurm_control", "tenant", "wait_for"]
