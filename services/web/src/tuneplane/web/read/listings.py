"""The read path's listings, each a named query with its bounds: runs by telemetry, a run's
attempts, an attempt's members, late batches and series, one tag's series and a series' id.
Routes call these; none holds SQL of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import SeriesKey
from tuneplane.web.read.visible import attempt_kept, in_projects, run_kept

RUNS = """
SELECT l.run_id, coalesce(min(r.project), 'default') AS project,
       count(DISTINCT l.attempt) AS attempts, count(*) AS batches,
       sum(l.points)::bigint AS points, max(l.projected_at) AS last_batch_at
FROM batch_ledger l LEFT JOIN runs r ON r.run_id = l.run_id
WHERE ($1::text IS NULL OR l.run_id > $1)
  AND """ + in_projects("coalesce(r.project, 'default')", "$3") + """
  AND """ + run_kept("l.run_id") + """
GROUP BY l.run_id ORDER BY l.run_id LIMIT $2
"""

ATTEMPTS = """
SELECT attempt, count(DISTINCT member) AS members, count(*) AS batches,
       sum(points)::bigint AS points, max(projected_at) AS last_batch_at,
       count(*) FILTER (WHERE late) AS late_batches
FROM batch_ledger l WHERE run_id = $1 AND """ + attempt_kept("l.run_id", "l.attempt") + """
GROUP BY attempt ORDER BY attempt
"""

MEMBERS = """
SELECT s.member, array_agg(DISTINCT s.source ORDER BY s.source) AS sources,
       count(*) AS series, coalesce(min(m.points), 0) AS points,
       min(m.last_batch_at) AS last_batch_at,
       (SELECT count(*) FROM member_spools p WHERE p.run_id = $1 AND p.attempt = $2
        AND p.member = s.member) AS spools
FROM series s LEFT JOIN member_summaries m USING (run_id, attempt, member)
WHERE s.run_id = $1 AND s.attempt = $2
GROUP BY s.member ORDER BY s.member LIMIT $3
"""

LATE = """
SELECT member, batch_id, points, sealed_at, projected_at FROM batch_ledger
WHERE run_id = $1 AND attempt = $2 AND late
ORDER BY member, sealed_at, batch_id LIMIT $3
"""

# Each series' chunks summed only for the series of the page (an attempt may hold 100,000).
SERIES = """
SELECT s.member, s.source, s.run_path, s.tag, c.points, c.step_min, c.step_max, c.wall_time
FROM series s CROSS JOIN LATERAL (
    SELECT sum(c.n)::bigint AS points, min(c.step_min) AS step_min, max(c.step_max) AS step_max,
           CASE WHEN bool_and(c.walls_read) THEN 'read' WHEN bool_or(c.walls_read) THEN 'mixed'
                ELSE 'written' END AS wall_time
    FROM curve_chunks c WHERE c.series_id = s.series_id) c
WHERE s.run_id = $1 AND s.attempt = $2
  AND ($3::text IS NULL OR s.member = $3) AND ($4::text IS NULL OR s.source = $4)
  AND c.points IS NOT NULL
ORDER BY s.member, s.source, s.run_path, s.tag LIMIT $5
"""

TAG_SERIES = """
SELECT member, source, run_path, tag, count(*) OVER () AS total FROM series
WHERE run_id = $1 AND attempt = $2 AND tag = $3 ORDER BY member, source, run_path LIMIT $4
"""

SERIES_ID = """
SELECT series_id FROM series
WHERE run_id = $1 AND attempt = $2 AND member = $3 AND source = $4 AND run_path = $5
  AND tag = $6
"""

async def records(conn: Connection, sql: str, *args: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in await conn.fetch(sql, *args)]


async def runs(conn: Connection, *, after: str | None, limit: int,
               projects: Sequence[str] | None) -> list[dict[str, Any]]:
    """Runs known by their telemetry, by id after ``after``, of ``projects`` (None: all)."""
    return await records(conn, RUNS, after, limit, projects)


async def attempts(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    """Each attempt of the run with telemetry: its members, batches, points, last batch."""
    return await records(conn, ATTEMPTS, run_id)


async def members(conn: Connection, run_id: str, attempt: int,
                  limit: int) -> list[dict[str, Any]]:
    """The attempt's members with series: their sources, series and points."""
    return await records(conn, MEMBERS, run_id, attempt, limit)


async def late(conn: Connection, run_id: str, attempt: int,
               limit: int) -> list[dict[str, Any]]:
    """The attempt's batches delivered late, by member and when they were sealed."""
    return await records(conn, LATE, run_id, attempt, limit)


async def series(conn: Connection, run_id: str, attempt: int, *, member: str | None,
                 source: str | None, limit: int) -> list[dict[str, Any]]:
    """The attempt's series (of one member or source when named), with points and steps."""
    return await records(conn, SERIES, run_id, attempt, member, source, limit)


async def tag_series(conn: Connection, run_id: str, attempt: int, tag: str,
                     limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` series with ``tag`` (every member, source and run path), each
    row saying how many there are in all (``total``)."""
    return await records(conn, TAG_SERIES, run_id, attempt, tag, limit)


async def series_id(conn: Connection, key: SeriesKey) -> int | None:
    member = key.member
    found: int | None = await conn.fetchval(SERIES_ID, member.run_id, member.attempt,
                                            member.member, key.source, key.run_path, key.tag)
    return found
