"""One series' stored points for a download: every point in the step range, in the order
they were read (chunks by first step), at most ``limit`` of them. When the range holds
more, the answer ends at a chunk's edge and says where the rest starts (``rest``)."""

from __future__ import annotations

from dataclasses import dataclass

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import SeriesKey
from tuneplane.web.read import listings

Point = tuple[int, float, float]  # step, wall time, value

CHUNKS = """
SELECT batch_id, chunk_index, n, step_min FROM curve_chunks
WHERE series_id = $1 AND step_max >= $2 AND step_min <= $3
ORDER BY step_min, batch_id, chunk_index
"""


class NoStepToCut(Exception):
    """More than ``limit`` points start at the range's first step: no chunk edge to end at."""


@dataclass(frozen=True, slots=True)
class Exported:
    points: list[Point]
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
    by_chunk = {(a["batch_id"], a["chunk_index"]): a for a in await listings.arrays(
        conn, found, chunks)}
    return Exported([(s, w, v) for c in chunks
                     for s, w, v in zip(*(by_chunk[c][k] for k in ("steps", "wall_times",
                                                                    "values")), strict=True)
                     if lo <= s <= hi and (rest is None or s < rest)], rest)
