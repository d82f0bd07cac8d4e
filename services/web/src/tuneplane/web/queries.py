"""SQL for the web API: listings with bounds, a series' id (its reads are in
``series_read``), and what the reporting path stores (each post once, by its id)."""

from __future__ import annotations

import json
from typing import Any

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import MemberKey

RUNS = """
SELECT l.run_id, coalesce(min(r.project), 'default') AS project,
       count(DISTINCT l.attempt) AS attempts, count(*) AS batches,
       sum(l.points)::bigint AS points, max(l.projected_at) AS last_batch_at
FROM batch_ledger l LEFT JOIN runs r ON r.run_id = l.run_id
WHERE ($1::text IS NULL OR l.run_id > $1)
  AND ($3::text[] IS NULL OR coalesce(r.project, 'default') = ANY($3::text[]))
GROUP BY l.run_id ORDER BY l.run_id LIMIT $2
"""

ATTEMPTS = """
SELECT attempt, count(DISTINCT member) AS members, count(*) AS batches,
       sum(points)::bigint AS points, max(projected_at) AS last_batch_at
FROM batch_ledger WHERE run_id = $1 GROUP BY attempt ORDER BY attempt
"""

MEMBERS = """
SELECT s.member, array_agg(DISTINCT s.source ORDER BY s.source) AS sources,
       count(*) AS series, coalesce(min(m.points), 0) AS points,
       min(m.last_batch_at) AS last_batch_at
FROM series s LEFT JOIN member_summaries m USING (run_id, attempt, member)
WHERE s.run_id = $1 AND s.attempt = $2
GROUP BY s.member ORDER BY s.member LIMIT $3
"""

SERIES = """
SELECT s.series_id, s.member, s.source, s.run_path, s.tag, sum(c.n)::bigint AS points,
       min(c.step_min) AS step_min, max(c.step_max) AS step_max
FROM series s JOIN curve_chunks c USING (series_id)
WHERE s.run_id = $1 AND s.attempt = $2
  AND ($3::text IS NULL OR s.member = $3) AND ($4::text IS NULL OR s.source = $4)
GROUP BY s.series_id ORDER BY s.member, s.source, s.run_path, s.tag LIMIT $5
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

ARRAYS = """
SELECT batch_id, chunk_index, steps, wall_times, "values"
FROM curve_chunks c JOIN unnest($2::text[], $3::int[]) AS w(batch_id, chunk_index)
     USING (batch_id, chunk_index)
WHERE c.series_id = $1
"""

EVENT = """
INSERT INTO attempt_events (run_id, attempt, member, id, event, at, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) ON CONFLICT DO NOTHING RETURNING 1
"""

LOGS = """
INSERT INTO attempt_logs (run_id, attempt, member, id, line_no, at, level, message)
SELECT $1, $2, $3, $4, n - 1, at, level, message
FROM unnest($5::float8[], $6::text[], $7::text[]) WITH ORDINALITY AS l(at, level, message, n)
ON CONFLICT DO NOTHING RETURNING 1
"""

REPORT = """
INSERT INTO attempt_reports (run_id, attempt, member, id, name, body)
VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT DO NOTHING RETURNING 1
"""


async def records(conn: Connection, sql: str, *args: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in await conn.fetch(sql, *args)]


async def series_id(conn: Connection, run_id: str, attempt: int, member: str, source: str,
                    run_path: str, tag: str) -> int | None:
    found: int | None = await conn.fetchval(SERIES_ID, run_id, attempt, member, source,
                                            run_path, tag)
    return found


async def add_event(conn: Connection, member: MemberKey, event_id: str, event: str, at: float,
                    detail: dict[str, Any]) -> bool:
    """Store a lifecycle event; False when its id was stored before."""
    done = await conn.fetchval(EVENT, member.run_id, member.attempt, member.member, event_id,
                               event, at, json.dumps(detail))
    return done is not None


async def add_logs(conn: Connection, member: MemberKey, post_id: str,
                   lines: list[tuple[float, str, str]]) -> bool:
    """Store a post's (at, level, message) lines; False when its id was stored before."""
    inserted = await conn.fetch(LOGS, member.run_id, member.attempt, member.member, post_id,
                                [at for at, _, _ in lines], [level for _, level, _ in lines],
                                [message for _, _, message in lines])
    return bool(inserted)


async def add_report(conn: Connection, member: MemberKey, report_id: str, name: str,
                     body: str) -> bool:
    """Store a report (``body`` as JSON text); False when its id was stored before."""
    done = await conn.fetchval(REPORT, member.run_id, member.attempt, member.member, report_id,
                               name, body)
    return done is not None
