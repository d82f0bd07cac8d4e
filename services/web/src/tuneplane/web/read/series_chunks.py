"""A series' chunk summaries in one row: its id, its bounds, whether a purge marker may
apply, and the summaries and segments of its chunks in the step range, each column
aggregated by PostgreSQL into one array (``array_send``'s bytes, read by numpy) in step
order, the segments' elements of every chunk end to end (``sent.concatenated``).

One row however many chunks: no record, Python object or list lookup per chunk or per
segment (a 1M-point series is a thousand chunks and seven thousand segments). Only
summary columns are read: a chunk's points stay in TOAST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import asyncpg
import numpy as np
import numpy.typing as npt

from tuneplane.common.chunks.sent import ELEMENTS, concatenated, received
from tuneplane.web.read.columnar import Chunks, Units, floats, ints

READ_SERIES = """
WITH s AS (
    SELECT series_id FROM series
    WHERE run_id = $1 AND attempt = $2 AND member = $3 AND source = $4 AND run_path = $5
      AND tag = $6
)"""
READ_MARKED = """
EXISTS (SELECT 1 FROM session_starts m
        WHERE m.run_id = $1 AND m.attempt = $2 AND m.member = $3 AND m.source = $4
          AND (cardinality(m.tags) = 0 OR $6 = ANY(m.tags))) AS marked"""

#: The version of the series' ``series_stats`` row (``answers``: every chunk written
#: upserts it in the same transaction): ``{}`` names the row holding ``series_id``.
STATS = """(SELECT t.xmin::text FROM series_stats t WHERE t.series_id = {}.series_id) AS stats"""


class Version(NamedTuple):
    """A stored series as a read saw it (``answers``)."""

    series_id: int
    stats: str  # its stats row's version
    marked: bool  # a purge marker may apply


#: A chunk summary's columns as ``Units`` holds them, and the segments' (same order),
#: each with its numpy element type. A float column's NULL (no finite value) is sent NaN.
SUMMARY_COLUMNS = (("step_min", "i8"), ("step_max", "i8"), ("n", "i4"), ("v_min", "f8"),
                   ("v_max", "f8"), ("v_last", "f8"), ("w_last", "f8"))
SEGMENT_COLUMNS = (("seg_steps", "i8"), ("seg_last_steps", "i8"), ("seg_counts", "i4"),
                   ("seg_min", "f8"), ("seg_max", "f8"), ("seg_last", "f8"),
                   ("seg_last_walls", "f8"))


def nan_for_null(expression: str, element: str) -> str:
    return f"array_replace({expression}, NULL, 'NaN'::float8)" if element == "f8" \
        else expression


SEGMENTED = "cardinality(c.seg_counts) > 0"
SEGMENT_COUNT = f"CASE WHEN {SEGMENTED} THEN cardinality(c.seg_counts) ELSE 0 END"
# Every aggregate reads the same rows in the same order: the subquery's, in step order
# (ties as the index holds them, as the downsampler has always read them).
AGGREGATES = ", ".join([
    "count(*) AS chunks", "min(c.step_min) AS first", "max(c.step_max) AS last",
    "min(c.w_first) AS wall_first", "bool_and(c.walls_read) AS all_read",
    "bool_or(c.walls_read) AS any_read", "array_agg(c.batch_id) AS batch_ids",
    "array_agg(c.chunk_index) AS chunk_indexes",
    f"array_send(array_agg({SEGMENT_COUNT})) AS seg_n",
    "bool_and(" + " AND ".join(f"coalesce(cardinality(c.{name}), 0) = {SEGMENT_COUNT}"
                               for name, _ in SEGMENT_COLUMNS) + ") AS segments_aligned",
    *(f"array_send({nan_for_null(f'array_agg(c.{name})', e)}) AS {name}"
      for name, e in SUMMARY_COLUMNS),
    *(f"string_agg({ELEMENTS.format(nan_for_null(f'c.{name}', e))}, ''::bytea) "
      f"FILTER (WHERE {SEGMENTED}) AS {name}" for name, e in SEGMENT_COLUMNS)])
CHUNK_COLUMNS = ", ".join(["batch_id", "chunk_index", "w_first", "walls_read",
                           *(n for n, _ in SUMMARY_COLUMNS), *(n for n, _ in SEGMENT_COLUMNS)])


def chunks_in(where: str) -> str:
    return f"""(
    SELECT {AGGREGATES} FROM (
        SELECT {CHUNK_COLUMNS} FROM curve_chunks c WHERE {where} ORDER BY c.step_min
    ) c
) k ON true"""


#: The whole series: its bounds are its chunks'.
WHOLE = f"""{READ_SERIES}
SELECT s.series_id, {READ_MARKED}, {STATS.format("s")}, k.*
FROM s LEFT JOIN LATERAL {chunks_in("c.series_id = s.series_id")}
"""
#: A step range [$7, $8] (NULL: the series' end): the bounds of every chunk besides.
RANGE = f"""{READ_SERIES}, h AS (
    SELECT s.series_id, min(c.step_min) AS series_first, max(c.step_max) AS series_last,
           min(c.w_first) AS series_wall_first, {READ_MARKED}
    FROM s LEFT JOIN curve_chunks c USING (series_id) GROUP BY s.series_id
)
SELECT h.*, {STATS.format("h")}, k.* FROM h LEFT JOIN LATERAL {chunks_in(
    "c.series_id = h.series_id AND c.step_max >= coalesce($7::bigint, h.series_first) "
    "AND c.step_min <= coalesce($8::bigint, h.series_last)")}
"""


@dataclass(frozen=True, slots=True)
class SeriesChunks:
    """What ``WHOLE`` or ``RANGE`` found of a stored series."""

    series_id: int
    marked: bool  # a purge marker may apply (``purge_cuts`` looks further only then)
    first: int | None  # the series' bounds and first wall time (None: no points)
    last: int | None
    wall_first: float | None
    wall_time: str  # whose clock the chunks in range are: written, read or mixed
    chunks: Chunks
    stats: str | None  # its stats row's version; None: none (a series with no points yet)

    @property
    def version(self) -> Version | None:
        return None if self.stats is None else Version(self.series_id, self.stats,
                                                       self.marked)

    @classmethod
    def of(cls, row: asyncpg.Record, *, whole: bool) -> SeriesChunks:
        bounds = ("first", "last", "wall_first") if whole else \
            ("series_first", "series_last", "series_wall_first")
        first, last, wall_first = (row[name] for name in bounds)
        clock = "read" if row["all_read"] else "mixed" if row["any_read"] else "written"
        return cls(row["series_id"], row["marked"], first, last, wall_first, clock,
                   chunks_of(row), row["stats"])


def chunks_of(row: asyncpg.Record) -> Chunks:
    """The aggregated columns as ``Chunks``: each summary column one array, the segments
    of the chunks that have them end to end."""
    if not row["chunks"]:
        return Chunks.of([])
    if not row["segments_aligned"]:  # each chunk's segments, not merely their sum
        raise ValueError(f"series {row['series_id']}: a chunk's segment arrays differ in "
                         "length")

    def units(read: list[npt.NDArray[Any]]) -> Units:
        step_min, step_max, n, v_min, v_max, v_last, w_last = read
        return Units(ints(step_min), ints(step_max), ints(n), floats(v_min), floats(v_max),
                     floats(v_last), floats(w_last))

    seg_n = received(row["seg_n"], "i4").astype(np.int64)
    total = int(seg_n.sum())
    refs = list(zip(row["batch_ids"], row["chunk_indexes"], strict=True))
    summary = units([received(row[name], e) for name, e in SUMMARY_COLUMNS])
    segments = units([concatenated(row[name], total, e) for name, e in SEGMENT_COLUMNS])
    return Chunks(refs, summary, seg_n, segments)
