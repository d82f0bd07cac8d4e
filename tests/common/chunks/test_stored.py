"""A chunk's points read back the same from either stored form, bit for bit: the blob the
projector writes and the arrays of chunks written before it (real PostgreSQL, the real
curve_chunks table); a chunk holds exactly one form; chunks join as one series in step
order."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest

from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Codec, Points

CODEC = Codec()
STEPS = np.array([3, 1, 2, 2**62], dtype=np.int64)
WALLS = np.array([1.7e9, 1.7e9 + 0.25, 1.7e9 + 0.5, 1.7e9 + 1], dtype=np.float64)
VALUES = np.array([-0.0, np.nan, np.inf, 5e-324], dtype=np.float64)
INSERT = """
INSERT INTO curve_chunks (series_id, batch_id, chunk_index, n, step_min, step_max, v_first,
                          v_last, w_first, w_last, packed, steps, wall_times, "values")
VALUES ($1, $2, 0, 4, 1, 4611686018427387904, 0, 0, 0, 0, $3, $4, $5, $6)
"""


def bits(points: Points) -> tuple[list[int], list[int], list[int]]:
    return (points.steps.tolist(), points.wall_times.view(np.uint64).tolist(),
            points.values.view(np.uint64).tolist())


async def test_both_forms_read_back_the_same_bits_and_a_chunk_holds_one(
        db: asyncpg.Connection, run_id: str) -> None:
    series_id = await db.fetchval(
        "INSERT INTO series (run_id, attempt, member, source, tag) "
        "VALUES ($1, 1, 'm', 's', 't') RETURNING series_id", run_id)
    await db.execute(INSERT, series_id, "packed", CODEC.encode(STEPS, WALLS, VALUES),
                     None, None, None)
    await db.execute(INSERT, series_id, "arrays", None, STEPS.tolist(), WALLS.tolist(),
                     VALUES.tolist())
    rows = await db.fetch(f"SELECT c.batch_id, {stored.SELECTED} FROM curve_chunks c "
                          "WHERE c.series_id = $1 ORDER BY c.batch_id", series_id)
    found = {row["batch_id"]: bits(stored.points_of(row, CODEC)) for row in rows}
    assert found["packed"] == found["arrays"] == bits(Points(STEPS, WALLS, VALUES))
    for both_or_neither in ((CODEC.encode(STEPS, WALLS, VALUES), STEPS.tolist(),
                             WALLS.tolist(), VALUES.tolist()), (None, None, None, None)):
        with pytest.raises(asyncpg.CheckViolationError, match="curve_chunks_one_form"):
            await db.execute(INSERT, series_id, "bad", *both_or_neither)


def test_chunks_join_as_one_series_by_step_then_wall_time() -> None:
    first = Points(np.array([5, 1]), np.array([2.0, 1.0]), np.array([50.0, 10.0]))
    second = Points(np.array([1, 3]), np.array([0.5, 3.0]), np.array([11.0, 30.0]))
    joined = stored.in_step_order([first, second])
    assert joined.steps.tolist() == [1, 1, 3, 5]
    assert joined.values.tolist() == [11.0, 10.0, 30.0, 50.0]
    assert stored.in_step_order([]).steps.tolist() == []
