"""A checksum of everything the read models hold, by natural keys (ids and times excluded),
so a rebuild from the topic can be compared with what it replaced. Curve chunks are summed
by their points as decoded (``curves``): a chunk packed by ``repack-chunks`` sums as its
arrays did."""

from __future__ import annotations

import hashlib

import asyncpg

from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Codec
from tuneplane.common.db import starting_with

CURVES = f"""
SELECT s.run_id, s.attempt, s.member, s.source, s.run_path, s.tag, c.batch_id, c.chunk_index,
       c.n, c.step_min, c.step_max, c.v_min, c.v_max, c.v_first, c.v_last, c.walls_read,
       {stored.SELECTED}
FROM curve_chunks c JOIN series s USING (series_id) WHERE s.run_id LIKE $1
"""
KEYS = ("run_id", "attempt", "member", "source", "run_path", "tag", "batch_id", "chunk_index",
        "n", "step_min", "step_max", "v_min", "v_max", "v_first", "v_last", "walls_read")

PARTS = {
    "ledger": """SELECT concat_ws(',', run_id, attempt, member, batch_id, kafka_partition,
                                 kafka_offset, points, sealed_at)
                 FROM batch_ledger""",
    "rich": """SELECT concat_ws(',', run_id, attempt, member, batch_id, record_index, source,
                               tag, step, wall_time, kind, plugin_name, md5(plugin_content),
                               file, file_offset, object_key, bytes)
               FROM rich_records""",
    "session_starts": """SELECT concat_ws(',', run_id, attempt, member, batch_id, marker_index,
                                         source, file, file_offset, step, wall_time,
                                         tags::text)
                         FROM session_starts""",
    "config": """SELECT concat_ws(',', run_id, attempt, member, key, value::text, origin,
                                 source, run_path, wall_time, sealed_at)
                 FROM run_config""",
    "series_stats": """SELECT concat_ws(',', s.run_id, s.attempt, s.member, s.source,
                                       s.run_path, s.tag, t.points, t.v_min, t.v_max,
                                       t.step_last, t.v_last, t.last_sealed_at)
                       FROM series_stats t JOIN series s USING (series_id)""",
}


def curve_line(row: asyncpg.Record, codec: Codec) -> str:
    """A chunk as summed: its keys and summary, and the md5 of its points as decoded
    (steps, wall times and values as little-endian int64 and float64)."""
    digest = hashlib.md5(usedforsecurity=False)
    for column in stored.bits(stored.points_of(row, codec)):
        digest.update(column)
    return ",".join([*("" if row[k] is None else repr(row[k]) for k in KEYS),
                     digest.hexdigest()])


async def curves(conn: asyncpg.Connection, run_prefix: str) -> str:
    """The md5 of every chunk's ``curve_line``, sorted, read a page at a time."""
    codec = Codec()
    async with conn.transaction():
        lines = sorted([curve_line(row, codec) async for row in conn.cursor(
            CURVES, starting_with(run_prefix), prefetch=500)])
    if not lines:
        return "empty"
    return hashlib.md5("|".join(lines).encode(), usedforsecurity=False).hexdigest()


async def checksum(conn: asyncpg.Connection, run_prefix: str = "") -> dict[str, str]:
    """md5 per part over rows sorted by content; ``run_prefix`` limits it to some runs."""
    result = {}
    for name, rows in PARTS.items():
        value = await conn.fetchval(
            f"SELECT coalesce(md5(string_agg(r, '|' ORDER BY r)), 'empty') "
            f"FROM ({rows}) AS t(r) WHERE r LIKE $1", starting_with(run_prefix))
        result[name] = str(value)
    result["curves"] = await curves(conn, run_prefix)
    return result
