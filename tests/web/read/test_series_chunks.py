"""A series' chunk summaries in one row: what the aggregated columns give is what each
chunk's row holds, and a chunk whose segment arrays differ in length is refused, even when
another's make up the count."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest

from tests.support.environment import Endpoints
from tests.support.truth import member_batch
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.web.read import series_chunks

ARGS = ("rank-0", "train", "", "tag0")


async def stored(initialised: Endpoints, run_id: str) -> None:
    """Two batches of one tag, 600 points each: two chunks of four segments."""
    member = MemberKey(run_id, 1, "rank-0")
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write_group(
            [project(member_batch(member, s, 600, tags=1).SerializeToString(),
                     RecordMeta(0, s, None)) for s in range(2)])


async def test_the_row_holds_each_chunks_summary_and_segments_in_step_order(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    await stored(initialised, run_id)
    row = await db.fetchrow(series_chunks.WHOLE, run_id, 1, *ARGS)
    assert row is not None
    found = series_chunks.SeriesChunks.of(row, whole=True)
    rows = await db.fetch("SELECT c.* FROM curve_chunks c JOIN series s USING (series_id) "
                          "WHERE s.run_id = $1 ORDER BY c.step_min", run_id)
    chunks = found.chunks
    assert (found.first, found.last, chunks.seg_n.tolist()) == (0, 1199, [4, 4])
    assert chunks.summary.step_min.tolist() == [r["step_min"] for r in rows]
    assert chunks.segments.v_min.tolist() == [v for r in rows for v in r["seg_min"]]
    assert chunks.segments.n.tolist() == [n for r in rows for n in r["seg_counts"]]
    assert np.array_equal(chunks.segments.step_max,
                          [s for r in rows for s in r["seg_last_steps"]])


async def test_a_chunks_segments_of_unequal_lengths_are_refused(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    await stored(initialised, run_id)
    # One segment minimum moved from the first chunk to the second: the count holds.
    moved = await db.execute(
        "UPDATE curve_chunks c SET seg_min = CASE WHEN c.step_min = 0 THEN c.seg_min[1:3] "
        "ELSE c.seg_min || 0.0::float8 END FROM series s WHERE s.series_id = c.series_id "
        "AND s.run_id = $1", run_id)
    assert moved == "UPDATE 2"
    row = await db.fetchrow(series_chunks.WHOLE, run_id, 1, *ARGS)
    assert row is not None
    with pytest.raises(ValueError, match="segment arrays differ in length"):
        series_chunks.SeriesChunks.of(row, whole=True)
