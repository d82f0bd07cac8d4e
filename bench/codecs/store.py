"""What PostgreSQL stores for a corpus's chunks: scratch tables in a scratch schema
(dropped at the end), their total relation size (heap, TOAST, indexes) and each column's
``pg_column_size`` summed.

Today's table is ``LIKE readmodel.curve_chunks INCLUDING ALL`` (both indexes), filled with
the projector's own binary COPY as it was before packed blobs (lz4 point arrays). A
candidate's table keeps the same summary columns and indexes; its point columns and segment
summaries are ``bytea`` with ``STORAGE EXTERNAL`` (already compressed: PostgreSQL should
not try again). With ``one_blob`` a row's columns and segments are one length-prefixed
``bytea`` instead (one TOAST value a row: fewer part-filled TOAST chunks).
"""

from __future__ import annotations

import os
import statistics
import struct
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

from bench.codecs.corpus import Chunk
from bench.codecs.segments import chunk_row
from tuneplane.projector import pgbinary as pg
from tuneplane.projector.projection import ChunkRow
from tuneplane.projector.writer import CHUNK_ENCODED, chunk_record

#: The chunk columns as the projector wrote them before packed blobs (migration 0037): its
#: point arrays where ``packed`` is now.
PACKED_AT = [column for column, _ in CHUNK_ENCODED].index("packed")
ARRAYS_ENCODED = (*CHUNK_ENCODED[:PACKED_AT], ("steps", pg.int8_array),
                  ("wall_times", pg.float8_array), ("values", pg.float8_array),
                  *CHUNK_ENCODED[PACKED_AT + 1:])


def arrays_record(series_id: int, batch_id: str, c: ChunkRow) -> tuple[object, ...]:
    record = chunk_record(series_id, batch_id, c)
    return (*record[:PACKED_AT], c.steps, c.wall_times, c.values, *record[PACKED_AT + 1:])

SEGMENT_COLUMNS = ("seg_steps", "seg_last_steps", "seg_counts", "seg_min", "seg_max",
                   "seg_last", "seg_last_walls")
SUMMARY_COLUMNS = ("series_id", "batch_id", "chunk_index", "n", "step_min", "step_max",
                   "v_min", "v_max", "v_first", "v_last", "w_first", "w_last", "walls_read")
BLOB_COLUMNS = ("steps", "wall_times", "values", "segments")

CANDIDATE_TABLE = """
CREATE TABLE {table} (
    series_id bigint NOT NULL, batch_id text NOT NULL, chunk_index integer NOT NULL,
    n integer NOT NULL, step_min bigint NOT NULL, step_max bigint NOT NULL,
    v_min double precision, v_max double precision, v_first double precision NOT NULL,
    v_last double precision NOT NULL, w_first double precision NOT NULL,
    w_last double precision NOT NULL, walls_read boolean NOT NULL,
    steps bytea NOT NULL, wall_times bytea NOT NULL, "values" bytea NOT NULL, segments bytea,
    PRIMARY KEY (series_id, batch_id, chunk_index));
CREATE INDEX ON {table} (series_id, step_min, step_max);
ALTER TABLE {table} ALTER steps SET STORAGE EXTERNAL, ALTER wall_times SET STORAGE EXTERNAL,
    ALTER "values" SET STORAGE EXTERNAL, ALTER segments SET STORAGE EXTERNAL;
"""


#: Decodes a chunk's point columns as PostgreSQL sent them, given its point count.
Decoder = Callable[[tuple[bytes, ...], int], object]

#: What the web's chunk query sends today (``SENT_ARRAYS``), for all the table's rows.
READ_TODAY = """SELECT n, array_send(steps) AS steps, array_send(wall_times) AS walls,
       array_send("values") AS "values" FROM {table}"""
READ_BLOBS = 'SELECT n, steps, wall_times AS walls, "values" FROM {table}'
READ_PACKED = 'SELECT n, packed AS steps, NULL AS walls, NULL AS "values" FROM {table}'


def joined(parts: Sequence[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(p)) + p for p in parts)


def parted(blob: bytes) -> tuple[bytes, ...]:
    parts, at = [], 0
    while at < len(blob):
        (size,) = struct.unpack_from("<I", blob, at)
        parts.append(blob[at + 4:at + 4 + size])
        at += 4 + size
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class Stored:
    """Bytes on disk (the whole relation; the point and segment columns' values), and the
    seconds to read every chunk's points from PostgreSQL and decode them."""

    total: int
    steps: int
    walls: int
    values: int
    segments: int
    read: float | None


def identity(chunk: Chunk, tags: dict[str, int]) -> tuple[int, str, int]:
    """A chunk's series id (one per tag), batch id (the spool epoch, then the sequence)
    and index in its batch (the batch holds one chunk of each tag, in tag order)."""
    series_id = tags.setdefault(chunk.tag, len(tags) + 1)
    return series_id, f"b3e1f0c2a9d84c17-{chunk.batch}", series_id - 1


class Scratch:
    """A scratch schema on one connection; each ``store_*`` makes and sizes one table."""

    def __init__(self, conn: asyncpg.Connection, schema: str) -> None:
        self._conn = conn
        self._schema = schema
        self._tables = 0

    def _table(self) -> str:
        self._tables += 1
        return f"{self._schema}.t{self._tables}"

    async def _read(self, query: str, decode: Decoder | None, repeat: int) -> float | None:
        """The median seconds of one query for all the chunks, and their decoding."""
        if decode is None:
            return None
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for r in await self._conn.fetch(query):
                decode((r["steps"], r["walls"], r["values"]), r["n"])
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    async def _sized(self, table: str, segments: Sequence[str], read: float | None) -> Stored:
        sums = ", ".join(f"coalesce(sum(pg_column_size({c})), 0)"
                         for c in ("steps", "wall_times", '"values"'))
        seg_sum = " + ".join(f"coalesce(sum(pg_column_size({c})), 0)" for c in segments)
        row = await self._conn.fetchrow(
            f"SELECT pg_total_relation_size('{table}'), {sums}, {seg_sum} FROM {table}")
        assert row is not None
        total, steps, walls, values, segs = (int(v) for v in row.values())
        await self._conn.execute(f"DROP TABLE {table}")
        return Stored(total, steps, walls, values, segs, read)

    async def store_today(self, chunks: Sequence[Chunk], walls_read: bool, decode: Decoder,
                          repeat: int) -> Stored:
        """The table as the projector filled it before packed blobs: lz4 point arrays."""
        return await self._store_live(chunks, walls_read, decode, repeat, arrays_record,
                                      ARRAYS_ENCODED, READ_TODAY)

    async def store_packed(self, chunks: Sequence[Chunk], walls_read: bool, decode: Decoder,
                           repeat: int) -> Stored:
        """The table as the projector fills it now: one packed blob a chunk, segment
        summaries as arrays."""
        return await self._store_live(chunks, walls_read, decode, repeat, chunk_record,
                                      CHUNK_ENCODED, READ_PACKED)

    async def _store_live(self, chunks: Sequence[Chunk], walls_read: bool, decode: Decoder,
                          repeat: int, record: Callable[[int, str, ChunkRow], tuple[object, ...]],
                          encoded: Sequence[tuple[str, pg.Field]], read_query: str) -> Stored:
        """A table ``LIKE readmodel.curve_chunks``, filled by the projector's binary COPY of
        ``record``'s rows (``encoded``: their columns and encodings), then read back."""
        table = self._table()
        await self._conn.execute(
            f"CREATE TABLE {table} (LIKE readmodel.curve_chunks INCLUDING ALL)")
        tags: dict[str, int] = {}
        records = []
        for chunk in chunks:
            series_id, batch_id, index = identity(chunk, tags)
            records.append(record(series_id, batch_id, chunk_row(chunk, walls_read, index)))
        name = table.split(".")[1]
        await self._conn.copy_to_table(
            name, schema_name=self._schema, columns=[column for column, _ in encoded],
            source=pg.source(pg.rows([field for _, field in encoded], records)),
            format="binary")
        read = await self._read(read_query.format(table=table), decode, repeat)
        return await self._sized(table, SEGMENT_COLUMNS, read)

    async def store_blobs(self, chunks: Sequence[Chunk], blobs: Sequence[tuple[bytes, ...]],
                          segments: Sequence[bytes | None], walls_read: bool,
                          decode: Decoder | None, repeat: int, one_blob: bool = False
                          ) -> Stored:
        table = self._table()
        if one_blob:
            blobs = [(joined([*columns, segs or b""]), b"", b"")
                     for columns, segs in zip(blobs, segments, strict=True)]
            segments = [None] * len(blobs)
            if decode is not None:
                inner = decode

                def decode(sent: tuple[bytes, ...], n: int) -> object:
                    return inner(parted(sent[0])[:3], n)

        await self._conn.execute(CANDIDATE_TABLE.format(table=table))
        tags: dict[str, int] = {}
        records = []
        for chunk, columns, segs in zip(chunks, blobs, segments, strict=True):
            row = chunk_row(chunk, walls_read)
            records.append((*identity(chunk, tags), len(chunk), row.step_min, row.step_max,
                            row.v_min, row.v_max, row.v_first, row.v_last, row.w_first,
                            row.w_last, walls_read, *columns, segs))
        name = table.split(".")[1]
        await self._conn.copy_records_to_table(name, schema_name=self._schema,
                                               columns=(*SUMMARY_COLUMNS, *BLOB_COLUMNS),
                                               records=records)
        read = await self._read(READ_BLOBS.format(table=table), decode, repeat)
        return await self._sized(table, ("segments",), read)


@asynccontextmanager
async def scratch(url: str) -> AsyncIterator[Scratch]:
    """A scratch schema of this process, dropped with all it holds when done."""
    schema = f"bench_chunk_codecs_{os.getpid()}"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield Scratch(conn, schema)
        finally:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
    finally:
        await conn.close()
