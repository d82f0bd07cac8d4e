"""PostgreSQL's binary COPY format, built from numpy columns without a Python object per
array element.

asyncpg's ``copy_records_to_table`` encodes every element of every array through Python
(an ``Iterable`` check and a conversion each): for curve chunks, a third of the
projector's time. Here an array column is one numpy assignment into a record of
(length, big-endian value) pairs, which is exactly the binary array's element layout.

The format (PostgreSQL's "COPY", section "Binary Format"): a signature, then per row a
16-bit field count and per field a 32-bit length (-1 for NULL) and the value in the
type's binary send form; arrays are ndim, has-null flag, element type OID, then per
dimension its length and lower bound, then the elements.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Callable, Sequence

import numpy as np
import numpy.typing as npt

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
TRAILER = struct.pack(">h", -1)
NULL = struct.pack(">i", -1)

INT4_OID, INT8_OID, FLOAT8_OID = 23, 20, 701
#: One array element: its length (always 8 for these types), then the value.
_INT8_ELEMENT = np.dtype([("length", ">i4"), ("value", ">i8")])
_FLOAT8_ELEMENT = np.dtype([("length", ">i4"), ("value", ">f8")])
_INT4_ELEMENT = np.dtype([("length", ">i4"), ("value", ">i4")])
_HEADER = struct.Struct(">iiiiii")  # field length, ndim, has null, OID, length, lower bound
_ELEMENT_TYPES = {INT8_OID: _INT8_ELEMENT, FLOAT8_OID: _FLOAT8_ELEMENT,
                  INT4_OID: _INT4_ELEMENT}

Field = Callable[[object], bytes]


def _array(oid: int, values: npt.ArrayLike) -> bytes:
    """A one-dimensional array without NULLs (an empty one has no dimensions)."""
    element = _ELEMENT_TYPES[oid]
    column = np.asarray(values)
    n = len(column)
    if n == 0:
        return struct.pack(">iiii", 12, 0, 0, oid)
    packed = np.empty(n, dtype=element)
    packed["length"] = element["value"].itemsize
    packed["value"] = column
    body = packed.tobytes()
    return _HEADER.pack(20 + len(body), 1, 0, oid, n, 1) + body


def int8_array(values: object) -> bytes:
    return NULL if values is None else _array(INT8_OID, values)  # type: ignore[arg-type]


def int4_array(values: object) -> bytes:
    return NULL if values is None else _array(INT4_OID, values)  # type: ignore[arg-type]


def float8_array(values: object) -> bytes:
    return NULL if values is None else _array(FLOAT8_OID, values)  # type: ignore[arg-type]


def nullable_float8_array(values: object) -> bytes:
    """A float8 array whose elements may be None (NULL): small arrays, built in Python."""
    if values is None:
        return NULL
    items: Sequence[float | None] = values  # type: ignore[assignment]
    if all(v is not None for v in items):
        return _array(FLOAT8_OID, np.asarray(items, dtype=np.float64))
    body = b"".join(NULL if v is None else struct.pack(">id", 8, v) for v in items)
    return _HEADER.pack(20 + len(body), 1, 1, FLOAT8_OID, len(items), 1) + body


def int8(value: object) -> bytes:
    return struct.pack(">iq", 8, value)


def int4(value: object) -> bytes:
    return struct.pack(">ii", 4, value)


def float8(value: object) -> bytes:
    if value is None:
        return NULL
    return struct.pack(">id", 8, value)


def boolean(value: object) -> bytes:
    return struct.pack(">i?", 1, bool(value))


def bytea(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(f"a bytea field takes bytes, not {type(value).__name__}")
    return struct.pack(">i", len(value)) + value


def text(value: object) -> bytes:
    data = str(value).encode()
    return struct.pack(">i", len(data)) + data


def rows(fields: Sequence[Field], records: Sequence[Sequence[object]]) -> bytes:
    """The whole COPY payload for ``records``, each encoded field by field."""
    count = struct.pack(">h", len(fields))
    parts = [SIGNATURE]
    for record in records:
        parts.append(count)
        parts.extend(encode(value) for encode, value in zip(fields, record, strict=True))
    parts.append(TRAILER)
    return b"".join(parts)


async def source(payload: bytes) -> AsyncIterator[bytes]:
    """``payload`` as what ``copy_to_table`` takes (bytes alone would be read as a path)."""
    yield payload
