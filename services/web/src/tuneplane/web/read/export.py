"""One series' stored points for a download: every point in the step range, at most
``limit`` of them. When the range holds more, the answer ends at a chunk's edge and says
where the rest starts (``rest``): pages are cut by step, so every point of a step is in one
page, and a page's points are in the order they were read (its chunks in their batches'
read order, ``purge.batch_order``): a restarted job's steps come again after those they
repeat, and the last point of a step is the one read last."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tuneplane.common.chunks import stored
from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import SeriesKey
from tuneplane.web.read import listings
from tuneplane.web.read.columnar import Points
from tuneplane.web.read.purge import batch_order
from tuneplane.web.read.series_read import CODEC, STORED_POINTS, epoch_starts

CHUNKS = """
SELECT batch_id, chunk_index, n, step_min FROM curve_chunks
WHERE series_id = $1 AND step_max >= $2 AND step_min <= $3
ORDER BY step_min, batch_id, chunk_index
"""


class NoStepToCut(Exception):
    """More than ``limit`` points start at the range's first step: no chunk edge to end at."""


@dataclass(frozen=True, slots=True)
class Exported:
    points: Points  # as columns: no Python object per point
    rest: int | None  # the first step not in this answer, when the range holds more


async def points(conn: Connection, key: SeriesKey, lo: int, hi: int,
                 limit: int) -> Exported | None:
    """The series' points with ``lo <= step <= hi``, at most ``limit``; None: no series."""
    found = await listings.series_id(conn, key)
    if found is None:
        return None
    chunks: list[tuple[str, int]] = []
    total, rest = 0, None
    for row in await conn.fetch(CHUNKS, found, lo, hi):
        if total + row["n"] > limit and chunks:
            rest = int(row["step_min"])
            break
        chunks.append((row["batch_id"], row["chunk_index"]))
        total += row["n"]
    if rest is not None and rest <= lo:  # every chunk left starts at lo
        raise NoStepToCut(f"more than {limit} points start at step {lo}")
    epochs = await epoch_starts(conn, key.member)
    chunks.sort(key=lambda c: (batch_order(c[0], epochs), c[1]))
    rows = {(r["batch_id"], r["chunk_index"]): r for r in await conn.fetch(
        STORED_POINTS, found, [b for b, _ in chunks], [i for _, i in chunks])}
    parts = [stored.points_of(rows[c], CODEC) for c in chunks]
    steps, walls, values = (np.concatenate([p[k] for p in parts]) if parts else
                            np.empty(0, "i8" if k == 0 else "f8") for k in range(3))
    keep = (steps >= lo) & (steps <= hi)
    if rest is not None:
        keep &= steps < rest
    return Exported(Points(steps[keep], walls[keep], values[keep]), rest)
