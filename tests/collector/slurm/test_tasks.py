"""A Slurm job's collector finds its job's training tasks on the node (real processes) and
waits for them to end before its last read."""

from __future__ import annotations

import os
import subprocess
import time
import uuid

from tuneplane.collector.slurm import tasks


def start(job_id: str, member: str | None) -> subprocess.Popen[bytes]:
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": job_id,
           **({"TUNEPLANE_MEMBER": member} if member else {})}
    return subprocess.Popen(["sleep", "60"], env=env)


def test_the_jobs_tasks_are_found_and_waited_for_and_no_other_process() -> None:
    job, other = uuid.uuid4().hex, uuid.uuid4().hex
    task, child_of_another_job, not_a_task = start(job, "rank-0"), start(other, "rank-0"), \
        start(job, None)
    try:
        found = tasks.training_tasks(job)
        assert found == [task.pid]  # another job's task and the job's collector are not
        started = time.monotonic()
        assert tasks.wait_until_ended(job, 0.3) == [task.pid]  # still running: bounded
        assert time.monotonic() - started >= 0.3
        task.kill()
        task.wait()  # reaped: gone from /proc (a zombie, reading no environment, is not)
        assert tasks.wait_until_ended(job, 5.0) == []
    finally:
        for process in (task, child_of_another_job, not_a_task):
            process.kill()
            process.wait()


def test_an_environment_names_a_task_only_with_both_variables() -> None:
    assert tasks.is_task(b"A=1\0SLURM_JOB_ID=12\0TUNEPLANE_MEMBER=rank-3\0", "12")
    assert not tasks.is_task(b"SLURM_JOB_ID=123\0TUNEPLANE_MEMBER=rank-3\0", "12")
    assert not tasks.is_task(b"SLURM_JOB_ID=12\0", "12")
    assert not tasks.is_task(b"", "12")
