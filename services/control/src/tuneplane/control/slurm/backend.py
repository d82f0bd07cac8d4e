"""Control's Slurm backend: submits queued Slurm launches and follows their jobs.

Each pass submits what is queued (``sbatch --hold``, the job id stored, then released: no
collector of the job can ask for its credentials before control knows the job) and brings
every submitted launch to what ``squeue`` shows (``slurm_launches.follow``). A launch left
``submitting`` by a control that stopped mid-submission is found again by its job name
rather than submitted twice (among the jobs of the project's user only).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from tuneplane.control.slurm import jobscript
from tuneplane.control.slurm.scheduler import Shown, Slurm, SlurmError
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.control.slurm.users import JobUser, JobUserError, JobUsers
from tuneplane.controlplane import runs, slurm_launches
from tuneplane.controlplane.slurm_launches import VANISHED, JobSeen

log = logging.getLogger("tuneplane.control.slurm")

#: How long a job script's ticket can wait in the queue and still be redeemed.
TICKET_TTL = 30 * 86400
#: A launch ``submitting`` for longer than this was left so by a control that stopped.
STALE_SUBMISSION = 60.0


@dataclass(frozen=True, slots=True)
class Reach:
    """How a job's collectors reach control and run: what every job script carries."""

    control: str
    server_name: str
    control_ca_pem: str
    artifact: Path
    collector_environment: Mapping[str, str]
    users: JobUsers


class SlurmBackend:
    def __init__(self, pool: asyncpg.Pool, slurm: Slurm, service: SlurmJobControl,
                 reach: Reach, *, poll_seconds: float = 2.0) -> None:
        self._pool = pool
        self._slurm = slurm
        self._service = service
        self._reach = reach
        self._poll = poll_seconds

    async def run(self) -> None:
        """Pass after pass until cancelled; a failing pass is logged and retried (whatever
        failed: this task ending would leave every launch unfollowed, silently)."""
        while True:
            try:
                await self.step()
            except (SlurmError, OSError, asyncpg.PostgresError) as exc:
                log.warning("Slurm backend pass failed, retrying: %s", exc)
            except Exception:
                log.exception("Slurm backend pass failed, retrying")
            await asyncio.sleep(self._poll)

    async def step(self) -> None:
        async with self._pool.acquire() as conn:
            queued = await conn.fetch(
                "SELECT l.*, r.project FROM slurm_launches l JOIN runs r USING (run_id) WHERE "
                "l.state = 'queued' OR (l.state = 'submitting' AND l.submitted_at < now() - "
                "make_interval(secs => $1)) ORDER BY l.launch_id", STALE_SUBMISSION)
            live = await conn.fetch("SELECT launch_id, job_id FROM slurm_launches WHERE "
                                    "state = 'submitted' ORDER BY launch_id")
        jobs = await self._slurm.jobs() if queued or live else {}
        # One launch's trouble (its row, its job) is its own: the others still go on.
        for row in queued:
            try:
                await self._submit(dict(row), jobs)
            except Exception:
                log.exception("launch %d: not submitted in this pass", row["launch_id"])
        for row in live:
            try:
                await self._follow(row["launch_id"], row["job_id"], jobs)
            except Exception:
                log.exception("launch %d: not followed in this pass", row["launch_id"])

    async def _follow(self, launch_id: int, job_id: str, jobs: Mapping[str, Shown]) -> None:
        found = jobs.get(job_id)
        seen = found.seen if found else JobSeen(VANISHED, 0,
                                              comment="Slurm no longer shows the job")
        if found is None:
            log.error("launch %d: Slurm no longer shows job %s", launch_id, job_id)
        elif seen.state == "PENDING" and seen.reason == "JobHeldUser":
            await self._release(job_id)
        async with self._pool.acquire() as conn:
            state = await slurm_launches.follow(conn, launch_id, seen)
        if found is not None and (seen.running or seen.state == "PENDING") and \
                state not in runs.LIVE_STATES:
            # Its attempt was ended here (an editor's end, another attempt begun): the job
            # must not hold its nodes, nor its tasks run on, with no attempt of its own.
            log.warning("launch %d: attempt ended (%s) while job %s is %s; cancelling the job",
                        launch_id, state, job_id, seen.state)
            await self._slurm.cancel(job_id)

    async def _submit(self, row: dict[str, Any], jobs: Mapping[str, Shown]) -> None:
        launch_id = int(row["launch_id"])
        async with self._pool.acquire() as conn:
            claimed = await conn.fetchval(
                "UPDATE slurm_launches SET state = 'submitting', submitted_at = now() WHERE "
                "launch_id = $1 AND state = $2 RETURNING 1", launch_id, row["state"])
        if claimed is None:
            return  # another control took it
        try:
            user = self._reach.users.of(row["project"])
            job_id = earlier_job(row, user, jobs) or await self._slurm.submit(
                *self._job(row, user))
            await self._stored(launch_id, job_id)
        except (SlurmError, JobUserError, ValueError) as exc:
            log.error("launch %d: not submitted: %s", launch_id, exc)
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.execute("UPDATE slurm_launches SET state = 'ended', ended_at = now(), "
                                   "detail = $2 WHERE launch_id = $1", launch_id,
                                   f"not submitted: {exc}"[:4000])
                # Unless an editor ended it meanwhile (its end stands).
                if await slurm_launches.attempt_state(
                        conn, row["run_id"], row["attempt"]) in runs.LIVE_STATES:
                    await runs.end_attempt(conn, row["run_id"], row["attempt"], "failed")
            return
        log.info("launch %d: %s attempt %d submitted as Slurm job %s", launch_id, row["run_id"],
                 row["attempt"], job_id)
        await self._release(job_id)

    async def _release(self, job_id: str) -> None:
        """Let the held job run (a failure is retried while it shows held)."""
        try:
            await self._slurm.release(job_id)
        except SlurmError as exc:
            log.warning("job %s not released yet: %s", job_id, exc)

    async def _stored(self, launch_id: int, job_id: str) -> None:
        async with self._pool.acquire() as conn:
            await conn.execute("UPDATE slurm_launches SET state = 'submitted', job_id = $2 "
                               "WHERE launch_id = $1", launch_id, job_id)

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
            ticket=self._service.issue_ticket(int(row["launch_id"]), TICKET_TTL),
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
