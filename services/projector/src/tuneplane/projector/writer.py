"""Writers of projections: rich bytes to the object store, rows to PostgreSQL.

One PostgreSQL transaction holds a group of batches: for each, the ledger row first
(a batch identity already there has no effect), then its curve chunks, rich-record
metadata and restart markers. Rich bytes are written inside the transaction, before its
rows, under content-addressed keys, so a crash in between leaves only an unreferenced
object that the replay rewrites unchanged; the transaction holds ``OBJECTS_LOCK`` shared
meanwhile, so a purge's sweep (exclusive) never deletes an object whose reference is about
to commit. A batch of a run or attempt whose deletion is being purged is not written
(``deletions``): no projection of the topic brings it back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import asyncpg

from tuneplane.common.chunks.blob import Codec
from tuneplane.common.db import Connection
from tuneplane.projector import pgbinary as pg
from tuneplane.projector import withheld
from tuneplane.projector.projection import ChunkRow, Projection
from tuneplane.projector.run_config import Stats, keep_config, keep_stats
from tuneplane.projector.summaries import count_spools, summarise
from tuneplane.telemetry.v1.identity import SeriesKey

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


#: Shared by every projector transaction; a rebuild takes it exclusively to swap tables.
SWAP_LOCK = 0x7470_7377_6170  # "tpswap"
#: Shared by every projector transaction (a rebuild's too); a purge takes it exclusively to
#: wait out the transactions begun before it, and to sweep objects.
OBJECTS_LOCK = 0x7470_6f62_6a73  # "tpobjs"

INSERT_LEDGER = """
INSERT INTO batch_ledger (run_id, attempt, member, batch_id, kafka_partition, kafka_offset,
                          points, sealed_at, late)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT DO NOTHING
RETURNING 1
"""

UPSERT_SERIES = """
WITH wanted AS (SELECT DISTINCT * FROM unnest($4::text[], $5::text[], $6::text[])
                AS w(source, run_path, tag)),
inserted AS (
    INSERT INTO series (run_id, attempt, member, source, run_path, tag)
    SELECT $1, $2, $3, source, run_path, tag FROM wanted
    ON CONFLICT DO NOTHING
    RETURNING series_id, source, run_path, tag
)
SELECT series_id, source, run_path, tag, true AS created FROM inserted
UNION ALL
SELECT s.series_id, s.source, s.run_path, s.tag, false
FROM series s JOIN wanted w USING (source, run_path, tag)
WHERE s.run_id = $1 AND s.attempt = $2 AND s.member = $3
"""

#: curve_chunks' columns as ``chunk_record`` orders them, each with its binary encoding.
CHUNK_ENCODED = (("series_id", pg.int8), ("batch_id", pg.text), ("chunk_index", pg.int4),
                 ("n", pg.int4), ("step_min", pg.int8), ("step_max", pg.int8),
                 ("v_min", pg.float8), ("v_max", pg.float8), ("v_first", pg.float8),
                 ("v_last", pg.float8), ("w_first", pg.float8), ("w_last", pg.float8),
                 ("packed", pg.bytea), ("seg_steps", pg.int8_array),
                 ("seg_last_steps", pg.int8_array), ("seg_counts", pg.int4_array),
                 ("seg_min", pg.nullable_float8_array), ("seg_max", pg.nullable_float8_array),
                 ("seg_last", pg.float8_array), ("seg_last_walls", pg.float8_array),
                 ("walls_read", pg.boolean))
CHUNK_COLUMNS = tuple(column for column, _ in CHUNK_ENCODED)
CHUNK_FIELDS = tuple(encode for _, encode in CHUNK_ENCODED)
#: Packs chunks' points (``tuneplane.common.chunks``): the writer runs on one event loop.
CODEC = Codec()
RICH_COLUMNS = ("run_id", "attempt", "member", "batch_id", "record_index", "source", "tag",
                "step", "wall_time", "kind", "plugin_name", "plugin_content", "file",
                "file_offset", "object_key", "bytes")
START_COLUMNS = ("run_id", "attempt", "member", "batch_id", "marker_index", "source", "file",
                 "file_offset", "step", "wall_time", "tags")


def segment_columns(chunk: ChunkRow) -> tuple[object, ...]:
    s = chunk.segments
    if s is None:
        return (None,) * 7
    return (s.first_steps, s.last_steps, s.counts, s.mins, s.maxs, s.lasts, s.last_walls)


def chunk_record(series_id: int, batch_id: str, c: ChunkRow) -> tuple[object, ...]:
    return (series_id, batch_id, c.chunk_index, len(c.steps), c.step_min, c.step_max, c.v_min,
            c.v_max, c.v_first, c.v_last, c.w_first, c.w_last,
            CODEC.encode(c.steps, c.wall_times, c.values), *segment_columns(c), c.walls_read)


class ObjectStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``; the same key always gets the same bytes."""


class S3ObjectStore:
    def __init__(self, client: S3Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def put(self, key: str, data: bytes) -> None:
        self._client.put_object(Bucket=self._bucket, Key=key, Body=data)

    def get(self, key: str) -> bytes:
        return bytes(self._client.get_object(Bucket=self._bucket, Key=key)["Body"].read())

    def keys(self, prefix: str) -> list[str]:
        """The keys that start with ``prefix``."""
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def delete_many(self, keys: list[str]) -> None:
        """Delete up to 1,000 objects in one call; any refusal raises."""
        answer = self._client.delete_objects(
            Bucket=self._bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True})
        if answer.get("Errors"):
            raise RuntimeError(f"objects not deleted: {answer['Errors'][:5]}")


#: The member's file was read to here: a batch of a later spool epoch (sent only once the
#: read models held every batch of the earlier ones: GetCheckpoints) or a higher sequence of
#: the same epoch (batches in flight together may reach Kafka out of order) moves it.
CHECKPOINT = """
INSERT INTO source_checkpoints AS c (run_id, attempt, member, source, file, spool_epoch,
                                     sequence, fingerprint, generation, "offset", line, state)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (run_id, attempt, member, source, file) DO UPDATE SET
    spool_epoch = excluded.spool_epoch, sequence = excluded.sequence,
    fingerprint = excluded.fingerprint, generation = excluded.generation,
    "offset" = excluded."offset", line = excluded.line, state = excluded.state
WHERE c.spool_epoch <> excluded.spool_epoch OR c.sequence < excluded.sequence
"""

SERIES_OF_ATTEMPT = "SELECT count(*) FROM series WHERE run_id = $1 AND attempt = $2"


class TooManySeries(Exception):
    """The batch would take its attempt past the series bound: one job cannot create
    millions of series. The batch is poison; its attempt's other batches are not."""


class PostgresWriter:
    """Writes projections; a batch identity already in the ledger has no effect."""

    def __init__(self, pool: asyncpg.Pool, objects: ObjectStore | None = None, *,
                 shares_swap_lock: bool = True, max_series: int | None = None) -> None:
        self._pool = pool
        self._objects = objects
        self._shares_swap_lock = shares_swap_lock  # False only for the rebuild's own writer
        self._max_series = max_series  # per attempt; None: unbounded

    async def write(self, projection: Projection) -> bool:
        """Returns True when applied, False when the batch was a duplicate."""
        return (await self.write_group([projection]))[0]

    async def write_group(self, projections: Sequence[Projection]) -> list[bool]:
        """One transaction for the group; returns, per batch, whether it was applied."""
        async with self._pool.acquire() as conn, conn.transaction():
            if self._shares_swap_lock:
                await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", SWAP_LOCK)
            await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", OBJECTS_LOCK)
            projections = await withheld.without_expired_rich(conn, projections)
            kept = await withheld.not_purged(conn, projections)
            await self._store_rich([p for p, keep in zip(projections, kept, strict=True)
                                    if keep])
            chunks: list[tuple[object, ...]] = []
            stats: list[tuple[int, Stats]] = []
            applied = [keep and await self._apply(conn, p, chunks, stats)
                       for p, keep in zip(projections, kept, strict=True)]
            if chunks:  # the group's curve chunks in one binary COPY
                await conn.copy_to_table("curve_chunks", columns=CHUNK_COLUMNS,
                                         source=pg.source(pg.rows(CHUNK_FIELDS, chunks)),
                                         format="binary")
                await keep_stats(conn, stats)
            fresh = [p for p, new in zip(projections, applied, strict=True) if new]
            await summarise(conn, fresh)
            await count_spools(conn, fresh)
            return applied

    async def _store_rich(self, projections: Sequence[Projection]) -> None:
        objects = {row.object_key: row.payload for p in projections for row in p.rich}
        if not objects:
            return
        if self._objects is None:
            raise RuntimeError("rich records to project but no object store configured "
                               "(TUNEPLANE_S3_ENDPOINT, TUNEPLANE_S3_BUCKET)")
        store = self._objects
        await asyncio.gather(*(asyncio.to_thread(store.put, key, data)
                               for key, data in objects.items()))

    async def _check_series_bound(self, conn: Connection, projection: Projection) -> None:
        member = projection.key.member
        count = await conn.fetchval(SERIES_OF_ATTEMPT, member.run_id, member.attempt)
        if self._max_series is not None and count > self._max_series:
            raise TooManySeries(f"batch {projection.key} would give run {member.run_id} "
                                f"attempt {member.attempt} {count} series, over the bound of "
                                f"{self._max_series} (TUNEPLANE_TELEMETRY_MAX_SERIES)")

    async def _apply(self, conn: Connection, projection: Projection,
                     chunks: list[tuple[object, ...]], stats: list[tuple[int, Stats]]) -> bool:
        """Writes the batch's ledger row, series, rich rows, markers and config; adds its
        curve chunks' records to ``chunks`` and their figures to ``stats``."""
        key, member = projection.key, projection.key.member
        ids = (member.run_id, member.attempt, member.member, key.batch_id)
        fresh = await conn.fetchval(INSERT_LEDGER, *ids, projection.meta.partition,
                                    projection.meta.offset, projection.points,
                                    projection.sealed_at, projection.meta.late)
        if fresh is None:
            return False
        if projection.chunks:
            rows = await conn.fetch(
                UPSERT_SERIES, member.run_id, member.attempt, member.member,
                [c.source for c in projection.chunks], [c.run_path for c in projection.chunks],
                [c.tag for c in projection.chunks])
            if self._max_series is not None and any(r["created"] for r in rows):
                await self._check_series_bound(conn, projection)
            series_ids = {SeriesKey(member, r["source"], r["run_path"], r["tag"]):
                          r["series_id"] for r in rows}
            for c in projection.chunks:
                series_id = series_ids[SeriesKey(member, c.source, c.run_path, c.tag)]
                chunks.append(chunk_record(series_id, key.batch_id, c))
                stats.append((series_id, Stats(len(c.steps), c.v_min, c.v_max,
                                               int(c.steps[-1]), c.v_last,
                                               projection.sealed_at)))
        if projection.rich:
            await conn.copy_records_to_table(
                "rich_records", columns=RICH_COLUMNS,
                records=[(*ids, r.record_index, r.source, r.tag, r.step, r.wall_time, r.kind,
                          r.plugin_name, r.plugin_content, r.file, r.file_offset, r.object_key,
                          len(r.payload)) for r in projection.rich])
        if projection.session_starts:
            await conn.copy_records_to_table(
                "session_starts", columns=START_COLUMNS,
                records=[(*ids, m.marker_index, m.source, m.file, m.file_offset, m.step,
                          m.wall_time, list(m.tags)) for m in projection.session_starts])
        if projection.config:
            await keep_config(conn, projection)
        if (at := projection.position) is not None:
            await conn.execute(CHECKPOINT, member.run_id, member.attempt, member.member,
                               at.source, at.file, key.spool_epoch, key.sequence,
                               at.fingerprint, at.generation, at.offset, at.line, at.state)
        return True
