"""A purge reaches the topic's archive too: each archive segment holding a purged deletion's
batches is rewritten without them, and each holding an expired run's rich records is
rewritten with its batches stripped of them (``docs/design-notes.md``, "a topic that stops
growing").

Run by the purge, after the rows are gone, for every deletion and expiry being purged whose
archive is not yet pruned, under the archive lock and the trim lock, both exclusive (no
archive pass, trim, replay or rebuild meanwhile). When another holds them, nothing is done
and the next purge takes it up.

Per segment: the new object (``<segment>.<what>.parquet``) is put, then the segment's row
is pointed at it and the old key handed to the object sweep, in one transaction; the sweep
deletes the old object (no rich record references an archive key). A crash before the
commit leaves the old segment in use and the pass is done again (to the same key); after
it, the segment holds nothing of the deletion and is left alone. A segment's offset range
is kept: readers skip the offsets it no longer holds.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg

from tuneplane.common.kafka.message import Message
from tuneplane.projector import archive as segments
from tuneplane.projector.archiver import ARCHIVE_LOCK, TRIM_LOCK, Objects

DELETIONS = """
SELECT deletion_id, run_id, attempt FROM deletions
WHERE undone_at IS NULL AND purge_started_at IS NOT NULL AND archive_pruned_at IS NULL
ORDER BY deletion_id
"""
EXPIRIES = """
SELECT run_id FROM rich_expiries
WHERE purge_started_at IS NOT NULL AND archive_pruned_at IS NULL ORDER BY run_id
"""
#: The segments that may hold a run's batches: those naming it, and those archived before
#: segments named their runs.
HOLDING = """
SELECT topic, partition, first_offset, object_key FROM topic_archive
WHERE runs IS NULL OR runs @> ARRAY[$1]::text[] ORDER BY topic, partition, first_offset
"""

Change = Callable[[list[Message]], list[Message]]


@dataclass
class Pruned:
    deletions: int = 0
    rich_expiries: int = 0
    segments_rewritten: int = 0
    records_removed: int = 0
    records_stripped: int = 0  # of their rich records
    busy: bool = False  # the locks were held elsewhere: left for the next purge


async def prune_archive(conn: asyncpg.Connection, objects: Objects | None) -> Pruned:
    done = Pruned()
    deletions, expiries = await conn.fetch(DELETIONS), await conn.fetch(EXPIRIES)
    if not deletions and not expiries:
        return done
    if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", ARCHIVE_LOCK):
        return Pruned(busy=True)
    try:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", TRIM_LOCK):
            return Pruned(busy=True)
        try:
            for d in deletions:
                await _prune(conn, objects, d["run_id"], f"d{d['deletion_id']}",
                             dropping(d["run_id"], int(d["attempt"])), done)
                await conn.execute("UPDATE deletions SET archive_pruned_at = now() WHERE "
                                   "deletion_id = $1", d["deletion_id"])
                done.deletions += 1
            for e in expiries:
                tag = "x" + hashlib.sha256(e["run_id"].encode()).hexdigest()[:12]
                await _prune(conn, objects, e["run_id"], tag, stripping(e["run_id"]), done)
                await conn.execute("UPDATE rich_expiries SET archive_pruned_at = now() WHERE "
                                   "run_id = $1", e["run_id"])
                done.rich_expiries += 1
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", TRIM_LOCK)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ARCHIVE_LOCK)
    return done


def dropping(run_id: str, attempt: int) -> Change:
    """The records without the batches of the deletion (attempt 0: of any attempt)."""
    def change(records: list[Message]) -> list[Message]:
        return [m for m in records if not _of(m.key, run_id, attempt)]
    return change


def stripping(run_id: str) -> Change:
    """The records with the run's batches stripped of their rich records."""
    def change(records: list[Message]) -> list[Message]:
        return [segments.without_rich(m) if _of(m.key, run_id, 0) else m for m in records]
    return change


async def _prune(conn: asyncpg.Connection, objects: Objects | None, run_id: str, tag: str,
                 change: Change, done: Pruned) -> None:
    for segment in await conn.fetch(HOLDING, run_id):
        if objects is None:
            raise RuntimeError("an archive to prune but no object store configured "
                               "(TUNEPLANE_S3_ENDPOINT, TUNEPLANE_S3_BUCKET)")
        old = segment["object_key"]
        records = segments.decode(await asyncio.to_thread(objects.get, old))
        kept = change(records)
        runs = segments.runs_of(kept)
        where = (segment["topic"], segment["partition"], segment["first_offset"])
        if kept == records:  # nothing of it: only name the segment's runs
            await conn.execute("UPDATE topic_archive SET runs = $4 WHERE topic = $1 AND "
                               "partition = $2 AND first_offset = $3 AND runs IS NULL",
                               *where, runs)
            continue
        data = segments.encode(kept)
        new = f"{old.removesuffix('.parquet')}.{tag}.parquet"
        await asyncio.to_thread(objects.put, new, data)
        async with conn.transaction():
            await conn.execute(
                "UPDATE topic_archive SET object_key = $4, records = $5, bytes = $6, runs = $7 "
                "WHERE topic = $1 AND partition = $2 AND first_offset = $3", *where, new,
                len(kept), len(data), runs)
            await conn.execute("INSERT INTO object_sweep (object_key) VALUES ($1) ON CONFLICT "
                               "DO NOTHING", old)
        done.segments_rewritten += 1
        done.records_removed += len(records) - len(kept)
        if len(kept) == len(records):
            done.records_stripped += sum(a != b for a, b in zip(records, kept, strict=True))


def _of(key: bytes | None, run_id: str, attempt: int) -> bool:
    """Whether a record is a batch of the run (of its ``attempt``; 0: of any attempt)."""
    run, its_attempt, _, _ = segments.identity(key)
    return run == run_id and attempt in (0, its_attempt)
