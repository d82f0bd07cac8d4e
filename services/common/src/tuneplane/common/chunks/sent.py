"""PostgreSQL arrays as ``array_send`` sends them, read by numpy with no Python object per
element: a chunk's point arrays as stored before its blob (``stored``), and a series'
chunk summaries and segments (the web's series read: each column in one array, or its
chunks' arrays end to end).

``array_send``'s bytes: ndim, has-NULLs flag and element type; per dimension its size and
lower bound; then each element as its length and big-endian value (length -1: NULL).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

#: ``array_send``'s header of a one-dimensional array: ndim, flags, type, size, bound.
HEADER = 20
#: A one-dimensional array's elements as ``array_send`` sends them, in SQL: its header cut.
ELEMENTS = "substring(array_send({}) FROM " + str(HEADER + 1) + ")"


def received(sent: bytes, element: str) -> npt.NDArray[Any]:
    """A one-dimensional array without NULLs as the native numpy ``element`` (i8 or f8)."""
    ndim, has_nulls, _ = struct.unpack_from(">iiI", sent)
    if ndim == 0:
        return np.empty(0, dtype=element)
    if ndim != 1 or has_nulls:
        raise ValueError(f"not a one-dimensional array without NULLs (ndim {ndim})")
    (size,) = struct.unpack_from(">i", sent, 12)
    pairs = np.frombuffer(sent, dtype=[("length", ">i4"), ("value", f">{element}")],
                          count=size, offset=HEADER)
    return pairs["value"].astype(element)


def concatenated(sent: bytes | None, total: int, element: str) -> npt.NDArray[Any]:
    """The elements of one-dimensional arrays sent end to end without their headers
    (PostgreSQL's ``string_agg(substring(array_send(a) FROM 21), '')``): ``total``
    elements of ``element`` (i4, i8 or f8) as one native numpy array, read at once. The
    count and every element's length are checked: a NULL element (length -1, no value) or
    another type cannot pass as a value."""
    width = np.dtype(element).itemsize
    if total == 0 and not sent:
        return np.empty(0, dtype=element)
    if sent is None or len(sent) != total * (4 + width):
        raise ValueError(f"{total} elements of {width} bytes were not sent as asked")
    pairs = np.frombuffer(sent, dtype=[("length", ">i4"), ("value", f">{element}")])
    if (pairs["length"] != width).any():
        raise ValueError(f"an element is not {width} bytes (a NULL, or another type)")
    values: npt.NDArray[Any] = pairs["value"].astype(element)
    return values
