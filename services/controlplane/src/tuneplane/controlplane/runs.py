"""Runs and attempts: a run is created with its integration artifact; each start of it is
a new attempt (1, 2, … after retries) whose metric mapping is frozen from the artifact."""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from typing import Any

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.controlplane import mapping
from tuneplane.controlplane.errors import (
    AttemptAlreadyEnded,
    AttemptNotFound,
    AttemptStillRunning,
    InvalidRun,
    ProjectNotFound,
    RunExists,
    RunNotFound,
)
from tuneplane.controlplane.projects import DEFAULT, DELETED_RUN
from tuneplane.telemetry.v1.integration import check_document

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
END_STATES = ("finished", "failed", "cancelled", "timeout", "preempted")
#: Not ended: waiting in a scheduler's queue, or running.
LIVE_STATES = ("pending", "running")


def new_run_id(now: dt.datetime) -> str:
    return f"run-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


async def create_run(conn: Connection, artifact: Any, *, created_by: str, now: dt.datetime,
                     run_id: str | None = None, project: str = DEFAULT) -> str:
    """A new run of ``project``; raises RunExists for a run already known, by its row or
    (outside the default project, where such runs belong) by its telemetry."""
    check_document(artifact, "integration artifact")
    run_id = run_id or new_run_id(now)
    if not RUN_ID.fullmatch(run_id):  # not .match: its $ would let a final newline by
        raise InvalidRun(f"run id {run_id!r} must be 1-128 of A-Z a-z 0-9 . _ - "
                       "(starting with a letter or digit)")
    if await conn.fetchval("SELECT 1 FROM deletions WHERE run_id = $1 AND undone_at IS NULL "
                           "LIMIT 1", run_id):  # deleted, or an attempt of it: not again
        raise RunExists(f"run {run_id!r} exists")
    if project != DEFAULT and await conn.fetchval(
            "SELECT 1 FROM batch_ledger WHERE run_id = $1 LIMIT 1", run_id):
        # Its telemetry came first (a token issued by hand): a run of the default project,
        # which creating it in another would hand that project's users.
        raise RunExists(f"run {run_id!r} exists")
    try:
        await conn.execute("INSERT INTO runs (run_id, artifact, created_by, project) "
                           "VALUES ($1, $2::jsonb, $3, $4)", run_id, json.dumps(artifact),
                           created_by, project)
    except asyncpg.UniqueViolationError:
        raise RunExists(f"run {run_id!r} exists") from None
    except asyncpg.ForeignKeyViolationError:
        raise ProjectNotFound(f"no project {project!r}") from None
    return run_id


async def start_attempt(conn: Connection, run_id: str, *, state: str = "running") -> int:
    """The next attempt of the run, with the artifact's mapping frozen for it; ``pending``
    when it waits in a scheduler's queue first."""
    if state not in LIVE_STATES:
        raise InvalidRun(f"an attempt starts as one of {', '.join(LIVE_STATES)}, not {state!r}")
    async with conn.transaction():
        document = await conn.fetchval("SELECT artifact::text FROM runs WHERE run_id = $1 "
                                       "FOR UPDATE", run_id)
        if document is None or await conn.fetchval(DELETED_RUN, run_id):
            raise RunNotFound(f"no run {run_id!r}")
        live = await conn.fetchrow("SELECT attempt, state FROM attempts WHERE run_id = $1 "
                                   "AND state = ANY($2::text[])", run_id, list(LIVE_STATES))
        if live is not None:
            raise AttemptStillRunning(f"run {run_id!r} attempt {live['attempt']} is still "
                                      f"{live['state']}; end it first")
        attempt = int(await conn.fetchval("SELECT coalesce(max(attempt), 0) + 1 FROM attempts "
                                          "WHERE run_id = $1", run_id))
        await conn.execute("INSERT INTO attempts (run_id, attempt, state) "
                           "VALUES ($1, $2, $3)", run_id, attempt, state)
        mappings = check_document(json.loads(document), f"run {run_id} artifact")
        await mapping.freeze(conn, run_id, attempt, mappings)
    return attempt


async def end_attempt(conn: Connection, run_id: str, attempt: int, state: str) -> bool:
    """End a pending or running attempt; True when ended now, False when it already ended
    so."""
    if state not in END_STATES:
        raise InvalidRun(f"an attempt ends as one of {', '.join(END_STATES)}, not {state!r}")
    current = await conn.fetchval("SELECT state FROM attempts WHERE run_id = $1 AND "
                                  "attempt = $2", run_id, attempt)
    if current is None:
        raise AttemptNotFound(f"no attempt {attempt} of run {run_id!r}")
    ended = await conn.fetchval("UPDATE attempts SET state = $3, ended_at = now() WHERE "
                                "run_id = $1 AND attempt = $2 AND state = ANY($4::text[]) "
                                "RETURNING 1", run_id, attempt, state, list(LIVE_STATES))
    if ended:
        return True
    if current == state:
        return False
    raise AttemptAlreadyEnded(f"run {run_id!r} attempt {attempt} already ended as {current}")


async def describe(conn: Connection, run_id: str) -> dict[str, Any] | None:
    run = await conn.fetchrow("SELECT run_id, project, created_by, created_at FROM runs "
                              "WHERE run_id = $1", run_id)
    if run is None:
        return None
    attempts = await conn.fetch(
        "SELECT attempt, state, started_at, ended_at FROM attempts a WHERE run_id = $1 AND "
        "NOT EXISTS (SELECT 1 FROM deletions d WHERE d.run_id = a.run_id AND d.attempt = "
        "a.attempt AND d.undone_at IS NULL) ORDER BY attempt", run_id)
    return {**dict(run), "attempts": [dict(a) for a in attempts]}
