"""Control's Slurm backend against a Slurm that shows what each test sets: what it submits,
and how one launch's trouble leaves every other launch followed."""

from __future__ import annotations

import asyncpg

from tests.control.slurm.conftest import FakeSlurm
from tests.support.control import new_run
from tuneplane.control.slurm.backend import SlurmBackend
from tuneplane.controlplane import slurm_launches
from tuneplane.controlplane.slurm_launches import JobOptions


async def queue(db: asyncpg.Connection, run_id: str, environment: dict[str, str] | None = None,
                nodes: int = 1) -> int:
    await new_run(db, run_id)
    _, launch_id = await slurm_launches.create(
        db, run_id, nodes=nodes, tasks_per_node=2, command=["python3", "train.py"],
        environment=environment or {}, spool_root="/tmp/spool", options=JobOptions())
    return launch_id


async def test_the_launch_environment_never_reaches_sbatch_run_by_control(
        backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
        run_id: str) -> None:
    """sbatch runs as control's user (root, to submit as the project's): a tenant's PATH
    would pick the program run, LD_PRELOAD load a library into it, SBATCH_* add options."""
    tenant = {"PATH": "/home/tenant/bin", "LD_PRELOAD": "/home/tenant/evil.so",
              "SBATCH_RESERVATION": "someone-elses", "MY_SETTING": "x"}
    await queue(db, run_id, tenant)
    await backend.step()
    ((script, _, environment),) = [s for s in fake_slurm.submitted if run_id in s[0]]
    assert not set(tenant) & set(environment), environment
    assert "export MY_SETTING=x" in script  # the training tasks' own
