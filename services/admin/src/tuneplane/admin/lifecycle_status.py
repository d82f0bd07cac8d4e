"""``tuneplane-admin lifecycle``: the data lifecycle's figures, for an operator or a
monitor: deletions and rich records' expiries by where they stand (an overdue one means no
purge runs), objects waiting for the sweep, the topic's archive, and the projects that keep
their runs or rich records a while. One JSON document."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import asyncpg

from tuneplane.admin.settings import AdminSettings

#: Where deletions and expiries stand (``$1``: now). Overdue: due for the purge, not begun.
STANDING = """
SELECT count(*) FILTER (WHERE {live} AND purge_started_at IS NULL AND purge_after > $1)
         AS in_undo_window,
       count(*) FILTER (WHERE {live} AND purge_started_at IS NULL AND purge_after <= $1)
         AS overdue,
       count(*) FILTER (WHERE {live} AND purge_started_at IS NOT NULL AND purged_at IS NULL)
         AS purging,
       count(*) FILTER (WHERE purged_at IS NOT NULL) AS purged,
       count(*) FILTER (WHERE purged_at IS NOT NULL AND archive_pruned_at IS NULL)
         AS archive_not_pruned,
       extract(epoch FROM $1 - min(purge_after) FILTER (
         WHERE {live} AND purge_started_at IS NULL AND purge_after <= $1))::float
         AS oldest_overdue_seconds
FROM {table}
"""
SWEEP = """
SELECT count(*) AS objects, extract(epoch FROM $1 - min(since))::float AS oldest_seconds
FROM object_sweep
"""
ARCHIVE = """
SELECT topic, count(*) AS segments, sum(records)::bigint AS records, sum(bytes)::bigint AS bytes,
       max(archived_at) AS last_archived_at
FROM topic_archive GROUP BY topic ORDER BY topic
"""
RETENTION = """
SELECT count(*) FILTER (WHERE keep_runs_days IS NOT NULL) AS keep_runs,
       count(*) FILTER (WHERE keep_rich_days IS NOT NULL) AS keep_rich
FROM projects
"""


async def status(conn: asyncpg.Connection) -> dict[str, Any]:
    now = await conn.fetchval("SELECT now()")
    deletions = await conn.fetchrow(STANDING.format(table="deletions",
                                                    live="undone_at IS NULL"), now)
    expiries = await conn.fetchrow(STANDING.format(table="rich_expiries", live="true"), now)
    undone = await conn.fetchval("SELECT count(*) FROM deletions WHERE undone_at IS NOT NULL")
    return {
        "deletions": {**dict(deletions or {}), "undone": undone},
        "rich_expiries": dict(expiries or {}),
        "object_sweep": dict(await conn.fetchrow(SWEEP, now) or {}),
        "archive": {r["topic"]: {"segments": r["segments"], "records": r["records"],
                                 "bytes": r["bytes"],
                                 "last_archived_at": r["last_archived_at"].isoformat()}
                    for r in await conn.fetch(ARCHIVE)},
        "projects": dict(await conn.fetchrow(RETENTION) or {}),
    }


async def run(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        found = await status(conn)
    finally:
        await conn.close()
    print(json.dumps(found, indent=2))
    return 0


def cmd_lifecycle(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(run(settings.database_url.get()))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("lifecycle", help="the data lifecycle's figures as JSON: deletions and "
                                         "rich records' expiries by where they stand "
                                         "(overdue: no purge runs), objects waiting for the "
                                         "sweep, the topic's archive, projects with retention")
    s.set_defaults(func=cmd_lifecycle)
