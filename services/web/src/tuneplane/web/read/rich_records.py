"""SQL over an attempt's rich records: the bounded listing, its tags, and one tag's records
sampled evenly over its steps (what the Media page shows and decodes).

A record's TensorBoard run path is derived, not stored: it is the directory of the event
file the record was read from (``file``, relative to the log directory), exactly as the
collector derives a series' ``run_path`` and ``purge`` a restart marker's run. A rich
JSONL channel's ``file`` is a bare name, so its records are the root's (''), as its
series are.
"""

from __future__ import annotations

from typing import Any, Final

from tuneplane.common.db import Connection

#: The run path of a record: ``file`` without its last '/'-separated part.
RUN_PATH: Final = r"regexp_replace(file, '/?[^/]*$', '')"

RICH = f"""
SELECT member, source, {RUN_PATH} AS run_path, tag, step, wall_time, kind, plugin_name, file,
       file_offset, object_key, bytes
FROM rich_records
WHERE run_id = $1 AND attempt = $2 AND ($3::text IS NULL OR member = $3)
  AND ($4::text IS NULL OR source = $4) AND ($5::text IS NULL OR tag = $5)
  AND ($8::text IS NULL OR {RUN_PATH} = $8) AND step >= $6
ORDER BY step, member, source, tag, batch_id, record_index LIMIT $7
"""

TAGS = f"""
SELECT member, source, {RUN_PATH} AS run_path, tag, kind, min(plugin_name) AS plugin_name,
       count(*) AS records, min(step) AS step_min, max(step) AS step_max
FROM rich_records
WHERE run_id = $1 AND attempt = $2 AND ($3::text IS NULL OR member = $3)
  AND ($4::text IS NULL OR kind = $4)
GROUP BY member, source, run_path, tag, kind
ORDER BY member, source, run_path, tag, kind LIMIT $5
"""

# Row i of n is kept when it is floor(k (n-1) / (limit-1)) for some k: the limit's worth
# spread evenly, the first and last among them (as TensorBoard keeps the latest). The test
# inverts that floor: k = ceil(i (limit-1) / (n-1)), in integers.
SAMPLE = f"""
WITH tagged AS (
    SELECT member, source, {RUN_PATH} AS run_path, tag, step, wall_time, kind, plugin_name,
           file, file_offset, object_key, bytes,
           row_number() OVER (ORDER BY step, batch_id, record_index) - 1 AS i,
           count(*) OVER () AS n
    FROM rich_records
    WHERE run_id = $1 AND attempt = $2 AND member = $3 AND source = $4 AND tag = $5
      AND {RUN_PATH} = $6
)
SELECT member, source, run_path, tag, step, wall_time, kind, plugin_name, file, file_offset,
       object_key, bytes, n AS records
FROM tagged
WHERE n <= $7 OR (i * ($7 - 1) + n - 2) / (n - 1) * (n - 1) / ($7 - 1) = i
ORDER BY i
"""


async def listing(conn: Connection, run_id: str, attempt: int, *, member: str | None,
                  source: str | None, tag: str | None, run_path: str | None, from_step: int,
                  limit: int) -> list[dict[str, Any]]:
    """The attempt's records from ``from_step`` on, in step order, filtered by what is
    named (None: any), ``limit`` at most."""
    rows = await conn.fetch(RICH, run_id, attempt, member, source, tag, from_step, limit,
                            run_path)
    return [dict(row) for row in rows]


async def tags(conn: Connection, run_id: str, attempt: int, *, member: str | None,
               kind: str | None, limit: int) -> list[dict[str, Any]]:
    """Each (member, source, run path, tag, kind) with records: how many, and their steps."""
    rows = await conn.fetch(TAGS, run_id, attempt, member, kind, limit)
    return [dict(row) for row in rows]


async def sample(conn: Connection, run_id: str, attempt: int, member: str, source: str,
                 run_path: str, tag: str, limit: int) -> list[dict[str, Any]]:
    """At most ``limit`` (2 or more) records of one tag, spread evenly over its records in
    step order; each row says how many the tag has (``records``)."""
    rows = await conn.fetch(SAMPLE, run_id, attempt, member, source, tag, run_path, limit)
    return [dict(row) for row in rows]
