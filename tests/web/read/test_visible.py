"""The visibility conditions every listing shares, evaluated by PostgreSQL: a project in the
caller's set (NULL: an admin's, every project); a run or attempt hidden by a standing
deletion (attempt 0: the whole run), and shown again once the deletion is undone."""

from __future__ import annotations

import uuid

import asyncpg

from tuneplane.web.read.visible import attempt_kept, in_projects, run_and_attempt_kept, run_kept


async def holds(db: asyncpg.Connection, condition: str, *args: object) -> bool:
    return bool(await db.fetchval(f"SELECT {condition}", *args))


async def test_a_project_is_visible_to_its_members_and_to_an_admin(
        db: asyncpg.Connection) -> None:
    assert await holds(db, in_projects("$1::text", "$2"), "a", ["a", "b"])
    assert not await holds(db, in_projects("$1::text", "$2"), "c", ["a", "b"])
    assert not await holds(db, in_projects("$1::text", "$2"), "a", [])
    assert await holds(db, in_projects("$1::text", "$2"), "a", None)


async def test_a_standing_deletion_hides_its_run_or_attempt_until_undone(
        db: asyncpg.Connection) -> None:
    run, other = f"visible-{uuid.uuid4().hex[:8]}", f"visible-{uuid.uuid4().hex[:8]}"
    await db.execute("""INSERT INTO deletions (run_id, project, attempt, deleted_by, purge_after)
                        VALUES ($1, 'p', 2, 'tester', now() + interval '1 day'),
                               ($2, 'p', 0, 'tester', now() + interval '1 day')""", run, other)
    kept = {
        "run": [await holds(db, run_kept("$1::text"), r) for r in (run, other)],
        "attempt 1": [await holds(db, attempt_kept("$1::text", "1"), r) for r in (run, other)],
        "attempt 2": [await holds(db, attempt_kept("$1::text", "2"), r) for r in (run, other)],
        "run and attempt 1": [await holds(db, run_and_attempt_kept("$1::text", "1"), r)
                              for r in (run, other)],
        "run and attempt 2": [await holds(db, run_and_attempt_kept("$1::text", "2"), r)
                              for r in (run, other)],
    }
    # The other run is deleted whole: only its attempts' own deletions are not there.
    assert kept == {"run": [True, False], "attempt 1": [True, True],
                    "attempt 2": [False, True], "run and attempt 1": [True, False],
                    "run and attempt 2": [False, False]}
    await db.execute("UPDATE deletions SET undone_at = now(), undone_by = 'tester' "
                     "WHERE run_id = ANY($1::text[])", [run, other])
    for condition in (run_kept("$1::text"), attempt_kept("$1::text", "2"),
                      run_and_attempt_kept("$1::text", "2")):
        assert [await holds(db, condition, r) for r in (run, other)] == [True, True]
