"""Purging deletions whose undo window has ended (``tuneplane-projector purge``): their
read-model rows leave PostgreSQL, and the objects of their rich records leave the object
store once no rich record references them. Rich records' expiries (retention's
``keep_rich_days``) are purged the same way, of the run's rich records only.

1. Each due deletion is marked ``purge_started_at`` (committed): from then on every
   projector transaction skips its batches (``withheld``), live or replaying or
   rebuilding, so nothing brings them back.
2. ``OBJECTS_LOCK`` is taken exclusively once and let go: every transaction begun before
   the mark has ended.
3. Its rows are deleted from ``readmodel`` (and ``readmodel_next``, while a rebuild fills
   it), and its members' reported events, logs and reports; the object keys of its rich
   records are kept in ``object_sweep``. Its ended launches keep their state and times but
   lose their commands, environments and options (which may hold secrets) and the
   cluster's events (``FORGOTTEN``, every pass).
4. The topic's archive segments holding its batches are rewritten without them
   (``archive_prune``; their old objects go to the sweep). When an archive pass, trim or
   replay holds the archive, a later purge does this.
5. The sweep, under ``OBJECTS_LOCK`` exclusive: a key no rich record references is deleted
   from the store; one still referenced (the same content in another run) is kept.
6. The deletion is marked ``purged_at``.

Safe on several replicas at once and after a purge that died: marking is one statement,
the row deletes are idempotent (and hold the lock shared, so a sweep never drops a key a
purge is adding), and a deletion started but not purged is taken up again. Every projector
must run this protocol (this release or later) before any purge runs: an older one puts
objects outside the lock and does not skip purged deletions. Relies on READ COMMITTED,
PostgreSQL's default: a writer's deletion check sees the marks committed before it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Protocol

import asyncpg

from tuneplane.projector.archive_prune import Pruned, prune_archive
from tuneplane.projector.archiver import Objects as Segments
from tuneplane.projector.rebuild import LIVE, NEXT
from tuneplane.projector.writer import OBJECTS_LOCK

log = logging.getLogger("tuneplane.projector.purge")

#: The read-model tables holding a run's rows, each by run and attempt (curve chunks by
#: their series), rich records last: their keys are what the sweep looks at.
BY_RUN = ("batch_ledger", "session_starts", "member_summaries", "source_checkpoints",
          "member_spools", "run_config")
#: What the reporting path holds of an attempt (public: not projections of the topic).
REPORTED = ("attempt_events", "attempt_logs", "attempt_reports")
ATTEMPT = "($2 = 0 OR attempt = $2)"
#: The ended launches of purged deletions keep their state, times and exit codes, not what
#: they were asked to run (a launch that ends later is forgotten by the next purge). A node
#: launch is one attempt's; a Slurm or Kubernetes launch spans its run's requeued attempts,
#: so only a whole run's deletion forgets it.
FORGOTTEN = (
    """UPDATE public.launches l SET command = '[]', environment = '{}' FROM deletions d
       WHERE d.purge_started_at IS NOT NULL AND d.undone_at IS NULL AND l.run_id = d.run_id
         AND (d.attempt = 0 OR l.attempt = d.attempt)
         AND l.state IN ('finished', 'failed', 'refused')
         AND (l.command <> '[]' OR l.environment <> '{}')""",
    """UPDATE public.slurm_launches l SET command = '[]', environment = '{}', options = '{}',
              events = '[]' FROM deletions d
       WHERE d.purge_started_at IS NOT NULL AND d.undone_at IS NULL AND l.run_id = d.run_id
         AND d.attempt = 0 AND l.state = 'ended'
         AND (l.command <> '[]' OR l.environment <> '{}' OR l.options <> '{}'
              OR l.events <> '[]')""",
)

DUE = """
UPDATE deletions SET purge_started_at = now()
WHERE undone_at IS NULL AND purge_started_at IS NULL AND purge_after <= now()
"""
STARTED = """
SELECT deletion_id, run_id, attempt FROM deletions
WHERE undone_at IS NULL AND purge_started_at IS NOT NULL AND purged_at IS NULL
ORDER BY deletion_id
"""
#: Rich records' expiries, as deletions are.
DUE_RICH = """
UPDATE rich_expiries SET purge_started_at = now()
WHERE purge_started_at IS NULL AND purge_after <= now()
"""
STARTED_RICH = """
SELECT run_id, attempt_upto FROM rich_expiries
WHERE purge_started_at IS NOT NULL AND purged_at IS NULL ORDER BY run_id
"""


#: Objects swept in one transaction (one S3 DeleteObjects call), and how long a purge waits
#: for the object lock before it gives up (the next purge takes it up again).
SWEEP_CHUNK = 500
LOCK_TIMEOUT = "30s"


class Deleter(Protocol):
    def delete_many(self, keys: list[str]) -> None: ...


class Objects(Deleter, Segments, Protocol):
    """The object store as the purge uses it: sweeping, and pruning the topic's archive."""


@dataclass
class Purged:
    deletions: int = 0
    rows: int = 0
    objects_deleted: int = 0
    objects_kept: int = 0  # still referenced by another record
    rich_expiries: int = 0  # runs whose rich records expired (retention)
    launches_forgotten: int = 0
    archive: Pruned = field(default_factory=Pruned)


async def schemas(conn: asyncpg.Connection) -> list[str]:
    """The read-model schemas: the live one, and a rebuild's while it fills."""
    found = await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", NEXT)
    return [LIVE, *([NEXT] if found else [])]


async def purge_rows(conn: asyncpg.Connection, run_id: str, attempt: int) -> int:
    """Delete the run's (or attempt's) read-model rows; its rich records' keys are kept
    for the sweep. The count of rows deleted."""
    count = 0
    async with conn.transaction():
        # Shared, as a writer's: a sweep (exclusive) sees this purge's keys whole or not.
        await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", OBJECTS_LOCK)
        for schema in await schemas(conn):
            count += _count(await conn.execute(
                f"DELETE FROM {schema}.curve_chunks WHERE series_id IN (SELECT series_id "
                f"FROM {schema}.series WHERE run_id = $1 AND {ATTEMPT})", run_id, attempt))
            count += _count(await conn.execute(
                f"DELETE FROM {schema}.series_stats WHERE series_id IN (SELECT series_id "
                f"FROM {schema}.series WHERE run_id = $1 AND {ATTEMPT})", run_id, attempt))
            count += _count(await conn.execute(
                f"DELETE FROM {schema}.series WHERE run_id = $1 AND {ATTEMPT}", run_id, attempt))
            for table in BY_RUN:
                count += _count(await conn.execute(
                    f"DELETE FROM {schema}.{table} WHERE run_id = $1 AND {ATTEMPT}",
                    run_id, attempt))
            count += await _drop_rich(conn, schema, run_id, attempt)
        for table in REPORTED:  # its members' lifecycle events, logs and reports
            count += _count(await conn.execute(
                f"DELETE FROM public.{table} WHERE run_id = $1 AND {ATTEMPT}", run_id, attempt))
    return count


async def _drop_rich(conn: asyncpg.Connection, schema: str, run_id: str, attempt: int,
                     which: str = ATTEMPT) -> int:
    """Delete the run's rich-record rows of the attempts ``which`` says ($2: ``attempt``),
    keeping their keys for the sweep (inside a transaction holding ``OBJECTS_LOCK``
    shared)."""
    keys = await conn.fetch(f"DELETE FROM {schema}.rich_records WHERE run_id = $1 AND "
                            f"{which} RETURNING object_key", run_id, attempt)
    await conn.execute("INSERT INTO object_sweep (object_key) SELECT unnest($1::text[]) "
                       "ON CONFLICT DO NOTHING", sorted({k["object_key"] for k in keys}))
    return len(keys)


async def expire_rich(conn: asyncpg.Connection, run_id: str, upto: int) -> int:
    """Delete an expired run's rich-record rows of its attempts up to ``upto`` (its curves
    stay); their keys are kept for the sweep. The count of rows deleted."""
    async with conn.transaction():
        await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", OBJECTS_LOCK)
        return sum([await _drop_rich(conn, schema, run_id, upto, "attempt <= $2")
                    for schema in await schemas(conn)])


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])


async def sweep(conn: asyncpg.Connection, objects: Deleter | None) -> tuple[int, int]:
    """Delete the swept objects no rich record references, ``SWEEP_CHUNK`` at a time, each
    chunk under ``OBJECTS_LOCK`` exclusive (writers wait one S3 call at most); (deleted,
    kept)."""
    deleted = kept = 0
    after = ""
    while True:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            await conn.execute("SELECT pg_advisory_xact_lock($1)", OBJECTS_LOCK)
            referenced = " OR ".join([
                *(f"EXISTS (SELECT 1 FROM {schema}.rich_records r "
                  "WHERE r.object_key = s.object_key)" for schema in await schemas(conn)),
                "EXISTS (SELECT 1 FROM topic_archive t WHERE t.object_key = s.object_key)"])
            rows = await conn.fetch(
                f"SELECT s.object_key, ({referenced}) AS referenced FROM object_sweep s "
                "WHERE s.object_key > $1 ORDER BY s.object_key LIMIT $2", after, SWEEP_CHUNK)
            if not rows:
                return deleted, kept
            gone = [r["object_key"] for r in rows if not r["referenced"]]
            if gone:
                if objects is None:
                    raise RuntimeError("objects to sweep but no object store configured "
                                       "(TUNEPLANE_S3_ENDPOINT, TUNEPLANE_S3_BUCKET)")
                await asyncio.to_thread(objects.delete_many, gone)
            await conn.execute("DELETE FROM object_sweep WHERE object_key = ANY($1::text[])",
                               [r["object_key"] for r in rows])
        deleted, kept, after = deleted + len(gone), kept + len(rows) - len(gone), \
            rows[-1]["object_key"]


async def purge(conn: asyncpg.Connection, objects: Objects | None) -> Purged:
    """Purge every deletion whose undo window has ended (and any a purge left started)."""
    done = Purged()
    await conn.execute(DUE)
    await conn.execute(DUE_RICH)
    started, expired = await conn.fetch(STARTED), await conn.fetch(STARTED_RICH)
    if started or expired:  # every projector transaction begun before the marks ends first
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            await conn.execute("SELECT pg_advisory_xact_lock($1)", OBJECTS_LOCK)
    for row in started:
        done.rows += await purge_rows(conn, row["run_id"], int(row["attempt"]))
        log.info("purged run %s attempt %s (deletion %d)", row["run_id"],
                 row["attempt"] or "*", row["deletion_id"])
    for row in expired:
        done.rows += await expire_rich(conn, row["run_id"], int(row["attempt_upto"]))
        log.info("expired the rich records of run %s", row["run_id"])
    for statement in FORGOTTEN:  # what their launches were asked to run
        done.launches_forgotten += _count(await conn.execute(statement))
    done.archive = await prune_archive(conn, objects)  # its old segments go in the sweep
    if done.archive.busy:
        log.info("the topic's archive is busy (an archive pass, trim or replay): its "
                 "segments are pruned by a later purge")
    done.objects_deleted, done.objects_kept = await sweep(conn, objects)
    await conn.execute("UPDATE deletions SET purged_at = now() WHERE deletion_id = "
                       "ANY($1::bigint[])", [r["deletion_id"] for r in started])
    await conn.execute("UPDATE rich_expiries SET purged_at = now() WHERE run_id = "
                       "ANY($1::text[])", [r["run_id"] for r in expired])
    done.deletions, done.rich_expiries = len(started), len(expired)
    return done
