"""What the projector stores since migration 0037: ``tuneplane.common.chunks``' one blob a
chunk (``Codec``), its bytes split by column for the table (the blob's header counted with
the steps)."""

from __future__ import annotations

import struct

from bench.codecs.corpus import Chunk, Floats, Ints
from tuneplane.common.chunks import blob, planes

NAME = "stored: packed blob (0037)"
CODEC = blob.Codec()


def encode(chunk: Chunk) -> tuple[bytes, ...]:
    return (CODEC.encode(chunk.steps, chunk.walls, chunk.values),)


def decode(blobs: tuple[bytes, ...], n: int) -> tuple[Ints, Floats, Floats]:
    points = CODEC.decode(blobs[0])
    return points.steps, points.wall_times, points.values


def split(blobs: tuple[bytes, ...]) -> tuple[int, int, int]:
    """The bytes of each column's encoding in the blob."""
    data = blobs[0]
    _, n = blob.HEADER.unpack_from(data)
    at, sizes = blob.HEADER.size, []
    for _ in range(3):
        flags, k = planes.HEADER.unpack_from(data, at)
        a = min(planes.ANCHORS[flags & planes.MODE_MASK], n)
        fields = struct.unpack_from(f"<{a}Q{k}I", data, at + planes.HEADER.size)
        end = at + planes.HEADER.size + 8 * a + 4 * k + sum(fields[a:])
        sizes.append(end - at)
        at = end
    return sizes[0] + blob.HEADER.size, sizes[1], sizes[2]
