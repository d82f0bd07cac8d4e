"""A curve chunk's points as one ``bytea``: its steps, wall times and values, each a
column of byte planes (``planes``), bit for bit what was sent (NaN payloads, ±inf and -0.0
included)::

    version (u8) | points n (u32) | steps | wall times | values

Steps are int64 as delta-of-delta (regular steps: no plane at all); wall times the delta
of their bits (they increase: small deltas); values as float32 bits when every value of
the chunk survives float32 (TensorBoard's scalars), under whichever transform leaves the
fewest bits. ``Codec`` holds zstd contexts: one per thread or event loop.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
import zstandard

from tuneplane.common.chunks import planes
from tuneplane.common.chunks.planes import DELTA, DOD, FLOAT32, SPLIT, XOR, Planes
from tuneplane.telemetry.v1.limits import MAX_BATCH_POINTS

VERSION: Final = 1
HEADER: Final = struct.Struct("<BI")
STEP_MODES: Final = (DOD,)
WALL_MODES: Final = (DELTA,)
VALUE_MODES: Final = (SPLIT, XOR, DELTA, DOD)

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class Points(NamedTuple):
    steps: Ints
    wall_times: Floats
    values: Floats


class Codec:
    __slots__ = ("_planes",)

    def __init__(self, level: int = planes.LEVEL) -> None:
        self._planes = Planes(level)

    def encode(self, steps: Ints, wall_times: Floats, values: Floats) -> bytes:
        n = len(steps)
        if not len(wall_times) == len(values) == n:
            raise ValueError(f"a chunk's columns differ in length: {n} steps, "
                             f"{len(wall_times)} wall times, {len(values)} values")
        return b"".join([
            HEADER.pack(VERSION, n),
            planes.encode(np.ascontiguousarray(steps, dtype=np.int64).view(np.uint64),
                          STEP_MODES, 0, self._planes),
            self._floats(wall_times, WALL_MODES),
            self._floats(values, VALUE_MODES)])

    def _floats(self, column: Floats, modes: tuple[int, ...]) -> bytes:
        column = np.ascontiguousarray(column, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = column.astype(np.float32)
        if np.array_equal(narrow.astype(np.float64).view(np.uint64), column.view(np.uint64)):
            return planes.encode(narrow.view(np.uint32), modes, FLOAT32, self._planes)
        return planes.encode(column.view(np.uint64), modes, 0, self._planes)

    def decode(self, blob: bytes | memoryview) -> Points:
        """The points of ``blob`` (ValueError: it is not one this version made)."""
        data = memoryview(blob)
        try:
            version, n = HEADER.unpack_from(data)
            if version != VERSION:
                raise ValueError(f"a chunk blob of version {version}; this reads {VERSION}")
            if n > MAX_BATCH_POINTS:  # a chunk is one batch's at most: no vast allocation
                raise ValueError(f"a chunk blob says {n} points, over {MAX_BATCH_POINTS}")
            steps, at = planes.decode(data, HEADER.size, n, self._planes, STEP_MODES)
            walls, at = planes.decode(data, at, n, self._planes, WALL_MODES)
            values, at = planes.decode(data, at, n, self._planes, VALUE_MODES)
            if steps.dtype.itemsize != 8:
                raise ValueError("its steps are not 8-byte words")
            points = Points(steps.view(np.int64), _widened(walls), _widened(values))
        except (struct.error, zstandard.ZstdError, ValueError) as exc:
            raise ValueError(f"not a chunk blob ({len(data)} bytes): {exc}") from None
        if at != len(data):
            raise ValueError(f"a chunk blob of {len(data)} bytes holds {at}")
        return points


#: float32 bit patterns: a NaN's exponent, mantissa and quiet bit.
_EXPONENT, _MANTISSA, _QUIET = np.uint32(0x7F800000), np.uint32(0x007FFFFF), np.uint32(0x00400000)


def _widened(words: planes.Words) -> Floats:
    """Float64 values from a column's words; float32 words are widened exactly, which a
    signalling NaN would not be (widening quiets it), so one is refused: the encoder
    narrows only what widens back to the very same bits, and never writes one."""
    if words.dtype.itemsize == 4:
        nan = (words & _EXPONENT) == _EXPONENT
        if np.any(nan & ((words & _MANTISSA) != 0) & ((words & _QUIET) == 0)):
            raise ValueError("a float32 column holds a signalling NaN")
        return words.view(np.float32).astype(np.float64)
    out: Floats = words.view(np.float64)
    return out
