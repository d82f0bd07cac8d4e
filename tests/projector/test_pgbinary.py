"""The binary COPY payload, read back by the real PostgreSQL: every value as it was sent."""

from __future__ import annotations

import math
from collections.abc import Sequence

import asyncpg
import numpy as np

from tuneplane.projector import pgbinary as pg

TABLE = """CREATE TEMPORARY TABLE copied (
    i8 bigint, t text, i4 integer, f8 double precision, i8s bigint[], f8s double precision[],
    i4s integer[], holes double precision[])"""
COLUMNS = ("i8", "t", "i4", "f8", "i8s", "f8s", "i4s", "holes")
FIELDS = (pg.int8, pg.text, pg.int4, pg.float8, pg.int8_array, pg.float8_array, pg.int4_array,
          pg.nullable_float8_array)
INT8 = np.iinfo(np.int64)


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (element by element for lists)."""
    if isinstance(a, Sequence) and not isinstance(a, str) and isinstance(b, Sequence):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


async def test_every_kind_of_value_reads_back_as_sent(db: asyncpg.Connection) -> None:
    records = [
        (INT8.min, "naïve/λ", -(2**31), -0.0, np.array([INT8.min, -1, 0, INT8.max]),
         np.array([math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308]),
         np.array([2**31 - 1, -(2**31), 0], dtype=np.int64), [None, 1.5, None]),
        (INT8.max, "", 0, None, np.array([], dtype=np.int64), np.array([], dtype=np.float64),
         None, [2.0, -3.0]),
        (7, "t", 1, math.nan, None, None, np.array([1]), None),
    ]
    await db.execute(TABLE)
    await db.copy_to_table("copied", columns=COLUMNS, format="binary",
                           source=pg.source(pg.rows(FIELDS, records)))
    back = await db.fetch("SELECT * FROM copied ORDER BY i8")
    assert len(back) == len(records)
    for row, sent in zip(back, sorted(records, key=lambda r: r[0]), strict=True):
        expected = [v.tolist() if isinstance(v, np.ndarray) else v for v in sent]
        assert same(list(row.values()), expected), (list(row.values()), expected)


async def test_no_record_is_a_payload_postgresql_reads_as_empty(db: asyncpg.Connection) -> None:
    await db.execute(TABLE)
    await db.copy_to_table("copied", columns=COLUMNS, format="binary",
                           source=pg.source(pg.rows(FIELDS, [])))
    assert await db.fetchval("SELECT count(*) FROM copied") == 0
