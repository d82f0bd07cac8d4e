"""SQL for the web API: listings with bounds, series reads through the downsampler, rich
records' existence (their listings are in ``rich_records``), and what the reporting path
stores (each post once, by its id)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.web.downsample import Answer, Arrays, ChunkRef, ChunkSummary, Unit, answer
from tuneplane.web.downsample import chunks_to_unpack as plan
from tuneplane.web.purge import Marker, cuts, kept, markers_of_series

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

SUMMARIES = """
SELECT batch_id, chunk_index, n, step_min, step_max, v_min, v_max, v_last, w_last, seg_steps,
       seg_last_steps, seg_counts, seg_min, seg_max, seg_last, seg_last_walls
FROM curve_chunks WHERE series_id = $1 AND step_max >= $2 AND step_min <= $3
ORDER BY step_min
"""

ARRAYS = """
SELECT batch_id, chunk_index, steps, wall_times, "values"
FROM curve_chunks c JOIN unnest($2::text[], $3::int[]) AS w(batch_id, chunk_index)
     USING (batch_id, chunk_index)
WHERE c.series_id = $1
"""

RICH_STORED = "SELECT 1 FROM rich_records WHERE object_key = $1 LIMIT 1"

MARKERS = """
SELECT batch_id, marker_index, file, step, tags FROM session_starts
WHERE run_id = $1 AND attempt = $2 AND member = $3 AND source = $4
  AND (cardinality(tags) = 0 OR $5 = ANY(tags))
"""

EPOCH_STARTS = """
SELECT substring(batch_id FROM '^(.*)-[0-9]+$') AS epoch, min(sealed_at) AS first_sealed
FROM batch_ledger WHERE run_id = $1 AND attempt = $2 AND member = $3 GROUP BY 1
"""

SERIES_BATCHES = "SELECT DISTINCT batch_id FROM curve_chunks WHERE series_id = $1"

# A cut chunk's summary of what survives its cut, in SQL: its points never reach Python
# unless the answer needs them (and can afford them: ``within_budget``).
CUT_CHUNKS = """
SELECT c.batch_id, c.chunk_index, c.n, k.kept, k.step_min, k.step_max, k.v_min, k.v_max,
       c."values"[k.last_i] AS v_last, c.wall_times[k.last_i] AS w_last
FROM curve_chunks c JOIN unnest($2::text[], $3::bigint[]) AS w(batch_id, cut)
     USING (batch_id)
CROSS JOIN LATERAL (
    SELECT count(*) AS kept, min(p.step) AS step_min, max(p.step) AS step_max,
           min(p.v) FILTER (WHERE p.v NOT IN ('NaN', 'Infinity', '-Infinity')) AS v_min,
           max(p.v) FILTER (WHERE p.v NOT IN ('NaN', 'Infinity', '-Infinity')) AS v_max,
           max(p.i) AS last_i
    FROM unnest(CASE WHEN c.step_min < w.cut THEN c.steps END,
                CASE WHEN c.step_min < w.cut THEN c."values" END)
         WITH ORDINALITY AS p(step, v, i)
    WHERE p.step < w.cut
) k
WHERE c.series_id = $1 AND c.step_max >= w.cut
"""

BOUNDS = """
SELECT min(step_min), max(step_max), min(w_first) FROM curve_chunks WHERE series_id = $1
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


async def rich_record_stored(conn: Connection, object_key: str) -> bool:
    return bool(await conn.fetchval(RICH_STORED, object_key))


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


def segments(row: asyncpg.Record) -> tuple[Unit, ...]:
    if row["seg_steps"] is None:
        return ()
    return tuple(Unit(*fields) for fields in zip(
        row["seg_steps"], row["seg_last_steps"], row["seg_counts"], row["seg_min"],
        row["seg_max"], row["seg_last"], row["seg_last_walls"], strict=True))


async def purge_cuts(conn: Connection, series_id: int | None, member: MemberKey, source: str,
                     run_path: str, tag: str) -> dict[str, int]:
    """batch id → the step from which TensorBoard's purge drops the series' points there
    (empty without purge markers: the common case costs one indexed query)."""
    rows = await conn.fetch(MARKERS, member.run_id, member.attempt, member.member, source, tag)
    markers = markers_of_series((Marker(r["batch_id"], r["file"], r["step"], r["marker_index"],
                                        tuple(r["tags"])) for r in rows), run_path, tag)
    if series_id is None or not markers:
        return {}
    epochs = {r["epoch"]: r["first_sealed"] for r in await conn.fetch(
        EPOCH_STARTS, member.run_id, member.attempt, member.member)}
    batches = [r["batch_id"] for r in await conn.fetch(SERIES_BATCHES, series_id)]
    return cuts(batches, markers, epochs)


def within_budget(refs: list[ChunkRef], stored_n: Mapping[ChunkRef, int],
                  unpack_budget: int) -> list[ChunkRef]:
    """The chunks of ``refs`` (in order) whose stored points fit ``unpack_budget``; the
    answer takes the others from their summaries. A writer chooses its chunks' step ranges:
    any number of them may straddle a range's edge or a purge's cut."""
    chosen, spent = [], 0
    for ref in refs:
        spent += stored_n[ref]
        if spent > unpack_budget:
            break
        chosen.append(ref)
    return chosen


@dataclass(frozen=True, slots=True)
class SeriesRead:
    """A series' bounded answer over the step range [lo, hi], the points a purge dropped
    from the whole series, and the wall time of its first stored point (where a relative
    time axis starts; None for a series with no points)."""

    answer: Answer
    lo: int
    hi: int
    purged: int
    wall_first: float | None


async def series_answer(conn: Connection, series_id: int | None, lo: int | None,
                        hi: int | None, max_points: int, unpack_budget: int,
                        purge: Mapping[str, int] | None = None) -> SeriesRead:
    """The bounded answer for one series (empty when it is None, not stored), with the
    points ``purge`` (batch id → cut step, from ``purge_cuts``) left out."""
    cut_summaries: dict[ChunkRef, ChunkSummary | None] = {}
    stored_n: dict[ChunkRef, int] = {}  # what unpacking a chunk costs: every point stored
    purged = 0
    if purge:
        for row in await conn.fetch(CUT_CHUNKS, series_id, list(purge), list(purge.values())):
            ref = (row["batch_id"], row["chunk_index"])
            purged += row["n"] - row["kept"]
            stored_n[ref] = row["n"]
            cut_summaries[ref] = None if not row["kept"] else ChunkSummary(
                ref, row["kept"], row["step_min"], row["step_max"], row["v_min"], row["v_max"],
                row["v_last"], row["w_last"])
    first, last, wall_first = await conn.fetchrow(BOUNDS, series_id) or (None, None, None)
    lo = first if lo is None else lo
    hi = last if hi is None else hi
    if lo is None or hi is None or lo > hi:
        return SeriesRead(Answer(False, 0, [], []), lo or 0, hi or 0, purged, wall_first)
    summaries: list[ChunkSummary] = []
    for r in await conn.fetch(SUMMARIES, series_id, lo, hi):
        ref = (r["batch_id"], r["chunk_index"])
        if ref not in cut_summaries:
            stored_n[ref] = r["n"]
            summaries.append(ChunkSummary(ref, r["n"], r["step_min"], r["step_max"], r["v_min"],
                                          r["v_max"], r["v_last"], r["w_last"],
                                          segments(r)))
        elif (remaining := cut_summaries[ref]) is not None:
            summaries.append(remaining)
    needed = within_budget(plan(summaries, lo, hi, max_points, unpack_budget), stored_n,
                           unpack_budget)
    unpacked: dict[ChunkRef, Arrays] = {}
    if needed:
        rows = await conn.fetch(ARRAYS, series_id, [r[0] for r in needed],
                                [r[1] for r in needed])
        for r in rows:
            ref = (r["batch_id"], r["chunk_index"])
            arrays = (r["steps"], r["wall_times"], r["values"])
            cut = (purge or {}).get(ref[0])
            unpacked[ref] = arrays if cut is None else kept(arrays, cut)
    return SeriesRead(answer(summaries, unpacked, lo, hi, max_points), lo, hi, purged,
                      wall_first)
