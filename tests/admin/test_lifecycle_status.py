"""``tuneplane-admin lifecycle`` on the real PostgreSQL: the figures move as deletions,
expiries and swept objects are recorded, and an overdue deletion (no purge has run) is
counted with its age."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg

from tests.admin.test_projects import admin
from tests.support.environment import Endpoints
from tuneplane.controlplane import deletions


def figures() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(admin("lifecycle").stdout)
    return found


async def test_the_figures_follow_deletions_expiries_and_the_sweep(
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    before = figures()
    prefix = f"status-{uuid.uuid4().hex[:6]}"
    for name, undo in (("waiting", 3600.0), ("overdue", 0.0)):
        await db.execute("INSERT INTO runs (run_id, artifact, created_by, project) VALUES "
                         "($1, '{}', 'test', 'default')", f"{prefix}-{name}")
        await deletions.record(db, f"{prefix}-{name}", "default", by="owner",
                               undo_seconds=undo)
    await db.execute("INSERT INTO rich_expiries (run_id, project, attempt_upto, purge_after) "
                     "VALUES ($1, 'default', 1, now() - interval '1 hour')", f"{prefix}-rich")
    await db.execute("INSERT INTO object_sweep (object_key) VALUES ($1)", f"{prefix}/object")
    after = figures()
    try:
        moved = {(part, key): after[part][key] - before[part][key]
                 for part in ("deletions", "rich_expiries") for key in (
                     "in_undo_window", "overdue", "purging", "purged")}
        assert moved == {("deletions", "in_undo_window"): 1, ("deletions", "overdue"): 1,
                         ("deletions", "purging"): 0, ("deletions", "purged"): 0,
                         ("rich_expiries", "in_undo_window"): 0,
                         ("rich_expiries", "overdue"): 1, ("rich_expiries", "purging"): 0,
                         ("rich_expiries", "purged"): 0}
        assert after["rich_expiries"]["oldest_overdue_seconds"] >= 3600
        assert after["deletions"]["oldest_overdue_seconds"] >= 0
        assert after["object_sweep"]["objects"] == before["object_sweep"]["objects"] + 1
        assert set(after) == {"deletions", "rich_expiries", "object_sweep", "archive",
                              "projects"}
    finally:  # no other test's purge is to take these
        await db.execute("DELETE FROM deletions WHERE run_id LIKE $1", f"{prefix}-%")
        await db.execute("DELETE FROM rich_expiries WHERE run_id LIKE $1", f"{prefix}-%")
        await db.execute("DELETE FROM object_sweep WHERE object_key LIKE $1", f"{prefix}/%")
