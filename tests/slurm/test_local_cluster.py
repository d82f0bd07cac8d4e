"""The local Slurm cluster scripts/slurm starts (the one the Slurm backend's tests use):
a batch job's two tasks run and it ends COMPLETED, one on each of two nodes when asked; a
cancelled job ends CANCELLED."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.slurm import slurm

pytestmark = pytest.mark.usefixtures("slurm_cluster")


def state_of(job: str, seconds: float = 60.0, *, until: tuple[str, ...]) -> str:
    """The job's state once it is one of ``until``."""
    deadline, state = time.monotonic() + seconds, ""
    while time.monotonic() < deadline:
        state = slurm("scontrol", "show", "job", job).split("JobState=")[1].split()[0]
        if state in until:
            return state
        time.sleep(0.2)
    raise AssertionError(f"job {job} is {state}, not one of {until}, after {seconds:.0f} s")


def test_a_two_task_job_runs_both_ranks_and_completes(tmp_path: Path) -> None:
    job = slurm("sbatch", "--parsable", "-n", "2", "-o", str(tmp_path / "out"), "--wrap",
                "srun sh -c 'echo rank $SLURM_PROCID of $SLURM_NTASKS'", cwd=tmp_path).strip()
    assert state_of(job, until=("COMPLETED", "FAILED", "CANCELLED")) == "COMPLETED"
    assert sorted((tmp_path / "out").read_text().splitlines()) == ["rank 0 of 2", "rank 1 of 2"]


def test_a_cancelled_job_ends_cancelled(tmp_path: Path) -> None:
    job = slurm("sbatch", "--parsable", "-o", str(tmp_path / "out"), "--wrap", "sleep 300",
                cwd=tmp_path).strip()
    assert state_of(job, until=("RUNNING",)) == "RUNNING"
    slurm("scancel", job)
    assert state_of(job, until=("CANCELLED", "COMPLETED", "FAILED")) == "CANCELLED"


def test_a_two_node_job_runs_a_task_on_each_node(tmp_path: Path) -> None:
    job = slurm("sbatch", "--parsable", "-N", "2", "--ntasks-per-node", "1", "-o",
                str(tmp_path / "out"), "--wrap", "srun sh -c 'echo $SLURM_NODEID $SLURMD_NODENAME'",
                cwd=tmp_path).strip()
    assert state_of(job, until=("COMPLETED", "FAILED", "CANCELLED")) == "COMPLETED"
    assert sorted((tmp_path / "out").read_text().splitlines()) == [
        "0 tuneplane-node", "1 tuneplane-node-2"]
