"""Retention per project (real PostgreSQL), with a clock the test controls: a project that
keeps its runs 30 days has each deleted 30 days after it ended, by ``retention``; a live
run never, another project's never, and a second pass deletes nothing more; a project that
keeps rich records 7 days has each run's expired 7 days after it ended (its run kept)."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg
import pytest

from tuneplane.controlplane import deletions, projects, retention, runs
from tuneplane.controlplane.errors import ProjectNotFound

ARTIFACT = {"version": 1, "sources": [
    {"id": "a", "kind": "jsonl", "path": "a.jsonl", "owner": "rank-0"}]}
DAY = dt.timedelta(days=1)


async def run_ended(db: asyncpg.Connection, project: str, name: str,
                    ago: dt.timedelta | None) -> str:
    """A run of ``project`` whose attempt ended ``ago`` (None: still running)."""
    run_id = f"{project}-{name}"
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id, project=project)
    await runs.start_attempt(db, run_id)
    if ago is not None:
        await runs.end_attempt(db, run_id, 1, "finished")
        await db.execute("UPDATE attempts SET ended_at = now() - $2::interval WHERE run_id = $1",
                         run_id, ago)
    return run_id


async def new_project(db: asyncpg.Connection, prefix: str) -> str:
    project = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await projects.create(db, project)
    return project


async def test_runs_are_deleted_as_their_project_keeps_them_as_time_goes_by(
        db: asyncpg.Connection) -> None:
    kept, forever = (f"ret-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for project in (kept, forever):
        await projects.create(db, project)
    await retention.keep_runs(db, kept, 30)
    old = await run_ended(db, kept, "old", 40 * DAY)
    recent = await run_ended(db, kept, "recent", 10 * DAY)
    live = await run_ended(db, kept, "live", None)
    other = await run_ended(db, forever, "old", 400 * DAY)
    now = dt.datetime.now(dt.UTC)

    done = await retention.apply(db, now, undo_seconds=3600)
    assert done.deleted.get(kept) == [old]
    assert await deletions.deleted(db, old)
    assert not any([await deletions.deleted(db, r) for r in (recent, live, other)])
    again = await retention.apply(db, now, undo_seconds=3600)
    assert kept not in again.deleted  # nothing more due

    later = await retention.apply(db, now + 25 * DAY, undo_seconds=3600)
    assert later.deleted.get(kept) == [recent]
    assert not await deletions.deleted(db, live)  # running: never due
    assert not await deletions.deleted(db, other)  # its project keeps runs until deleted
    who = await db.fetchval("SELECT deleted_by FROM deletions WHERE run_id = $1", recent)
    assert who == retention.RETENTION


async def test_retention_is_a_positive_number_of_days_of_a_project_there_is(
        db: asyncpg.Connection) -> None:
    with pytest.raises(ValueError, match="at least a day"):
        await retention.keep_runs(db, "default", 0)
    with pytest.raises(ProjectNotFound):
        await retention.keep_runs(db, f"absent-{uuid.uuid4().hex[:6]}", 3)


async def test_a_run_retention_deleted_and_taken_back_is_kept_and_a_live_one_never_goes(
        db: asyncpg.Connection) -> None:
    project = await new_project(db, "ret")
    await retention.keep_runs(db, project, 1)
    old = await run_ended(db, project, "old", 5 * DAY)
    now = dt.datetime.now(dt.UTC)
    assert (await retention.apply(db, now, undo_seconds=3600)).deleted[project] == [old]
    await deletions.undo(db, old, by="owner")
    assert project not in (await retention.apply(db, now, undo_seconds=3600)).deleted  # kept
    live = await run_ended(db, project, "live", None)
    with pytest.raises(deletions.StillLive):  # started again since it was found due
        await deletions.record(db, live, project, by=retention.RETENTION, undo_seconds=0,
                               ended_only=True)


async def test_rich_records_expire_as_their_project_keeps_them_and_the_runs_stay(
        db: asyncpg.Connection) -> None:
    project = await new_project(db, "rich")
    await retention.keep_rich(db, project, 7)
    old = await run_ended(db, project, "old", 10 * DAY)
    recent = await run_ended(db, project, "recent", 3 * DAY)
    live = await run_ended(db, project, "live", None)
    deleted = await run_ended(db, project, "deleted", 30 * DAY)
    await deletions.record(db, deleted, project, by="owner", undo_seconds=3600)
    now = dt.datetime.now(dt.UTC)

    done = await retention.apply(db, now, undo_seconds=60)
    assert done.rich_expired.get(project) == [old]
    assert project not in done.deleted  # the runs are kept as long as the project keeps runs
    assert not await deletions.deleted(db, old)
    due = await db.fetchval("SELECT purge_after - expired_at FROM rich_expiries WHERE "
                            "run_id = $1", old)
    assert due == dt.timedelta(seconds=60)  # the undo window, as for deletions
    assert project not in (await retention.apply(db, now, undo_seconds=60)).rich_expired
    later = await retention.apply(db, now + 5 * DAY, undo_seconds=60)
    assert later.rich_expired.get(project) == [recent]  # not the live one, nor the deleted
    assert await db.fetchval("SELECT count(*) FROM rich_expiries WHERE run_id = ANY($1)",
                             [live, deleted]) == 0
    assert await db.fetchval("SELECT attempt_upto FROM rich_expiries WHERE run_id = $1",
                             old) == 1  # the attempts it had: a later one's are kept
    # The setting changed before any purge started: those expiries are taken back, and the
    # next pass expires what is due under the new one (nothing, at 30 days).
    await retention.keep_rich(db, project, 30)
    assert await db.fetchval("SELECT count(*) FROM rich_expiries WHERE project = $1",
                             project) == 0
    assert project not in (await retention.apply(db, now + 5 * DAY,
                                                 undo_seconds=60)).rich_expired
    with pytest.raises(ValueError, match="rich records are kept at least a day"):
        await retention.keep_rich(db, project, 0)
