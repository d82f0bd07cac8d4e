"""A purged deletion leaves the topic's archive: each archive segment holding its batches is
rewritten without them (``docs/design-notes.md``, "a topic that stops growing").

Run by the purge, after a deletion's rows are gone, for every deletion being purged whose
archive is not yet pruned, under the archive lock and the trim lock, both exclusive (no
archive pass, trim, replay or rebuild meanwhile). When another holds them, nothing is done
and the next purge takes it up.

Per segment: the new object (``<segment>.d<deletion>.parquet``) is put, then the segment's
row is pointed at it and the old key handed to the object sweep, in one transaction; the
sweep deletes the old object (no rich record references an archive key). A crash before
the commit leaves the old segment in use and the pass is done again; after it, the
segment holds nothing of the deletion and is left alone. A segment's offset range is
kept: readers skip the offsets it no longer holds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncpg

from tuneplane.projector import archive as segments
from tuneplane.projector.archiver import ARCHIVE_LOCK, TRIM_LOCK, Objects

DUE = """
SELECT deletion_id, run_id, attempt FROM deletions
WHERE undone_at IS NULL AND purge_started_at IS NOT NULL AND archive_pruned_at IS NULL
ORDER BY deletion_id
"""
#: The segments that may hold a run's batches: those naming it, and those archived before
#: segments named their runs.
HOLDING = """
SELECT topic, partition, first_offset, object_key FROM topic_archive
WHERE runs IS NULL OR $1 = ANY(runs) ORDER BY topic, partition, first_offset
"""


@dataclass
class Pruned:
    deletions: int = 0
    segments_rewritten: int = 0
    records_removed: int = 0
    busy: bool = False  # the locks were held elsewhere: left for the next purge


async def prune_archive(conn: asyncpg.Connection, objects: Objects | None) -> Pruned:
    done = Pruned()
    due = await conn.fetch(DUE)
    if not due:
        return done
    if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", ARCHIVE_LOCK):
        return Pruned(busy=True)
    try:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", TRIM_LOCK):
            return Pruned(busy=True)
        try:
            for deletion in due:
                await _prune(conn, objects, deletion, done)
                await conn.execute("UPDATE deletions SET archive_pruned_at = now() WHERE "
                                   "deletion_id = $1", deletion["deletion_id"])
                done.deletions += 1
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", TRIM_LOCK)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ARCHIVE_LOCK)
    return done


async def _prune(conn: asyncpg.Connection, objects: Objects | None, deletion: asyncpg.Record,
                 done: Pruned) -> None:
    run_id, attempt = deletion["run_id"], int(deletion["attempt"])
    for segment in await conn.fetch(HOLDING, run_id):
        if objects is None:
            raise RuntimeError("an archive to prune but no object store configured "
                               "(TUNEPLANE_S3_ENDPOINT, TUNEPLANE_S3_BUCKET)")
        old = segment["object_key"]
        records = segments.decode(await asyncio.to_thread(objects.get, old))
        kept = [m for m in records if not _of(m.key, run_id, attempt)]
        runs = segments.runs_of(kept)
        if len(kept) == len(records):  # nothing of it: only name the segment's runs
            await conn.execute("UPDATE topic_archive SET runs = $4 WHERE topic = $1 AND "
                               "partition = $2 AND first_offset = $3 AND runs IS NULL",
                               segment["topic"], segment["partition"],
                               segment["first_offset"], runs)
            continue
        data = segments.encode(kept)
        new = f"{old.removesuffix('.parquet')}.d{deletion['deletion_id']}.parquet"
        await asyncio.to_thread(objects.put, new, data)
        async with conn.transaction():
            await conn.execute(
                "UPDATE topic_archive SET object_key = $4, records = $5, bytes = $6, runs = $7 "
                "WHERE topic = $1 AND partition = $2 AND first_offset = $3", segment["topic"],
                segment["partition"], segment["first_offset"], new, len(kept), len(data), runs)
            await conn.execute("INSERT INTO object_sweep (object_key) VALUES ($1) ON CONFLICT "
                               "DO NOTHING", old)
        done.segments_rewritten += 1
        done.records_removed += len(records) - len(kept)


def _of(key: bytes | None, run_id: str, attempt: int) -> bool:
    """Whether a record is a batch of the deletion (attempt 0: of any attempt)."""
    run, its_attempt, _, _ = segments.identity(key)
    return run == run_id and attempt in (0, its_attempt)
