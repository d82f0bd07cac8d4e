"""Deleting a run or one of its attempts: recorded here (who, when, what), hidden or refused
at once, and removed once its undo window ends (``purge_after``: the projector's ``purge``
deletes its read-model rows and sweeps the objects of its rich records no other record
references). Until then ``undo`` takes it back.

What a deletion does at once: a deleted run is no run anyone can see (``projects.of_run``
knows it no longer; it leaves the runs lists), starts no attempt, and its id is never given
to a new run; a deleted attempt's workload and delivery tokens are refused at ingest
(``standing``), and a live attempt is ended ``cancelled`` first (its job is cancelled with
it: taking the deletion back brings back its data, not the job nor what ingest refused
meanwhile). Its data stays, unseen, for the undo window.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.controlplane import runs
from tuneplane.controlplane.errors import AttemptNotFound, Conflict, RunNotFound

#: ``attempt`` of a deletion of the whole run.
WHOLE_RUN = 0
#: A deletion standing: not taken back.
STANDING = "undone_at IS NULL"


class AlreadyDeleted(Conflict):
    pass


class NotUndoable(Conflict):
    pass


class StillLive(Conflict):
    pass


@dataclass(frozen=True, slots=True)
class Deletion:
    deletion_id: int
    run_id: str
    attempt: int
    purge_after: dt.datetime


def what(run_id: str, attempt: int) -> str:
    return f"run {run_id!r}" if attempt == WHOLE_RUN else f"run {run_id!r} attempt {attempt}"


async def record(conn: Connection, run_id: str, project: str, *, attempt: int = WHOLE_RUN,
                 by: str, undo_seconds: float, ended_only: bool = False) -> Deletion:
    """Delete the run (``attempt`` 0) or one attempt of it, for ``by``; its data is removed
    ``undo_seconds`` from now. A live attempt it takes is ended ``cancelled`` first, or, when
    ``ended_only`` (retention's), the deletion is refused (``StillLive``)."""
    async with conn.transaction():
        if await conn.fetchval("SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE",
                               run_id) is None and await conn.fetchval(
                "SELECT 1 FROM batch_ledger WHERE run_id = $1 LIMIT 1", run_id) is None:
            raise RunNotFound(f"no run {run_id!r}")
        if attempt != WHOLE_RUN and await conn.fetchval(
                "SELECT 1 FROM attempts WHERE run_id = $1 AND attempt = $2 UNION ALL "
                "SELECT 1 FROM batch_ledger WHERE run_id = $1 AND attempt = $2 LIMIT 1",
                run_id, attempt) is None:
            raise AttemptNotFound(f"run {run_id!r} has no attempt {attempt}")
        standing = await conn.fetchval(
            f"SELECT attempt FROM deletions WHERE run_id = $1 AND attempt IN (0, $2) AND "
            f"{STANDING} LIMIT 1", run_id, attempt)
        if standing is not None:
            raise AlreadyDeleted(f"{what(run_id, standing)} is deleted already")
        live_attempts = await conn.fetch(
            "SELECT attempt FROM attempts WHERE run_id = $1 AND ($2 = 0 OR attempt = $2) "
            "AND state = ANY($3::text[])", run_id, attempt, list(runs.LIVE_STATES))
        if live_attempts and ended_only:
            raise StillLive(f"{what(run_id, attempt)} has a live attempt")
        for live in live_attempts:
            await runs.end_attempt(conn, run_id, int(live["attempt"]), "cancelled")
        try:
            row = await conn.fetchrow(
                "INSERT INTO deletions (run_id, project, attempt, deleted_by, purge_after) "
                "VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) "
                "RETURNING deletion_id, purge_after", run_id, project, attempt, by,
                float(undo_seconds))
        except asyncpg.UniqueViolationError:  # a deletion of a run with no row, at once
            raise AlreadyDeleted(f"{what(run_id, attempt)} is deleted already") from None
    assert row is not None
    return Deletion(int(row["deletion_id"]), run_id, attempt, row["purge_after"])


async def undo(conn: Connection, run_id: str, *, attempt: int = WHOLE_RUN, by: str) -> None:
    """Take back the standing deletion of the run (or attempt) before its purge begins."""
    done = await conn.fetchval(
        f"UPDATE deletions SET undone_by = $3, undone_at = now() WHERE run_id = $1 AND "
        f"attempt = $2 AND {STANDING} AND purge_started_at IS NULL RETURNING 1",
        run_id, attempt, by)
    if done is None:
        raise NotUndoable(f"{what(run_id, attempt)} has no deletion that can be undone "
                          "(none, or its purge has begun)")


async def project_of_deleted(conn: Connection, run_id: str,
                             attempt: int = WHOLE_RUN) -> str | None:
    """The project of the run whose (or whose attempt's) deletion stands, else None."""
    found = await conn.fetchval(
        f"SELECT project FROM deletions WHERE run_id = $1 AND attempt = $2 AND {STANDING}",
        run_id, attempt)
    return None if found is None else str(found)


async def deleted(conn: Connection, run_id: str, attempt: int = WHOLE_RUN) -> bool:
    """Whether the run, or the attempt (by itself or with its run), is deleted."""
    return bool(await conn.fetchval(
        f"SELECT EXISTS (SELECT 1 FROM deletions WHERE run_id = $1 AND attempt IN (0, $2) "
        f"AND {STANDING})", run_id, attempt))
