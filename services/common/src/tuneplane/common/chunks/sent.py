"""PostgreSQL arrays as ``array_send`` sends them, read by numpy with no Python object per
element: a chunk's point arrays as stored before its blob (``stored``), and its segment
summaries.

``array_send``'s bytes: ndim, has-NULLs flag and element type; per dimension its size and
lower bound; then each element as its length and big-endian value (length -1: NULL).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt


def received(sent: bytes, element: str) -> npt.NDArray[Any]:
    """A one-dimensional array without NULLs as the native numpy ``element`` (i8 or f8)."""
    ndim, has_nulls, _ = struct.unpack_from(">iiI", sent)
    if ndim == 0:
        return np.empty(0, dtype=element)
    if ndim != 1 or has_nulls:
        raise ValueError(f"not a one-dimensional array without NULLs (ndim {ndim})")
    (size,) = struct.unpack_from(">i", sent, 12)
    pairs = np.frombuffer(sent, dtype=[("length", ">i4"), ("value", f">{element}")],
                          count=size, offset=20)
    return pairs["value"].astype(element)


def sent_size(sent: bytes) -> int:
    """The elements of a one-dimensional array."""
    ndim: int = struct.unpack_from(">i", sent)[0]
    return 0 if ndim == 0 else int(struct.unpack_from(">i", sent, 12)[0])


def joined(sent: Sequence[bytes], element: str) -> npt.NDArray[Any]:
    """One-dimensional arrays end to end, as one native numpy array of ``element`` (i4, i8
    or f8): their elements' (length, value) pairs are joined and read at once. A NULL
    element (a segment with no finite value) is NaN."""
    pairs = np.dtype([("length", ">i4"), ("value", f">{element}")])
    bodies = []
    for one in sent:
        ndim, has_nulls, _ = struct.unpack_from(">iiI", one)
        if ndim == 0:
            continue
        if ndim != 1:
            raise ValueError(f"not a one-dimensional array (ndim {ndim})")
        bodies.append(with_nulls_as_nan(one, pairs) if has_nulls else memoryview(one)[20:])
    found = np.frombuffer(b"".join(bodies), dtype=pairs)
    return found["value"].astype(element)


def with_nulls_as_nan(sent: bytes, pairs: np.dtype[Any]) -> bytes:
    """The (length, value) pairs of an array with NULL elements, each NULL as NaN: element
    by element, for the rare array that has them."""
    if pairs["value"] != np.dtype(">f8"):
        raise ValueError("an array of integers with NULL elements")
    (size,) = struct.unpack_from(">i", sent, 12)
    out, at = [], 20
    for _ in range(size):
        (length,) = struct.unpack_from(">i", sent, at)
        at += 4
        if length < 0:
            out.append(struct.pack(">id", 8, float("nan")))
        else:
            out.append(sent[at - 4:at + length])
            at += length
    return b"".join(out)
