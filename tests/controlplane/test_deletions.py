"""Deletions in the control plane (real PostgreSQL): what a deleted run or attempt may no
longer do, and what may not be taken back."""

from __future__ import annotations

import datetime as dt

import asyncpg
import pytest

from tuneplane.controlplane import deletions, runs
from tuneplane.controlplane.errors import RunExists, RunNotFound

ARTIFACT = {"version": 1, "sources": [
    {"id": "a", "kind": "jsonl", "path": "a.jsonl", "owner": "rank-0"}]}


async def made(db: asyncpg.Connection, run_id: str) -> None:
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id)
    await runs.start_attempt(db, run_id)


async def test_a_deleted_run_starts_no_attempt_and_its_id_is_not_given_again(
        db: asyncpg.Connection, run_id: str) -> None:
    await made(db, run_id)
    await deletions.record(db, run_id, "default", by="owner", undo_seconds=3600)
    assert await db.fetchval("SELECT state FROM attempts WHERE run_id = $1",
                             run_id) == "cancelled"
    with pytest.raises(RunNotFound):
        await runs.start_attempt(db, run_id)
    with pytest.raises(RunExists, match="exists"):
        await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                              run_id=run_id)
    with pytest.raises(deletions.AlreadyDeleted):
        await deletions.record(db, run_id, "default", attempt=1, by="owner", undo_seconds=0)


async def test_an_attempt_deleted_keeps_its_runs_id_from_a_new_run(
        db: asyncpg.Connection, run_id: str) -> None:
    """A run's attempt deleted and the run's row gone: a new run under its id would have
    its attempt's number, refused; so the id is not given again."""
    await made(db, run_id)
    await deletions.record(db, run_id, "default", attempt=1, by="owner", undo_seconds=0)
    await db.execute("DELETE FROM attempts WHERE run_id = $1", run_id)
    await db.execute("DELETE FROM attempt_mappings WHERE run_id = $1", run_id)
    await db.execute("DELETE FROM runs WHERE run_id = $1", run_id)
    with pytest.raises(RunExists):
        await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                              run_id=run_id)


async def test_a_deletion_is_taken_back_only_before_its_purge_begins(
        db: asyncpg.Connection, run_id: str) -> None:
    await made(db, run_id)
    await deletions.record(db, run_id, "default", by="owner", undo_seconds=0)
    await db.execute("UPDATE deletions SET purge_started_at = now() WHERE run_id = $1", run_id)
    with pytest.raises(deletions.NotUndoable, match="its purge has begun"):
        await deletions.undo(db, run_id, by="owner")
    assert await deletions.deleted(db, run_id)
