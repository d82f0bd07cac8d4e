"""Control's Slurm backend against a Slurm that shows what each test sets: what it submits,
and how one launch's trouble leaves every other launch followed."""

from __future__ import annotations

import asyncpg

from tests.support.slurm_fake import FakeSlurm, launch_row, queue
from tuneplane.control.jobs import Shown
from tuneplane.control.slurm.backend import SlurmBackend
from tuneplane.controlplane import runs
from tuneplane.controlplane.job_follow import JobSeen


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


async def test_a_job_named_after_a_queued_launch_is_never_taken_for_its_job(
        backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
        run_id: str) -> None:
    """Anyone may name a job ``tuneplane-<next launch id>``: taken for that launch's job,
    it would decide another tenant's attempt, and the launch's own job never be run."""
    launch_id = await queue(db, run_id)
    fake_slurm.shown["555"] = Shown(f"tuneplane-{launch_id}", 1234,
                                    JobSeen("PENDING", 0, "JobHeldUser"))
    await backend.step()
    row = await launch_row(db, launch_id)
    (ours,) = [job_id for job_id, job in fake_slurm.shown.items()
               if job.name == f"tuneplane-{launch_id}" and job_id != "555"]
    assert (row["state"], row["job_id"]) == ("submitted", ours)
    assert "555" not in fake_slurm.released
    fake_slurm.shown["555"] = Shown(f"tuneplane-{launch_id}", 1234,
                                    JobSeen("COMPLETED", 0, comment="all good"))
    await backend.step()
    assert (await launch_row(db, launch_id))["attempt_state"] == "pending"


async def test_a_submission_left_half_done_is_found_again_only_among_the_projects_jobs(
        backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
        run_id: str) -> None:
    """A control that stopped between sbatch and storing the job id left the launch
    ``submitting``: its job is found by name, but only a job of the project's user."""
    launch_id = await queue(db, run_id)
    await db.execute("UPDATE slurm_launches SET state = 'submitting', submitted_at = "
                     "now() - interval '1 hour' WHERE launch_id = $1", launch_id)
    held = JobSeen("PENDING", 0, "JobHeldUser")
    fake_slurm.shown["555"] = Shown(f"tuneplane-{launch_id}", 1234, held)
    fake_slurm.shown["556"] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid, held)
    await backend.step()
    assert (await launch_row(db, launch_id))["job_id"] == "556"
    assert [s for s in fake_slurm.submitted if run_id in s[0]] == []
    assert "556" in fake_slurm.released
    assert "555" not in fake_slurm.released


async def test_a_launch_that_cannot_be_followed_leaves_every_other_launch_followed(
        backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
        run_id: str) -> None:
    """An editor ends a Slurm launch's attempt and starts the run's next one; the job is
    then requeued, and its next start can have no attempt. That launch ends saying so; the
    launches after it are still followed, in the same pass."""
    first, other = await queue(db, run_id), await queue(db, run_id + "-other")
    await backend.step()
    jobs = {(await launch_row(db, launch_id))["job_id"]: launch_id
            for launch_id in (first, other)}
    await runs.end_attempt(db, run_id, 1, "cancelled")
    assert await runs.start_attempt(db, run_id) == 2
    for job_id, launch_id in jobs.items():
        fake_slurm.shown[job_id] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid,
                                         JobSeen("RUNNING", 1 if launch_id == first else 0))
    await backend.step()
    assert (await launch_row(db, other))["attempt_state"] == "running"
    ended = await launch_row(db, first)
    assert ended["state"] == "ended"
    assert "attempt 2 is running" in ended["detail"], ended
    attempts = await db.fetch("SELECT attempt, state FROM attempts WHERE run_id = $1 ORDER BY "
                              "attempt", run_id)
    assert [tuple(a) for a in attempts] == [(1, "cancelled"), (2, "running")]


async def test_a_launch_whose_attempt_an_editor_ended_ends_when_sbatch_refuses_it(
        backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
        run_id: str) -> None:
    launch_id = await queue(db, run_id)
    await runs.end_attempt(db, run_id, 1, "cancelled")
    fake_slurm.refusing = "sbatch: error: Batch job submission failed: Invalid partition"
    await backend.step()
    row = await launch_row(db, launch_id)
    assert (row["state"], row["attempt_state"]) == ("ended", "cancelled")
    assert "Invalid partition" in row["detail"]


async def test_a_job_whose_attempt_was_ended_by_hand_is_cancelled(
        backend: SlurmBackend, fake_slurm: FakeSlurm, db: asyncpg.Connection,
        run_id: str) -> None:
    """Ending the attempt (an editor, through the API) ends its job too: it must not hold
    its nodes, its tasks running on with no attempt to send to."""
    launch_id = await queue(db, run_id)
    await backend.step()
    job_id = (await launch_row(db, launch_id))["job_id"]
    fake_slurm.shown[job_id] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid,
                                     JobSeen("RUNNING", 0))
    await backend.step()
    assert fake_slurm.cancelled == []  # running, its attempt too
    await runs.end_attempt(db, run_id, 1, "cancelled")
    await backend.step()
    assert fake_slurm.cancelled == [job_id]
    fake_slurm.shown[job_id] = Shown(f"tuneplane-{launch_id}", fake_slurm.uid,
                                     JobSeen("CANCELLED", 0))
    await backend.step()
    assert fake_slurm.cancelled == [job_id]  # once: Slurm shows it ended
    assert tuple(await launch_row(db, launch_id))[:1] == ("ended",)
