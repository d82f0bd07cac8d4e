"""One series' stored points for a download: every point in the step range, at most
``limit`` of them. When the range holds more, the answer ends before a step and says where
the rest starts (``rest``): pages are cut by step, so every point of a step is in one page,
and a page's points are in the order they were read (its chunks in their batches' read
order, ``purge.batch_order``): a restarted job's steps come again after those they repeat,
and the last point of a step is the one read last.

Chunks are read by their first step, a group at a time, keeping only their points in the
range. Once no chunk left starts at or below a step, every point of the steps below it is
at hand; a page ends at the first step past ``limit`` of those, wherever chunks begin, so
chunks of restarts that overlap one another are cut inside. At most ``DECODED`` times
``limit`` points are decoded for one answer.

Where it costs at most half a page, a page ends before the steps a restart wrote again
(``tangled``) rather than among them: then the pages one after another are the read order
too, as one answer would be."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Points as Stored
from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import SeriesKey
from tuneplane.web.read import listings
from tuneplane.web.read.columnar import Points
from tuneplane.web.read.purge import BatchOrder, batch_order
from tuneplane.web.read.series_read import CODEC, STORED_POINTS, epoch_starts

CHUNKS = """
SELECT batch_id, chunk_index, n, step_min, step_max FROM curve_chunks
WHERE series_id = $1 AND step_max >= $2 AND step_min <= $3
ORDER BY step_min, batch_id, chunk_index
"""

# Chunks fetched together: a quarter of a page's points at least, one chunk at least.
GROUPS: Final = 4
# Points decoded for one answer at most, in pages: chunks that overlap the page's first
# steps and hold this many together leave no step to cut at.
DECODED: Final = 4


class NoStepToCut(Exception):
    """No page can be cut from the range's first step: more than ``limit`` points at that
    step, or more than ``DECODED`` pages' worth of points in the chunks that hold it."""


@dataclass(frozen=True, slots=True)
class Exported:
    points: Points  # as columns: no Python object per point
    rest: int | None  # the first step not in this answer, when the range holds more


@dataclass(frozen=True, slots=True)
class Cut:
    rest: int | None  # the first step past the page; None: the page ends the range


@dataclass(slots=True)
class Gathered:
    """The in-range points of the chunks read so far, each chunk's with its read order."""

    lo: int
    hi: int
    parts: list[tuple[tuple[BatchOrder, int], Stored]]
    decoded: int = 0

    def add(self, order: tuple[BatchOrder, int], points: Stored) -> None:
        self.decoded += len(points.steps)
        keep = (points.steps >= self.lo) & (points.steps <= self.hi)
        self.parts.append((order, Stored(
            points.steps[keep], points.wall_times[keep], points.values[keep])))

    def cut(self, edge: int | None, limit: int) -> Cut | None:
        """Where the page ends once no chunk left starts below ``edge`` (None: no chunk
        left), or None when more chunks must be read first."""
        steps = np.concatenate([p.steps for _, p in self.parts]) if self.parts \
            else np.empty(0, "i8")
        whole = steps if edge is None else steps[steps < edge]
        if len(whole) > limit:
            first_out = int(np.partition(whole, limit)[limit])  # at most limit below it
            if first_out <= int(whole.min()):
                raise NoStepToCut(f"more than {limit} points at step {first_out}")
            return Cut(first_out)
        if edge is None:
            return Cut(None)
        if self.decoded > DECODED * limit:
            if len(whole) == 0:
                first = int(steps.min()) if len(steps) else self.lo
                raise NoStepToCut(f"the chunks holding step {first} hold more than "
                                  f"{DECODED * limit} points together")
            return Cut(edge)
        return None

    def below(self, step: int) -> int:
        """The points gathered with steps below ``step``."""
        return sum(int(np.count_nonzero(p.steps < step)) for _, p in self.parts)

    def page(self, rest: int | None) -> Points:
        self.parts.sort(key=lambda part: part[0])
        steps, walls, values = (np.concatenate([p[k] for _, p in self.parts]) if self.parts
                                else np.empty(0, "i8" if k == 0 else "f8") for k in range(3))
        keep = slice(None) if rest is None else steps < rest
        return Points(steps[keep], walls[keep], values[keep])


def tangled(chunks: Sequence[stored.Row], epochs: Mapping[str, float], lo: int,
            hi: int) -> list[tuple[int, int]]:
    """The step spans ``(a, b]`` a page must not end in (before a step among them) to keep
    the pages' points in read order: a chunk's first step ``a`` and the last step ``b`` of
    the chunks read before it, where ``b > a`` (a restart that wrote steps again); merged,
    in step order."""
    spans = sorted(((batch_order(r["batch_id"], epochs), r["chunk_index"]),
                    max(int(r["step_min"]), lo), min(int(r["step_max"]), hi)) for r in chunks)
    found: list[tuple[int, int]] = []
    latest: int | None = None
    for _, first, last in spans:
        if latest is not None and latest > first:
            found.append((first, latest))
        latest = last if latest is None else max(latest, last)
    merged: list[tuple[int, int]] = []
    for first, last in sorted(found):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def untangled(rest: int, spans: Sequence[tuple[int, int]]) -> int:
    """``rest``, or the start of the tangled span it falls in."""
    return next((first for first, last in spans if first < rest <= last), rest)


def groups(chunks: Sequence[stored.Row], limit: int) -> list[Sequence[stored.Row]]:
    """The chunks in runs of about ``limit / GROUPS`` points, in their order."""
    found: list[Sequence[stored.Row]] = []
    start, total = 0, 0
    for at, row in enumerate(chunks):
        total += row["n"]
        if total * GROUPS >= limit or at == len(chunks) - 1:
            found.append(chunks[start:at + 1])
            start, total = at + 1, 0
    return found


async def points(conn: Connection, key: SeriesKey, lo: int, hi: int,
                 limit: int) -> Exported | None:
    """The series' points with ``lo <= step <= hi``, at most ``limit``; None: no series."""
    found = await listings.series_id(conn, key)
    if found is None:
        return None
    chunks = await conn.fetch(CHUNKS, found, lo, hi)
    epochs = await epoch_starts(conn, key.member)
    gathered, read, cut = Gathered(lo, hi, []), 0, Cut(None)
    for group in groups(chunks, limit):
        batches, indexes = [r["batch_id"] for r in group], [r["chunk_index"] for r in group]
        for row in await conn.fetch(STORED_POINTS, found, batches, indexes):
            order = (batch_order(row["batch_id"], epochs), row["chunk_index"])
            gathered.add(order, stored.points_of(row, CODEC))
        read += len(group)
        edge = int(chunks[read]["step_min"]) if read < len(chunks) else None
        if (found_cut := gathered.cut(edge, limit)) is not None:
            cut = found_cut
            break
    rest = cut.rest
    if rest is not None:
        before = untangled(rest, tangled(chunks, epochs, lo, hi))
        rest = before if 2 * gathered.below(before) >= limit else rest
    return Exported(gathered.page(rest), rest)
