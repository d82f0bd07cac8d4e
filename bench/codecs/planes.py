"""Columns as byte planes: a reversible transform to small unsigned words, the words cut
into byte planes (byte-stream split), the planes compressed; every step vectorized.

The transforms are the project's own (``tuneplane.common.chunks.planes``); here they are
tried in other framings too. A column's encoding is a small uncompressed header, then the
stored planes::

    mode (u8) | planes k (u8) | anchors (u64 each) | stored sizes (u32 each) | planes

The transform maps the column's bit patterns (int64 steps; float64 bits, or float32 bits
when every value of the column survives float32 exactly) to ``m`` residual words:

- ``split``: the bit patterns themselves (no anchor);
- ``xor``: each pattern XOR the previous one (anchor: the first);
- ``delta``: each pattern minus the previous one, zig-zag (anchor: the first). A column of
  increasing non-negative doubles (wall times) orders like its bits: small deltas;
- ``dod``: the delta of the deltas, zig-zag (anchors: the first and its delta). Regular
  steps give zeros; a smooth curve (a cosine rate) small words.

Only the low ``k`` byte planes that hold a non-zero byte are stored (little-endian words:
plane 0 is the low byte), so regular steps need no planes at all. Each plane is
compressed on its own (a random low plane and a repetitive high one then share no
entropy coder's table: ~0.1 B a point less than one frame for all), or with
``per_plane=False`` all ``k`` in one frame (one size); a plane or frame that compression
would not shrink is stored as it is (its stored size is then its length).
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.codecs.compressors import Buffer, Compressor
from bench.codecs.corpus import Chunk, Floats, Ints
from tuneplane.common.chunks.planes import (
    ANCHORS,
    DELTA,
    DOD,
    FLOAT32,
    SPLIT,
    XOR,
    cost,
    forward,
    inverse,
)

Words = npt.NDArray[np.unsignedinteger[Any]]

if sys.byteorder != "little":
    raise RuntimeError("byte planes assume little-endian words")

MODES = {"split": SPLIT, "xor": XOR, "delta": DELTA, "dod": DOD}
PER_PLANE = 0x20  # mode flag: one stored size per plane (else one for all)
_HEADER = struct.Struct("<BB")

_UNSIGNED: dict[int, type[np.unsignedinteger[Any]]] = {4: np.uint32, 8: np.uint64}
_SIGNED: dict[int, type[np.signedinteger[Any]]] = {4: np.int32, 8: np.int64}


def to_planes(residuals: Words) -> list[bytes]:
    """The low byte planes that hold a non-zero byte, plane 0 (the low bytes) first."""
    if len(residuals) == 0:
        return []
    k = (int(np.bitwise_or.reduce(residuals)).bit_length() + 7) // 8
    width = residuals.dtype.itemsize
    grid = residuals.view(np.uint8).reshape(len(residuals), width)
    return [grid[:, i].tobytes() for i in range(k)]


def from_planes(planes: Buffer, k: int, m: int, width: int) -> Words:
    """Words from ``k`` low byte planes of ``m`` bytes, one after the other in ``planes``."""
    if not k:
        return np.zeros(m, dtype=_UNSIGNED[width])
    grid = np.zeros((m, width), dtype=np.uint8)
    grid[:, :k] = np.frombuffer(planes, dtype=np.uint8, count=k * m).reshape(k, m).T
    return grid.view(_UNSIGNED[width]).reshape(m)


def float_words(values: Floats) -> tuple[int, Words]:
    """The float32 flag and the bit patterns: float32 when every value survives it."""
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = values.astype(np.float32)
    if np.array_equal(narrow.astype(np.float64).view(np.uint64), values.view(np.uint64)):
        return FLOAT32, narrow.view(np.uint32)
    return 0, values.view(np.uint64)


def pack(compressor: Compressor, data: bytes) -> bytes:
    """``data`` compressed, or as it is when that is no smaller."""
    packed = compressor.compress(data)
    return packed if len(packed) < len(data) else data


def unpack(compressor: Compressor, stored: memoryview, size: int) -> Buffer:
    return stored if len(stored) == size else compressor.decompress(stored, size)


def encode_column(words: Words, modes: tuple[int, ...], flag: int, compressor: Compressor,
                  per_plane: bool = True) -> bytes:
    """``words`` under the mode of ``modes`` with the smallest bit estimate."""
    best: tuple[float, int, list[int], Words] | None = None
    for mode in modes:
        anchors, residuals = forward(words, mode)
        bits = cost(residuals) if len(modes) > 1 else 0.0
        if best is None or bits < best[0]:
            best = (bits, mode, anchors, residuals)
    assert best is not None
    _, mode, anchors, residuals = best
    planes = to_planes(residuals)
    stored = ([pack(compressor, p) for p in planes] if per_plane
              else [pack(compressor, b"".join(planes))] if planes else [])
    head = _HEADER.pack(mode | flag | (PER_PLANE if per_plane else 0), len(planes))
    sizes = struct.pack(f"<{len(anchors)}Q{len(stored)}I", *anchors, *map(len, stored))
    return b"".join([head, sizes, *stored])


def decode_column(data: bytes, n: int, compressor: Compressor) -> Words:
    flags, k = _HEADER.unpack_from(data)
    mode = flags & 0x0F
    width = 4 if flags & FLOAT32 else 8
    a = min(ANCHORS[mode], n)
    frames = k if flags & PER_PLANE else min(k, 1)
    fields = struct.unpack_from(f"<{a}Q{frames}I", data, _HEADER.size)
    m = n - a
    view = memoryview(data)
    start = _HEADER.size + 8 * a + 4 * frames
    if frames == 1:
        planes = unpack(compressor, view[start:start + fields[a]], k * m)
    else:
        parts = []
        for size in fields[a:]:
            parts.append(unpack(compressor, view[start:start + size], m))
            start += size
        planes = b"".join(parts)
    return inverse(fields[:a], from_planes(planes, k, m, width), mode)


def encode_floats(values: Floats, modes: tuple[int, ...], compressor: Compressor,
                  per_plane: bool = True) -> bytes:
    flag, words = float_words(values)
    return encode_column(words, modes, flag, compressor, per_plane)


def decode_floats(data: bytes, n: int, compressor: Compressor) -> Floats:
    words = decode_column(data, n, compressor)
    if words.dtype.itemsize == 4:
        return words.view(np.float32).astype(np.float64)
    return words.view(np.float64)


def encode_ints(values: Ints, modes: tuple[int, ...], compressor: Compressor,
                per_plane: bool = True) -> bytes:
    return encode_column(values.view(np.uint64), modes, 0, compressor, per_plane)


def decode_ints(data: bytes, n: int, compressor: Compressor) -> Ints:
    return decode_column(data, n, compressor).view(np.int64)


@dataclass(frozen=True, slots=True)
class PlaneCodec:
    """Steps, wall times and values each transformed, byte-split and compressed."""

    compressor: Compressor
    value_modes: tuple[str, ...]
    per_plane: bool = True
    wall_modes: tuple[str, ...] = ("delta",)
    step_modes: tuple[str, ...] = ("dod",)

    @property
    def name(self) -> str:
        """``v:auto`` when the value transform is chosen per chunk among several."""
        values = "auto" if len(self.value_modes) > 1 else self.value_modes[0]
        framing = "" if self.per_plane else " 1 frame"
        return f"planes {self.compressor.label}{framing} v:{values}"

    def encode(self, chunk: Chunk) -> tuple[bytes, bytes, bytes]:
        c, p = self.compressor, self.per_plane
        return (encode_ints(chunk.steps, _modes(self.step_modes), c, p),
                encode_floats(chunk.walls, _modes(self.wall_modes), c, p),
                encode_floats(chunk.values, _modes(self.value_modes), c, p))

    def decode(self, blobs: tuple[bytes, ...], n: int) -> tuple[Ints, Floats, Floats]:
        c = self.compressor
        return (decode_ints(blobs[0], n, c), decode_floats(blobs[1], n, c),
                decode_floats(blobs[2], n, c))


def _modes(names: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(MODES[name] for name in names)
