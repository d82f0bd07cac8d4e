"""Rebuilding the read models from the whole topic into fresh tables, then swapping them in.

1. ``readmodel_next`` gets empty copies of every read-model table.
2. The topic is replayed into it (what Kafka no longer holds from its archive) while the
   live projectors go on writing ``readmodel``.
3. Under an exclusive advisory lock (live transactions hold it shared, so they finish
   and wait) the tail written since step 2 began is replayed too, and one transaction
   renames ``readmodel`` away and ``readmodel_next`` into its place.
4. The old tables are dropped; live projectors resume on the rebuilt tables.
"""

from __future__ import annotations

import logging

import asyncpg

from tuneplane.common.kafka.adapter import StartAt
from tuneplane.projector.archiver import ArchiveReader
from tuneplane.projector.replay import Progress, ReplayReport, replay
from tuneplane.projector.writer import SWAP_LOCK, ObjectStore, PostgresWriter

log = logging.getLogger("tuneplane.projector.rebuild")

LIVE, NEXT, OLD = "readmodel", "readmodel_next", "readmodel_old"
TABLES = ("batch_ledger", "series", "curve_chunks", "rich_records", "session_starts",
          "member_summaries", "source_checkpoints", "member_spools", "run_config",
          "series_stats")


async def prepare_next(conn: asyncpg.Connection) -> None:
    await conn.execute(f"DROP SCHEMA IF EXISTS {NEXT} CASCADE")  # a rebuild that died
    await conn.execute(f"CREATE SCHEMA {NEXT}")
    for table in TABLES:
        await conn.execute(f"CREATE TABLE {NEXT}.{table} (LIKE {LIVE}.{table} INCLUDING ALL)")
    await conn.execute(f"ALTER TABLE {NEXT}.curve_chunks ADD FOREIGN KEY (series_id) "
                       f"REFERENCES {NEXT}.series (series_id)")


async def swap(conn: asyncpg.Connection) -> None:
    async with conn.transaction():
        await conn.execute(f"DROP SCHEMA IF EXISTS {OLD} CASCADE")
        await conn.execute(f"ALTER SCHEMA {LIVE} RENAME TO {OLD}")
        await conn.execute(f"ALTER SCHEMA {NEXT} RENAME TO {LIVE}")
    await conn.execute(f"DROP SCHEMA {OLD} CASCADE")


async def rebuild(database_url: str, bootstrap: str, objects: ObjectStore | None,
                  progress: Progress | None = None, *, max_series: int | None = None,
                  archived: ArchiveReader | None = None) -> ReplayReport:
    control = await asyncpg.connect(database_url)
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2,
                                     server_settings={"search_path": f"{NEXT}, public"})
    try:
        await prepare_next(control)
        writer = PostgresWriter(pool, objects, shares_swap_lock=False, max_series=max_series)
        report, ends = await replay(bootstrap, writer, StartAt(offset=0), progress=progress,
                                    archived=archived)
        log.info("bulk replay done (%d records); locking out live projectors for the tail",
                 report.records)
        await control.execute("SELECT pg_advisory_lock($1)", SWAP_LOCK)
        try:
            tail, _ = await replay(bootstrap, writer, ends, progress=progress)
            report.add(tail)
            await swap(control)
        finally:
            await control.execute("SELECT pg_advisory_unlock($1)", SWAP_LOCK)
        return report
    finally:
        await pool.close()
        await control.close()
