"""A purge reaches the topic's archive too: each archive segment holding a purged deletion's
batches is rewritten without them, and each holding an expired run's rich records is
rewritten with its batches stripped of them (``docs/design-notes.md``, "a topic that stops
growing").

Run by the purge, after the rows are gone, for every deletion and expiry being purged whose
archive is not yet pruned, under the archive lock and the trim lock, both exclusive (no
archive pass, trim, replay or rebuild meanwhile), waited for up to ``LOCK_WAIT``. When
another holds them longer, nothing is done and the next purge takes it up; a run whose
prune fails (a segment unreadable, the store away) is logged, and the others go on.

Per segment: the new object (``<segment>.<what>.parquet``) is put, then the segment's row
is pointed at it and the old key handed to the object sweep, in one transaction; the sweep
deletes the old object (no rich record references an archive key). A crash before the
commit leaves the old segment in use and the pass is done again (to the same key), and a
rewrite sweeps every object of the segment's lineage but the one in use (what a rewrite
that died left); after the commit, the segment holds nothing of the deletion and is left
alone. The sweep never deletes an object a segment names. A segment's offset range
is kept: readers skip the offsets it no longer holds.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg

from tuneplane.common.kafka.message import Message
from tuneplane.projector import archive as segments
from tuneplane.projector import withheld
from tuneplane.projector.archiver import ARCHIVE_LOCK, TRIM_LOCK, Objects

DELETIONS = """
SELECT deletion_id, run_id, attempt FROM deletions
WHERE undone_at IS NULL AND purge_started_at IS NOT NULL AND archive_pruned_at IS NULL
ORDER BY deletion_id
"""
EXPIRIES = """
SELECT run_id, attempt_upto FROM rich_expiries
WHERE purge_started_at IS NOT NULL AND archive_pruned_at IS NULL ORDER BY run_id
"""
#: The segments that may hold a run's batches: those naming it, and those archived before
#: segments named their runs.
HOLDING = """
SELECT topic, partition, first_offset, last_offset, object_key FROM topic_archive
WHERE runs IS NULL OR runs @> ARRAY[$1]::text[] ORDER BY topic, partition, first_offset
"""

Change = Callable[[list[Message]], list[Message]]

#: How long a prune waits for an archive pass, trim or replay to let the archive go.
LOCK_WAIT = "300s"
log = logging.getLogger("tuneplane.projector.archive_prune")


@dataclass
class Pruned:
    deletions: int = 0
    rich_expiries: int = 0
    segments_rewritten: int = 0
    records_removed: int = 0
    records_stripped: int = 0  # of their rich records
    failed: int = 0  # runs whose prune failed (logged): a later purge tries again
    busy: bool = False  # the locks were held elsewhere: left for the next purge


async def prune_archive(conn: asyncpg.Connection, objects: Objects | None) -> Pruned:
    done = Pruned()
    deletions, expiries = await conn.fetch(DELETIONS), await conn.fetch(EXPIRIES)
    if not deletions and not expiries:
        return done
    if not await _waited_for(conn, ARCHIVE_LOCK):
        return Pruned(busy=True)
    try:
        if not await _waited_for(conn, TRIM_LOCK):
            return Pruned(busy=True)
        try:
            for d in deletions:
                if await _pruned(conn, objects, d["run_id"], f"d{d['deletion_id']}",
                                 dropping(d["run_id"], d["attempt"]), done):
                    await conn.execute("UPDATE deletions SET archive_pruned_at = now() "
                                       "WHERE deletion_id = $1", d["deletion_id"])
                    done.deletions += 1
            for e in expiries:
                tag = "x" + hashlib.sha256(e["run_id"].encode()).hexdigest()[:12]
                if await _pruned(conn, objects, e["run_id"], tag,
                                 stripping(e["run_id"], e["attempt_upto"]), done):
                    await conn.execute("UPDATE rich_expiries SET archive_pruned_at = now() "
                                       "WHERE run_id = $1", e["run_id"])
                    done.rich_expiries += 1
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", TRIM_LOCK)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ARCHIVE_LOCK)
    return done


async def _waited_for(conn: asyncpg.Connection, lock: int) -> bool:
    """``lock``, exclusively, for the session, waited for up to ``LOCK_WAIT`` (an archive
    pass or a replay ends); False when it was not had."""
    await conn.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", lock)
    except asyncpg.LockNotAvailableError:
        return False
    finally:
        await conn.execute("RESET lock_timeout")
    return True


async def _pruned(conn: asyncpg.Connection, objects: Objects | None, run_id: str, tag: str,
                  change: Change, done: Pruned) -> bool:
    """``_prune``, its failure logged and counted: one run's stops no other, nor the sweep."""
    try:
        await _prune(conn, objects, run_id, tag, change, done)
    except Exception:
        log.exception("pruning the archive of run %s failed; a later purge tries again",
                      run_id)
        done.failed += 1
        return False
    return True


def dropping(run_id: str, attempt: int) -> Change:
    """The records without the batches of the deletion (attempt 0: of any attempt)."""
    deleted = {(run_id, attempt)}

    def change(records: list[Message]) -> list[Message]:
        return [m for m in records
                if not withheld.of_purged(deleted, *segments.identity(m.key)[:2])]
    return change


def stripping(run_id: str, upto: int) -> Change:
    """The records with the run's batches (of its attempts up to ``upto``) emptied of their
    rich records' content."""
    expired = {run_id: upto}

    def change(records: list[Message]) -> list[Message]:
        return [segments.without_rich(m)
                if withheld.of_expired(expired, *segments.identity(m.key)[:2]) else m
                for m in records]
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
        # A rewrite of this segment that died between its put and its commit left an object
        # no row names: every object of the segment's lineage but the one in use is swept.
        lineage = segments.segment_key(*where, segment["last_offset"]).removesuffix("parquet")
        stale = [k for k in await asyncio.to_thread(objects.keys, lineage) if k != new]
        await conn.execute("INSERT INTO object_sweep (object_key) SELECT unnest($1::text[]) "
                           "ON CONFLICT DO NOTHING", stale)
        done.segments_rewritten += 1
        done.records_removed += len(records) - len(kept)
        if len(kept) == len(records):
            done.records_stripped += sum(a != b for a, b in zip(records, kept, strict=True))
