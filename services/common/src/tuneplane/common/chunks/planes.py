"""One column of words as byte planes: a reversible transform to small unsigned words,
the words cut into byte planes (byte-stream split), each plane compressed; every step
vectorized with numpy, so a chunk costs a few array operations, never a loop in Python.

A column's encoding::

    flags (u8: mode | FLOAT32) | planes k (u8) | anchors (u64 each) | sizes (u32 each) | planes

The transform maps the column's bit patterns (int64 steps; float64 bits, or float32 bits
when every value of the column survives float32 exactly, as TensorBoard's do) to
residual words:

- ``SPLIT``: the bit patterns themselves (no anchor);
- ``XOR``: each pattern XOR the previous one (anchor: the first);
- ``DELTA``: each pattern minus the previous, zig-zag (anchor: the first); increasing
  non-negative doubles (wall times) order like their bits, so their deltas are small;
- ``DOD``: the delta of the deltas, zig-zag (anchors: the first and its delta); regular
  steps give zeros, a smooth curve small words.

Only the low ``k`` byte planes holding a non-zero byte are kept (regular steps: none),
each compressed on its own with zstd (a random low plane and a repetitive high one share
no entropy table), or kept as it is where compression would not shrink it (its stored
size is then its length). bench/chunk_codecs.py compares this with the alternatives.
"""

from __future__ import annotations

import struct
import sys
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import zstandard

Words = npt.NDArray[np.unsignedinteger[Any]]

if sys.byteorder != "little":  # the planes are the words' bytes in memory order
    raise RuntimeError("tuneplane.common.chunks assumes a little-endian machine")

SPLIT, XOR, DELTA, DOD = 0, 1, 2, 3
ANCHORS: Final = {SPLIT: 0, XOR: 1, DELTA: 1, DOD: 2}
FLOAT32: Final = 0x10  # flag: the column's words are float32 bit patterns
MODE_MASK: Final = 0x0F
HEADER: Final = struct.Struct("<BB")
LEVEL: Final = 3
_UNSIGNED: Final[dict[int, Any]] = {4: np.uint32, 8: np.uint64}
_SIGNED: Final[dict[int, Any]] = {4: np.int32, 8: np.int64}


class Planes:
    """Compresses and decompresses planes with one zstd context each way (not shared
    between threads: each thread or event loop keeps its own)."""

    __slots__ = ("_compress", "_decompress")

    def __init__(self, level: int = LEVEL) -> None:
        self._compress = zstandard.ZstdCompressor(level=level, write_content_size=False)
        self._decompress = zstandard.ZstdDecompressor()

    def pack(self, plane: bytes) -> bytes:
        packed: bytes = self._compress.compress(plane)
        return packed if len(packed) < len(plane) else plane

    def unpack(self, stored: memoryview, size: int) -> bytes:
        if len(stored) == size:
            return bytes(stored)
        declared = zstandard.frame_content_size(stored)  # -1: not said (ours never say)
        if declared not in (-1, size):  # else zstd would allocate what a damaged one says
            raise ValueError(f"a plane's frame says {declared} bytes, not {size}")
        found: bytes = self._decompress.decompress(stored, max_output_size=size)
        if len(found) != size:
            raise ValueError(f"a plane decompressed to {len(found)} bytes, not {size}")
        return found


def zigzag(d: Words) -> Words:
    """Wrapping differences as small unsigned words: 0, -1, 1, -2 … → 0, 1, 2, 3 …"""
    width = d.dtype.itemsize
    signed = d.view(_SIGNED[width])
    out: Words = ((signed << 1) ^ (signed >> (8 * width - 1))).view(_UNSIGNED[width])
    return out


def unzigzag(z: Words) -> Words:
    one = z.dtype.type(1)
    out: Words = np.bitwise_xor(z >> one, np.negative(z & one))  # -1 wraps to all ones
    return out


def forward(words: Words, mode: int) -> tuple[list[int], Words]:
    """The anchors and residual words of ``words`` under ``mode``."""
    if mode == SPLIT or len(words) == 0:
        return [], words
    if mode == XOR:
        return [int(words[0])], words[1:] ^ words[:-1]
    delta = np.diff(words)  # wraps in the unsigned words
    if mode == DELTA or len(words) == 1:
        return [int(words[0])], zigzag(delta)
    return [int(words[0]), int(delta[0])], zigzag(np.diff(delta))


def inverse(anchors: tuple[int, ...], residuals: Words, mode: int) -> Words:
    """The words ``forward`` took, from its anchors and residuals."""
    if mode == SPLIT or not anchors:
        return residuals
    dtype = residuals.dtype
    a = len(anchors)
    out = np.empty(len(residuals) + a, dtype=dtype)
    out[:a] = anchors
    if mode == XOR:
        out[1:] = residuals
        return np.bitwise_xor.accumulate(out, out=out)
    out[a:] = unzigzag(residuals)
    if mode == DOD and a == 2:
        np.cumsum(out[1:], dtype=dtype, out=out[1:])
    return np.cumsum(out, dtype=dtype, out=out)


def cost(residuals: Words) -> float:
    """A cheap stand-in for the compressed size: the residuals' summed bit lengths."""
    return float(np.log2(residuals.astype(np.float64) + 1.0).sum())


def encode(words: Words, modes: tuple[int, ...], flags: int, planes: Planes) -> bytes:
    """``words`` under whichever of ``modes`` leaves the fewest bits."""
    chosen = [(mode, *forward(words, mode)) for mode in modes]
    mode, anchors, residuals = min(chosen, key=lambda c: cost(c[2]) if len(modes) > 1 else 0)
    k = (int(np.bitwise_or.reduce(residuals)).bit_length() + 7) // 8 if len(residuals) else 0
    grid = residuals.view(np.uint8).reshape(len(residuals), residuals.dtype.itemsize)
    stored = [planes.pack(grid[:, i].tobytes()) for i in range(k)]
    return b"".join([HEADER.pack(mode | flags, k),
                     struct.pack(f"<{len(anchors)}Q{k}I", *anchors, *map(len, stored)),
                     *stored])


def decode(data: memoryview, at: int, n: int, planes: Planes,
           modes: tuple[int, ...]) -> tuple[Words, int]:
    """The ``n`` words of the column at offset ``at`` (its mode one of ``modes``), and the
    offset after it."""
    flags, k = HEADER.unpack_from(data, at)
    mode, width = flags & MODE_MASK, 4 if flags & FLOAT32 else 8
    if mode not in modes or k > width or flags & ~(MODE_MASK | FLOAT32):
        raise ValueError(f"a column's header says flags {flags:#x} and {k} planes of "
                         f"{width} bytes")
    a = min(ANCHORS[mode], n)
    fields = struct.unpack_from(f"<{a}Q{k}I", data, at + HEADER.size)
    if any(anchor >> (8 * width) for anchor in fields[:a]):
        raise ValueError(f"a column's anchor does not fit its {width}-byte words")
    at += HEADER.size + 8 * a + 4 * k
    m = n - a
    grid = np.zeros((m, width), dtype=np.uint8)
    for i, size in enumerate(fields[a:]):
        grid[:, i] = np.frombuffer(planes.unpack(data[at:at + size], m), dtype=np.uint8)
        at += size
    return inverse(tuple(fields[:a]), grid.view(_UNSIGNED[width]).reshape(m), mode), at
