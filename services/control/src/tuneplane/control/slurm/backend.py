"""Control's Slurm backend: submits queued Slurm launches and follows their jobs.

Each pass (``jobs.JobBackend``) submits what is queued (``sbatch --hold``, the job id stored,
then released: no collector of the job can ask for its credentials before control knows the
job) and brings every submitted launch to what ``squeue`` shows. A launch left
``submitting`` by a control that stopped mid-submission is found again by its job name
rather than submitted twice (among the jobs of the project's user only).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from tuneplane.control.jobs import JobBackend, Shown
from tuneplane.control.slurm import jobscript
from tuneplane.control.slurm.scheduler import Slurm, SlurmError
from tuneplane.control.slurm.users import JobUser, JobUsers
from tuneplane.controlplane.job_follow import JobSeen

log = logging.getLogger("tuneplane.control.slurm")

#: How long a job script's ticket can wait in the queue and still be redeemed.
TICKET_TTL = 30 * 86400


@dataclass(frozen=True, slots=True)
class Reach:
    """How a job's collectors reach control and run: what every job script carries."""

    control: str
    server_name: str
    control_ca_pem: str
    artifact: Path
    collector_environment: Mapping[str, str]
    users: JobUsers


class SlurmBackend(JobBackend):
    scheduler = "slurm"

    def __init__(self, pool: asyncpg.Pool, slurm: Slurm, reach: Reach, *,
                 poll_seconds: float = 2.0) -> None:
        super().__init__(pool, poll_seconds=poll_seconds)
        self._slurm = slurm
        self._reach = reach

    async def job(self, job_id: str) -> JobSeen | None:
        return await self._slurm.job(job_id)

    async def jobs(self) -> Mapping[str, Shown]:
        return await self._slurm.jobs()

    async def cancel(self, job_id: str) -> None:
        await self._slurm.cancel(job_id)

    async def shown(self, launch_id: int, job_id: str, seen: JobSeen, state: str) -> None:
        if seen.state == "PENDING" and seen.reason == "JobHeldUser":
            await self.submitted(job_id)

    async def submit_job(self, row: dict[str, Any], jobs: Mapping[str, Shown]) -> str:
        user = self._reach.users.of(row["project"])
        return earlier_job(row, user, jobs) or await self._slurm.submit(*self._job(row, user))

    async def submitted(self, job_id: str) -> None:
        """Let the held job run (a failure is retried while it shows held)."""
        try:
            await self._slurm.release(job_id)
        except SlurmError as exc:
            log.warning("job %s not released yet: %s", job_id, exc)

    def _job(self, row: Mapping[str, Any],
             user: JobUser) -> tuple[str, list[str], dict[str, str]]:
        """The script, sbatch's options and the job's environment for a launch's row."""
        options = json.loads(row["options"])
        reach = self._reach
        job = jobscript.Job(
            launch_id=int(row["launch_id"]), run_id=row["run_id"], nodes=row["nodes"],
            tasks_per_node=row["tasks_per_node"], command=json.loads(row["command"]),
            workdir=options.get("workdir", ""), spool_root=row["spool_root"],
            artifact=reach.artifact,
            ticket=self.ticket(int(row["launch_id"]), TICKET_TTL),
            control=reach.control, server_name=reach.server_name,
            control_ca_pem=reach.control_ca_pem,
            collector_environment=reach.collector_environment,
            environment=json.loads(row["environment"]),
            member_template=row["member_template"])
        # sbatch's (run by control, as root): never the launch's, which the script exports.
        environment = {**user.environment(), "TUNEPLANE_RUN_ID": row["run_id"],
                       "TUNEPLANE_PROJECT": row["project"]}
        return (jobscript.render(job),
                ["--hold", *user.sbatch_options(), *jobscript.sbatch_options(
                    job, partition=options.get("partition", ""),
                    time_limit=options.get("time_limit", ""),
                    requeue=bool(options.get("requeue", True)))], environment)


def earlier_job(row: Mapping[str, Any], user: JobUser, jobs: Mapping[str, Shown]) -> str | None:
    """The job a control that stopped mid-submission left for a ``submitting`` launch: one
    of the project's user, named after the launch. Never for a launch still ``queued``, nor
    another user's job: anyone may name a job ``tuneplane-<next launch id>``, and taken for
    the launch's job it would decide another tenant's attempt while the launch never ran."""
    if row["state"] != "submitting":
        return None
    name = f"tuneplane-{row['launch_id']}"
    return next((job_id for job_id, job in jobs.items()
                 if job.name == name and job.uid == user.uid), None)
