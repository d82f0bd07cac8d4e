"""What control's batch-job backends share (Slurm, Kubernetes): the loop that submits queued
launches and follows their jobs.

Each pass submits what is queued (the launch claimed ``submitting`` first, so two controls
never submit it twice, and a launch left ``submitting`` by a control that stopped is found
again among the scheduler's jobs rather than submitted twice) and brings every submitted
launch to what the scheduler shows (``job_follow.follow``). A job whose attempt ended
here (an editor's end, another attempt begun) while the job still waits or runs is
cancelled: it must not hold its nodes with no attempt of its own. A backend says how to
submit, list and cancel; the launches it handles are those of its ``scheduler``.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg

from tuneplane.controlplane import job_follow, runs
from tuneplane.controlplane.job_follow import VANISHED, JobSeen

log = logging.getLogger("tuneplane.control.jobs")

#: A launch ``submitting`` for longer than this was left so by a control that stopped.
STALE_SUBMISSION = 60.0


class SchedulerError(RuntimeError):
    """The scheduler could not be asked, or refused; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Shown:
    """A job as its scheduler shows it: its name, whose it is, and its state."""

    name: str
    uid: int
    seen: JobSeen


class Tickets(Protocol):
    def issue_ticket(self, launch_id: int, ttl_seconds: int) -> str: ...


class JobBackend(abc.ABC):
    #: The launches' ``scheduler`` this backend submits and follows.
    scheduler: str

    def __init__(self, pool: asyncpg.Pool, *, poll_seconds: float = 2.0) -> None:
        self._pool = pool
        self._poll = poll_seconds
        self._tickets: Tickets | None = None

    def serve(self, tickets: Tickets) -> None:
        """The job control service whose tickets the jobs carry (and redeem)."""
        self._tickets = tickets

    def ticket(self, launch_id: int, ttl_seconds: int) -> str:
        if self._tickets is None:
            raise SchedulerError("no job control service issues the launches' tickets")
        return self._tickets.issue_ticket(launch_id, ttl_seconds)

    @abc.abstractmethod
    async def jobs(self) -> Mapping[str, Shown]:
        """Every job of this control's launches the scheduler shows, by job id."""

    async def job(self, job_id: str) -> JobSeen | None:
        """One job as the scheduler shows it now (what redemption asks), or None."""
        found = (await self.jobs()).get(job_id)
        return None if found is None else found.seen

    @abc.abstractmethod
    async def submit_job(self, row: dict[str, Any], jobs: Mapping[str, Shown]) -> str:
        """Submit the launch ``row`` (or find the job a stopped control left for it among
        ``jobs``); its job id."""

    @abc.abstractmethod
    async def cancel(self, job_id: str) -> None: ...

    @abc.abstractmethod
    async def submitted(self, job_id: str) -> None:
        """Called once a job's id is stored: let the job run (Slurm releases its held job,
        Kubernetes resumes its suspended Job)."""

    async def ending(self, launch_id: int, job_id: str, seen: JobSeen) -> None:
        """Called before the follow that ends a launch whose job has ended: what the
        scheduler says of the job is stored first, so that an ended attempt is never shown
        without it. Slurm keeps nothing of the kind: nothing to do."""
        return None

    @abc.abstractmethod
    async def shown(self, launch_id: int, job_id: str, seen: JobSeen, state: str) -> None:
        """Called after each follow with what the scheduler showed and the attempt's state
        (a job still held is released again, say)."""

    async def run(self) -> None:
        """Pass after pass until cancelled; a failing pass is logged and retried (whatever
        failed: this task ending would leave every launch unfollowed, silently)."""
        while True:
            try:
                await self.step()
            except (SchedulerError, OSError, asyncpg.PostgresError) as exc:
                log.warning("%s backend pass failed, retrying: %s", self.scheduler, exc)
            except Exception:
                log.exception("%s backend pass failed, retrying", self.scheduler)
            await asyncio.sleep(self._poll)

    async def step(self) -> None:
        async with self._pool.acquire() as conn:
            queued = await conn.fetch(
                "SELECT l.*, r.project FROM slurm_launches l JOIN runs r USING (run_id) WHERE "
                "l.scheduler = $2 AND (l.state = 'queued' OR (l.state = 'submitting' AND "
                "l.submitted_at < now() - make_interval(secs => $1))) ORDER BY l.launch_id",
                STALE_SUBMISSION, self.scheduler)
            live = await conn.fetch("SELECT launch_id, job_id FROM slurm_launches WHERE "
                                    "state = 'submitted' AND scheduler = $1 ORDER BY launch_id",
                                    self.scheduler)
        jobs = await self.jobs() if queued or live else {}
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

    def unseen(self, job_id: str) -> bool:
        """Whether the last ``jobs`` could not look where ``job_id`` is (a job missing from it
        then has not vanished: it is followed in a later pass)."""
        return False

    async def _follow(self, launch_id: int, job_id: str, jobs: Mapping[str, Shown]) -> None:
        found = jobs.get(job_id)
        if found is None and self.unseen(job_id):
            return
        seen = found.seen if found else JobSeen(VANISHED, 0, comment=f"the {self.scheduler} "
                                                "scheduler no longer shows the job")
        if found is None:
            log.error("launch %d: the scheduler no longer shows job %s", launch_id, job_id)
        if seen.state in job_follow.ENDS:
            await self.ending(launch_id, job_id, seen)
        async with self._pool.acquire() as conn:
            state = await job_follow.follow(conn, launch_id, seen)
        await self.shown(launch_id, job_id, seen, state)
        if found is not None and (seen.running or seen.state == "PENDING") and \
                state not in runs.LIVE_STATES:
            log.warning("launch %d: attempt ended (%s) while job %s is %s; cancelling the job",
                        launch_id, state, job_id, seen.state)
            await self.cancel(job_id)

    async def _submit(self, row: dict[str, Any], jobs: Mapping[str, Shown]) -> None:
        launch_id = int(row["launch_id"])
        async with self._pool.acquire() as conn:
            claimed = await conn.fetchval(
                "UPDATE slurm_launches SET state = 'submitting', submitted_at = now() WHERE "
                "launch_id = $1 AND state = $2 RETURNING 1", launch_id, row["state"])
        if claimed is None:
            return  # another control took it
        try:
            job_id = await self.submit_job(row, jobs)
            async with self._pool.acquire() as conn:
                await conn.execute("UPDATE slurm_launches SET state = 'submitted', job_id = $2 "
                                   "WHERE launch_id = $1", launch_id, job_id)
        except (SchedulerError, ValueError) as exc:
            log.error("launch %d: not submitted: %s", launch_id, exc)
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.execute("UPDATE slurm_launches SET state = 'ended', ended_at = now(), "
                                   "detail = $2 WHERE launch_id = $1", launch_id,
                                   f"not submitted: {exc}"[:4000])
                # Unless an editor ended it meanwhile (its end stands).
                if await job_follow.attempt_state(
                        conn, row["run_id"], row["attempt"]) in runs.LIVE_STATES:
                    await runs.end_attempt(conn, row["run_id"], row["attempt"], "failed")
            return
        log.info("launch %d: %s attempt %d submitted to %s as job %s", launch_id,
                 row["run_id"], row["attempt"], self.scheduler, job_id)
        await self.submitted(job_id)
