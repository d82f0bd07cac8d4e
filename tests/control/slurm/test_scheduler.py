"""What control reads of squeue's JSON: a job's state, restarts, reason, comment and exit
status as Slurm words them; and what of control's environment a job may see."""

from __future__ import annotations

from tuneplane.control.slurm.scheduler import PASSED_ON, Slurm, exit_code, seen
from tuneplane.controlplane.slurm_launches import JobSeen


def test_a_job_as_squeue_shows_it() -> None:
    job = {"job_id": 29, "job_state": "FAILED", "restart_cnt": 1, "state_reason":
           "NonZeroExitCode", "exit_code": 256, "comment": "tuneplane: refused: why"}
    assert seen(job) == JobSeen("FAILED", 1, "NonZeroExitCode", "1:0", "tuneplane: refused: why")
    assert seen({"job_state": "PENDING", "restart_cnt": None, "comment": None}) == JobSeen(
        "PENDING", 0)


def test_exit_statuses_are_code_and_signal() -> None:
    assert [exit_code(s) for s in (0, None, "x", 256, 9, 15 | 256 * 2)] == [
        "", "", "", "1:0", "0:9", "2:15"]


def test_a_job_sees_none_of_controls_own_environment() -> None:
    slurm = Slurm(environ={"PATH": "/usr/bin", "SLURM_CONF": "/etc/slurm.conf", "LANG": "C",
                           "TUNEPLANE_DATABASE_URL": "postgresql://secret",
                           "TUNEPLANE_WEB_JWT_SECRET": "secret", "HOME": "/root"})
    assert slurm._base == {"PATH": "/usr/bin", "SLURM_CONF": "/etc/slurm.conf", "LANG": "C"}
    assert set(PASSED_ON) == {"PATH", "LANG", "LC_ALL", "TZ", "SLURM_CONF"}
