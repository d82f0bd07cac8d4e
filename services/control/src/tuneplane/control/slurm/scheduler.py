"""The Slurm cluster as control sees it, through the cluster's own client commands.

``sbatch`` submits (the script on its standard input, the environment exactly what control
gives it, never control's own nor a launch's: sbatch runs as control's user, and a PATH or
LD_PRELOAD given to it would choose what runs there), and ``squeue --json --states=all``
shows every job the controller still remembers (``MinJobAge`` after it ended). A job the
controller no longer shows is unknown. The commands run with a time limit, at most a few at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from tuneplane.control.jobs import SchedulerError, Shown
from tuneplane.controlplane.job_follow import JobSeen

log = logging.getLogger("tuneplane.control.slurm")


class SlurmError(SchedulerError):
    """A Slurm command failed or could not run; the message says which and why."""


class Slurm:
    def __init__(self, *, timeout: float = 30.0, at_once: int = 4,
                 environ: Mapping[str, str]) -> None:
        self._timeout = timeout
        self._slots = asyncio.Semaphore(at_once)
        self._base = dict(environ)  # ControlSettings.slurm_client_environment

    async def _run(self, args: Sequence[str], *, stdin: bytes | None = None,
                   env: Mapping[str, str] | None = None) -> str:
        async with self._slots:
            try:
                process = await asyncio.create_subprocess_exec(
                    *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, env={**self._base, **(env or {})})
            except OSError as exc:
                raise SlurmError(f"{args[0]}: {exc.strerror or exc}; is Slurm's client on "
                                 "control's PATH?") from None
            try:
                out, err = await asyncio.wait_for(process.communicate(stdin), self._timeout)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise SlurmError(f"{args[0]} did not answer within {self._timeout:.0f} s"
                                 ) from None
        if process.returncode != 0:
            raise SlurmError(f"{args[0]} failed ({process.returncode}): "
                             f"{err.decode(errors='replace').strip()[-2000:]}")
        return out.decode(errors="replace")

    async def submit(self, script: str, options: Sequence[str],
                     environment: Mapping[str, str]) -> str:
        """Submit ``script`` with sbatch's ``options``; the job's id."""
        out = await self._run(["sbatch", "--parsable", "--export=ALL", *options],
                              stdin=script.encode(), env=environment)
        job_id = out.strip().split(";")[0]
        if not job_id.isdigit():
            raise SlurmError(f"sbatch answered {out.strip()!r}, not a job id")
        return job_id

    async def jobs(self) -> dict[str, Shown]:
        """Every job the controller shows, by job id.

        squeue that could not reach the controller still exits 0, its ``errors`` saying
        so beside no jobs: that is an error, never an empty cluster (where every launch's
        job would have vanished and its attempt failed)."""
        document = json.loads(await self._run(["squeue", "--json", "--states=all"]))
        errors = document.get("errors") or []
        if errors:
            raise SlurmError("squeue: " + "; ".join(
                f"{e.get('description', '')} ({e.get('source', '')}: {e.get('error', '')})"
                if isinstance(e, dict) else str(e) for e in errors)[:2000])
        return {str(job["job_id"]): Shown(str(job.get("name", "")),
                                          int(job.get("user_id", -1)), seen(job))
                for job in document.get("jobs", [])}

    async def job(self, job_id: str) -> JobSeen | None:
        found = (await self.jobs()).get(job_id)
        return None if found is None else found.seen

    async def release(self, job_id: str) -> None:
        """Let a job submitted held (``sbatch --hold``) run."""
        await self._run(["scontrol", "release", job_id])

    async def cancel(self, job_id: str) -> None:
        await self._run(["scancel", job_id])


def seen(job: Mapping[str, Any]) -> JobSeen:
    return JobSeen(str(job.get("job_state", "")), int(job.get("restart_cnt", 0) or 0),
                   str(job.get("state_reason", "") or ""), exit_code(job.get("exit_code")),
                   str(job.get("comment", "") or ""))


def exit_code(status: object) -> str:
    """squeue's exit code (a wait status) as Slurm words it: ``code:signal``; "" for 0."""
    if not isinstance(status, int) or status == 0:
        return ""
    return f"{status >> 8 & 0xFF}:{status & 0x7F}"
