"""PostgreSQL's binary arrays (``array_send``) read by numpy as they were stored: every
float64 (-0.0, NaN, ±inf, subnormals, the largest) and every int64, empty arrays, and NULL
elements refused where a chunk's arrays never hold them, NaN where segment summaries do."""

from __future__ import annotations

import math

import asyncpg
import numpy as np
import pytest

from tuneplane.common.chunks.sent import joined, received, sent_size

FLOATS = [1.5, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308]
INTS = [-(2**63), -1, 0, 2**63 - 1]


def comparable(value: float) -> float | str:
    return "nan" if math.isnan(value) else value


async def test_arrays_are_read_from_postgresql_binary_form_as_they_were_stored(
        db: asyncpg.Connection) -> None:
    row = await db.fetchrow("SELECT array_send($1::float8[]), array_send($2::bigint[]), "
                            "array_send('{}'::float8[])", FLOATS, INTS)
    assert row is not None
    sent_floats, sent_ints, empty = row
    found = received(sent_floats, "f8")
    assert found.dtype == np.float64
    assert [comparable(v) for v in found.tolist()] == [comparable(v) for v in FLOATS]
    assert math.copysign(1, found[1]) == -1
    assert received(sent_ints, "i8").tolist() == INTS
    assert received(empty, "f8").tolist() == []
    assert (sent_size(sent_floats), sent_size(sent_ints), sent_size(empty)) == (7, 4, 0)
    with pytest.raises(ValueError, match="NULLs"):
        received(await db.fetchval("SELECT array_send('{1,NULL}'::float8[])"), "f8")


async def test_arrays_are_joined_end_to_end_with_null_elements_as_nan(
        db: asyncpg.Connection) -> None:
    row = await db.fetchrow("SELECT array_send('{1.5,NULL,-2}'::float8[]), "
                            "array_send('{}'::float8[]), array_send('{3}'::float8[]), "
                            "array_send('{1,NULL}'::bigint[])")
    assert row is not None
    with_null, empty, one, ints_with_null = row
    found = joined([with_null, empty, one], "f8")
    assert [comparable(v) for v in found.tolist()] == [1.5, "nan", -2.0, 3.0]
    with pytest.raises(ValueError, match="integers with NULL"):
        joined([ints_with_null], "i8")
