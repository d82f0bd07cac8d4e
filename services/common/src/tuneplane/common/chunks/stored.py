"""A curve chunk's points as a reader selects them, whichever form stores them: the blob of
``blob`` (``packed``, what the projector writes), or the three arrays of chunks written
before it (migration 0037), until ``tuneplane-admin repack-chunks`` has made them blobs.

``SELECTED`` is the select-list for a chunk ``c``, and ``points_of`` its row's points; both
forms read back the same numbers, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

import numpy as np

from tuneplane.common.chunks.blob import Codec, Points
from tuneplane.common.chunks.sent import received

SELECTED: Final = ('c.packed, array_send(c.steps) AS steps_sent, '
                   'array_send(c.wall_times) AS walls_sent, array_send(c."values") AS values_sent')


class Row(Protocol):
    """A fetched row, by column name (an asyncpg ``Record``)."""

    def __getitem__(self, key: str, /) -> Any: ...


def points_of(row: Row, codec: Codec) -> Points:
    """The points of a row that selected ``SELECTED`` (ValueError: a damaged blob, or a row
    with neither form)."""
    blob = row["packed"]
    if blob is not None:
        return codec.decode(blob)
    if row["steps_sent"] is None:
        raise ValueError("a chunk row with neither a points blob nor point arrays")
    return Points(received(row["steps_sent"], "i8"), received(row["walls_sent"], "f8"),
                  received(row["values_sent"], "f8"))


def bits(points: Points) -> tuple[bytes, bytes, bytes]:
    """The points' columns as little-endian int64 and float64 bytes: what "the same
    points" means, bit for bit (NaN payloads, -0.0)."""
    return (points.steps.astype("<i8").tobytes(), points.wall_times.astype("<f8").tobytes(),
            points.values.astype("<f8").tobytes())


def in_step_order(parts: Sequence[Points]) -> Points:
    """Chunks' points as one series, by step then wall time (a stable sort: chunks in the
    order given break what ties remain)."""
    if not parts:
        return Points(np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64))
    steps, walls, values = (np.concatenate(column) for column in zip(*parts, strict=True))
    order = np.lexsort((walls, steps))
    return Points(steps[order], walls[order], values[order])
