"""Reading curves back from the read models (the HTTP API comes later)."""

from __future__ import annotations

from dataclasses import dataclass

from tuneplane.common.db import Connection

SERIES_OF_RUN = """
SELECT s.series_id, s.attempt, s.member, s.source, s.tag,
       sum(c.n)::bigint AS points, min(c.step_min) AS step_min, max(c.step_max) AS step_max
FROM series s JOIN curve_chunks c USING (series_id)
WHERE s.run_id = $1 AND ($2::int IS NULL OR s.attempt = $2)
GROUP BY s.series_id
ORDER BY s.attempt, s.member, s.source, s.tag
"""

POINTS_OF_SERIES = """
SELECT p.step, p.wall_time, p.value
FROM curve_chunks c,
     unnest(c.steps, c.wall_times, c."values") AS p(step, wall_time, value)
WHERE c.series_id = $1
ORDER BY p.step, p.wall_time
"""


@dataclass(frozen=True, slots=True)
class SeriesSummary:
    series_id: int
    attempt: int
    member: str
    source: str
    tag: str
    points: int
    step_min: int
    step_max: int


@dataclass(frozen=True, slots=True)
class Point:
    step: int
    wall_time: float
    value: float


async def series_of_run(conn: Connection, run_id: str,
                        attempt: int | None = None) -> list[SeriesSummary]:
    rows = await conn.fetch(SERIES_OF_RUN, run_id, attempt)
    return [SeriesSummary(**dict(row)) for row in rows]


async def points_of_series(conn: Connection, series_id: int) -> list[Point]:
    return [Point(*row) for row in await conn.fetch(POINTS_OF_SERIES, series_id)]
