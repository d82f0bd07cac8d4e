"""PostgreSQL's binary arrays (``array_send``) read by numpy as they were stored: every
float64 (-0.0, NaN, ±inf, subnormals, the largest) and every int64, empty arrays, and NULL
elements refused where a chunk's arrays never hold them; a series' segment arrays sent end
to end, read by the sizes asked and refused when they are not those."""

from __future__ import annotations

import math

import asyncpg
import numpy as np
import pytest

from tuneplane.common.chunks.sent import ELEMENTS, concatenated, received

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
    with pytest.raises(ValueError, match="NULLs"):
        received(await db.fetchval("SELECT array_send('{1,NULL}'::float8[])"), "f8")


async def test_elements_sent_end_to_end_are_read_at_once(db: asyncpg.Connection) -> None:
    """The series read's segments: string_agg of the arrays' elements over chunks (empty
    arrays left out, NULL elements sent as NaN by the query)."""
    arrays = ["{1.5,NULL,-0}", "{}", "{3}", "{NaN,Infinity,5e-324}"]
    sent = await db.fetchval(
        "SELECT string_agg(" + ELEMENTS.format("array_replace(a::float8[], NULL, 'NaN')")
        + ", ''::bytea) FILTER (WHERE cardinality(a::float8[]) > 0) FROM unnest($1::text[]) a",
        arrays)
    found = concatenated(sent, 7, "f8")
    assert found.dtype == np.float64
    assert [comparable(v) for v in found.tolist()] == [1.5, "nan", 0.0, 3.0, "nan", math.inf,
                                                       5e-324]
    assert math.copysign(1, found[2]) == -1
    ints = await db.fetchval(f"SELECT {ELEMENTS.format('$1::int[]')} || "
                             f"{ELEMENTS.format('$2::int[]')}", [7, -(2**31)], [2**31 - 1])
    assert concatenated(ints, 3, "i4").tolist() == [7, -(2**31), 2**31 - 1]
    assert concatenated(None, 0, "i8").tolist() == []


@pytest.mark.parametrize(("arrays", "kind", "total", "element", "said"), [
    (["{1,2}"], "float8", 3, "f8", "not sent as asked"),
    (["{1,NULL,3}"], "bigint", 3, "i8", "not sent as asked"),  # a NULL sends no value
    (["{1,NULL,NULL}"], "int", 2, "i4", "not 4 bytes"),  # two NULLs: one length's bytes
    (["{1,2,3}"], "int", 2, "i8", "not 8 bytes"),  # another type, the same bytes
    (["{1,2,3}"], "bigint", 2, "i8", "not sent as asked"),
    ([], "float8", 1, "f8", "not sent as asked"),
])
async def test_elements_unlike_those_asked_are_refused(
        db: asyncpg.Connection, arrays: list[str], kind: str, total: int, element: str,
        said: str) -> None:
    sent = await db.fetchval("SELECT string_agg(" + ELEMENTS.format(f"a::{kind}[]")
                             + ", ''::bytea) FROM unnest($1::text[]) a", arrays)
    with pytest.raises(ValueError, match=said):
        concatenated(sent, total, element)
