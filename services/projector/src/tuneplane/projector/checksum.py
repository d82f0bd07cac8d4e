"""A checksum of everything the read models hold, by natural keys (ids and times excluded),
so a rebuild from the topic can be compared with what it replaced. A series of the root
run path ('') adds nothing for it, so data from before run paths sums as it did."""

from __future__ import annotations

import asyncpg

#: A chunk's wall times stamped when read (migration 0021): nothing for the rest, so data
#: from before sums as it did.
WALLS_READ = ", nullif(c.walls_read, false)"

PARTS = {
    "ledger": """SELECT concat_ws(',', run_id, attempt, member, batch_id, kafka_partition,
                                 kafka_offset, points, sealed_at)
                 FROM batch_ledger""",
    "curves": """SELECT concat_ws(',', s.run_id, s.attempt, s.member, s.source,
                                 nullif(s.run_path, ''), s.tag,
                                 c.batch_id, c.chunk_index, c.n, c.step_min, c.step_max,
                                 c.v_min, c.v_max, c.v_first, c.v_last, c.steps::text,
                                 c.wall_times::text, c."values"::text""" + WALLS_READ + """)
                 FROM curve_chunks c JOIN series s USING (series_id)""",
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


async def checksum(conn: asyncpg.Connection, run_prefix: str = "") -> dict[str, str]:
    """md5 per part over rows sorted by content; ``run_prefix`` limits it to some runs."""
    result = {}
    for name, rows in PARTS.items():
        value = await conn.fetchval(
            f"SELECT coalesce(md5(string_agg(r, '|' ORDER BY r)), 'empty') "
            f"FROM ({rows}) AS t(r) WHERE r LIKE $1", run_prefix + "%")
        result[name] = str(value)
    return result
