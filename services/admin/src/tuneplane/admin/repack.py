"""``tuneplane-admin repack-chunks``: curve chunks stored before packed blobs (migration
0037) rewritten as blobs, a page of chunks per transaction.

Each chunk's blob is decoded again and compared with its arrays, bit for bit, before it
replaces them: a chunk is never left holding other numbers than it did (the projector's
``checksum`` is the same before and after). What is done stays done: a repack stopped at
any point (a signal, a lost connection) goes on from where it was when run again, and it
runs beside live projectors (they write blobs already). A chunk whose arrays cannot be read
(columns of different lengths, a NULL element) or do not read back from their blob is left
as arrays, untouched, and named; the repack goes on with the others and exits 1. The space
the arrays held is reusable once PostgreSQL has vacuumed the table, which the repack asks
for at its end; returning it to the filesystem takes ``VACUUM (FULL)``, which locks the
table meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import NamedTuple, TypeVar

import asyncpg

from tuneplane.admin.settings import AdminSettings
from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Codec
from tuneplane.common.db import starting_with

#: The next chunks still stored as arrays, after the last one repacked: their keys and
#: points (a page is bounded by both: ``paged``).
NEXT = """
SELECT c.series_id, c.batch_id, c.chunk_index, c.n
FROM curve_chunks c
JOIN series s USING (series_id)
WHERE c.packed IS NULL AND (c.series_id, c.batch_id, c.chunk_index) > ($1, $2, $3)
  AND s.run_id LIKE $5
ORDER BY c.series_id, c.batch_id, c.chunk_index LIMIT $4
"""
#: A page's chunks with their arrays.
PAGE = f"""
SELECT c.series_id, c.batch_id, c.chunk_index,
       pg_column_size(c.steps) + pg_column_size(c.wall_times)
       + pg_column_size(c."values") AS array_bytes, {stored.SELECTED}
FROM curve_chunks c
JOIN unnest($1::bigint[], $2::text[], $3::int[]) AS k(series_id, batch_id, chunk_index)
     USING (series_id, batch_id, chunk_index)
WHERE c.packed IS NULL
"""
R = TypeVar("R", bound=stored.Row)
#: Points read in one page at most (each ~36 bytes as sent, then decoded and packed).
PAGE_POINTS = 1_000_000
REPACK = """
UPDATE curve_chunks c SET packed = u.packed, steps = NULL, wall_times = NULL, "values" = NULL
FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bytea[])
     AS u(series_id, batch_id, chunk_index, packed)
WHERE (c.series_id, c.batch_id, c.chunk_index) = (u.series_id, u.batch_id, u.chunk_index)
  AND c.packed IS NULL
"""
LEFT = """SELECT count(*) FROM curve_chunks c JOIN series s USING (series_id)
          WHERE c.packed IS NULL AND s.run_id LIKE $1"""
PROGRESS_SECONDS = 2.0
#: Chunks left as arrays named one by one at most; the others are counted.
NAMED = 20


class Repacked(NamedTuple):
    chunks: int  # repacked
    array_bytes: int  # their arrays' bytes
    blob_bytes: int  # their blobs'
    left: list[str]  # the chunks left as arrays, and why


def packed(row: asyncpg.Record, codec: Codec) -> bytes:
    """The chunk's blob, once it has been read back as the very bits of its arrays
    (ValueError naming the chunk: its arrays cannot be read, or the blob differs)."""
    where = f"chunk {row['batch_id']}/{row['chunk_index']} of series {row['series_id']}"
    try:
        points = stored.points_of(row, codec)
        blob = codec.encode(points.steps, points.wall_times, points.values)
    except ValueError as exc:
        raise ValueError(f"{where}: its arrays cannot be read: {exc}") from None
    if stored.bits(codec.decode(blob)) != stored.bits(points):
        raise ValueError(f"{where} does not read back as it was stored")
    return blob


def paged(found: list[R], points: int) -> list[R]:
    """The first of ``found`` whose points fit ``points`` (one at least)."""
    total = 0
    for i, row in enumerate(found):
        total += row["n"]
        if total > points and i:
            return found[:i]
    return found


async def repack(conn: asyncpg.Connection, page: int, run_prefix: str = "",
                 page_points: int = PAGE_POINTS) -> Repacked:
    """Every chunk still stored as arrays (of the runs whose id starts with
    ``run_prefix``), as blobs, ``page`` chunks and ``page_points`` points a transaction at
    most; a chunk that cannot be is left as it is, named in ``left``."""
    codec = Codec()
    runs = starting_with(run_prefix)
    total = int(await conn.fetchval(LEFT, runs))
    done = array_bytes = blob_bytes = 0
    left: list[str] = []
    after: tuple[int, str, int] = (-1, "", -1)
    said = time.monotonic()
    while True:
        keys = paged(await conn.fetch(NEXT, *after, page, runs), page_points)
        if not keys:
            break
        after = (keys[-1]["series_id"], keys[-1]["batch_id"], keys[-1]["chunk_index"])
        rows, blobs = [], []
        for row in await conn.fetch(PAGE, *([k[i] for k in keys] for i in range(3))):
            try:
                blobs.append(packed(row, codec))
            except ValueError as exc:
                left.append(str(exc))
                continue
            rows.append(row)
        async with conn.transaction():  # a chunk another repack packed meanwhile: skipped
            status = await conn.execute(
                REPACK, [r["series_id"] for r in rows], [r["batch_id"] for r in rows],
                [r["chunk_index"] for r in rows], blobs)
        done += int(status.split()[-1])
        array_bytes += sum(int(r["array_bytes"]) for r in rows)
        blob_bytes += sum(map(len, blobs))
        if time.monotonic() - said >= PROGRESS_SECONDS:
            said = time.monotonic()
            print(f"repacked {done:,} of {total:,} chunks: {array_bytes:,} bytes of arrays "
                  f"as {blob_bytes:,}", file=sys.stderr, flush=True)
    return Repacked(done, array_bytes, blob_bytes, left)


async def run(database_url: str, page: int, run_prefix: str, vacuum: bool) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        done = await repack(conn, page, run_prefix)
        if done.chunks and vacuum:
            await conn.execute("VACUUM (ANALYZE) curve_chunks")
    finally:
        await conn.close()
    ratio = f" ({done.array_bytes / done.blob_bytes:.1f}x smaller)" if done.blob_bytes else ""
    print(f"repacked {done.chunks:,} chunks: {done.array_bytes:,} bytes of arrays as "
          f"{done.blob_bytes:,} bytes of blobs{ratio}")
    if not done.left:
        return 0
    for why in done.left[:NAMED]:
        print(f"left as arrays: {why}", file=sys.stderr)
    more = f" ({len(done.left) - NAMED:,} more not named)" if len(done.left) > NAMED else ""
    print(f"{len(done.left):,} chunks left as arrays, read as before{more}; the others are "
          "repacked", file=sys.stderr)
    return 1


def cmd_repack(args: argparse.Namespace, settings: AdminSettings) -> int:
    if args.page < 1:
        raise ValueError(f"--page must be at least 1, not {args.page}")
    return asyncio.run(run(settings.database_url.get(), args.page, args.run_prefix,
                           not args.no_vacuum))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "repack-chunks", help="rewrite curve chunks stored as arrays as packed blobs "
        "(resumable; runs beside live projectors)", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--page", type=int, default=500,
                   help="chunks repacked per transaction (default 500)")
    c.add_argument("--run-prefix", default="", metavar="PREFIX",
                   help="only the runs whose id starts with PREFIX (default: every run)")
    c.add_argument("--no-vacuum", action="store_true",
                   help="do not VACUUM the table at the end (its space stays unreusable "
                   "until autovacuum comes)")
    c.set_defaults(func=cmd_repack)
