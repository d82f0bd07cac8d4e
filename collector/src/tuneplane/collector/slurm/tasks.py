"""The training tasks of a job on this node, which a collector outlives.

When Slurm ends a job (scancel, time limit, preemption) it signals the collectors and the
training tasks at once; a collector that read its sources to the end at once could miss
the last lines a task wrote in the moment before the signal reached it. So on SIGTERM the
collector first waits, a bounded while, until no task of its job runs on the node: the
processes of its user whose environment names a member (``TUNEPLANE_MEMBER``, which the job
script sets for each task) of its job (``SLURM_JOB_ID``). A task's children inherit both.
Processes whose environment cannot be read (undumpable, as the collectors are; gone) and
zombies (an empty environment) are not tasks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")
#: How long a collector waits for the tasks to end before it reads to the end regardless:
#: the rest of Slurm's KillWait is the drain's.
TASKS_GRACE = 10.0


def is_task(environ: bytes, job_id: str) -> bool:
    variables = environ.split(b"\0")
    return (f"SLURM_JOB_ID={job_id}".encode() in variables
            and any(v.startswith(b"TUNEPLANE_MEMBER=") for v in variables))


def training_tasks(job_id: str, proc: Path = PROC) -> list[int]:
    """The pids of the job's training tasks (and their children) on this node."""
    found = []
    me = os.getuid()
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != me:
                continue
            environ = Path(entry.path, "environ").read_bytes()
        except OSError:  # exited, or not ours to read
            continue
        if is_task(environ, job_id):
            found.append(int(entry.name))
    return sorted(found)


def wait_until_ended(job_id: str, seconds: float = TASKS_GRACE, *, proc: Path = PROC,
                     clock: Callable[[], float] = time.monotonic) -> list[int]:
    """Wait until no training task of the job runs here, at most ``seconds``; the tasks
    still running then (none once they all ended)."""
    deadline = clock() + seconds
    while (left := training_tasks(job_id, proc)) and clock() < deadline:
        time.sleep(0.05)
    return left
