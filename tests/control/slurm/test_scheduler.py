"""What control makes of Slurm's client commands' answers (stand-ins on its PATH)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tuneplane.control.settings import ControlSettings
from tuneplane.control.slurm.scheduler import Slurm, SlurmError, exit_code, seen
from tuneplane.controlplane.job_follow import JobSeen

#: What squeue 22.05 prints, exiting 0, when it cannot reach the controller.
UNREACHABLE = {"meta": {}, "errors": [{"description": "Failed while looking for jobs",
                                       "error_number": -1, "error": "Unspecified error",
                                       "source": "slurm_load_jobs"}], "jobs": []}


def squeue_printing(tmp_path: Path, document: object) -> Slurm:
    squeue = tmp_path / "squeue"
    squeue.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(document))})\n")
    squeue.chmod(0o755)
    return Slurm(environ={"PATH": str(tmp_path)})


async def test_squeue_that_could_not_look_for_jobs_is_an_error_not_an_empty_cluster(
        tmp_path: Path) -> None:
    """Taken for an empty cluster, every launch's job would have vanished: every running
    attempt of every tenant failed, at each restart of the controller."""
    with pytest.raises(SlurmError, match="Failed while looking for jobs"):
        await squeue_printing(tmp_path, UNREACHABLE).jobs()


async def test_squeue_answering_jobs_is_read(tmp_path: Path) -> None:
    shown = await squeue_printing(tmp_path, {"errors": [], "jobs": [
        {"job_id": 7, "name": "tuneplane-3", "user_id": 1000, "job_state": "RUNNING",
         "restart_cnt": 1, "exit_code": 256, "comment": "c"}]}).jobs()
    assert list(shown) == ["7"]
    job = shown["7"]
    assert (job.name, job.uid, job.seen.state, job.seen.restarts, job.seen.exit_code) == (
        "tuneplane-3", 1000, "RUNNING", 1, "1:0")


def test_a_job_as_squeue_shows_it() -> None:
    job = {"job_id": 29, "job_state": "FAILED", "restart_cnt": 1, "state_reason":
           "NonZeroExitCode", "exit_code": 256, "comment": "tuneplane: refused: why"}
    assert seen(job) == JobSeen("FAILED", 1, "NonZeroExitCode", "1:0", "tuneplane: refused: why")
    assert seen({"job_state": "PENDING", "restart_cnt": None, "comment": None}) == JobSeen(
        "PENDING", 0)


def test_exit_statuses_are_code_and_signal() -> None:
    assert [exit_code(s) for s in (0, None, "x", 256, 9, 15 | 256 * 2)] == [
        "", "", "", "1:0", "0:9", "2:15"]


def test_slurms_commands_get_none_of_controls_own_environment() -> None:
    settings = ControlSettings.from_environ({
        "PATH": "/usr/bin", "SLURM_CONF": "/etc/slurm.conf", "LANG": "C",
        "TUNEPLANE_DATABASE_URL": "postgresql://secret", "TUNEPLANE_WEB_JWT_SECRET": "s" * 32,
        "HOME": "/root", "TUNEPLANE_COLLECTOR_MOUNT_TABLE": "/etc/mt",
        "TUNEPLANE_COLLECTORX": "no"})
    assert settings.slurm_client_environment == {"PATH": "/usr/bin", "LANG": "C",
                                                 "SLURM_CONF": "/etc/slurm.conf"}
    assert settings.collector_environment == {"TUNEPLANE_COLLECTOR_MOUNT_TABLE": "/etc/mt"}
    assert Slurm(environ=settings.slurm_client_environment)._base == \
        settings.slurm_client_environment
