"""One series' bounded read: the series, its bounds and chunk summaries in one statement
(``series_chunks``),
TensorBoard's purge cuts where a marker may apply, chunks unpacked within the unpack budget
(``stored``: a blob, or the binary arrays of chunks written before blobs), and the
downsampler over the columns (``columnar``, with ``downsample`` where int64 step arithmetic
cannot hold)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from cachetools import LRUCache

from tuneplane.common.chunks import blob, stored
from tuneplane.common.chunks.blob import Codec
from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import MemberKey, SeriesKey
from tuneplane.web.read import columnar, series_chunks
from tuneplane.web.read.columnar import (
    NO_BUCKETS,
    NO_POINTS,
    Chunks,
    ColumnAnswer,
    Ints,
    Points,
    Unrepresentable,
    ints,
)
from tuneplane.web.read.downsample import ChunkRef, ChunkSummary, answer
from tuneplane.web.read.purge import Marker, cuts, markers_of_series

# A chunk's points, whichever form stores them (``stored``): a blob, or arrays as
# ``array_send``'s bytes; numpy reads either with no Python object per point.
STORED_POINTS = f"""
SELECT batch_id, chunk_index, {stored.SELECTED}
FROM curve_chunks c JOIN unnest($2::text[], $3::int[]) AS w(batch_id, chunk_index)
     USING (batch_id, chunk_index)
WHERE c.series_id = $1
"""

MARKERS = """
SELECT batch_id, marker_index, file, step, tags FROM session_starts
WHERE run_id = $1 AND attempt = $2 AND member = $3 AND source = $4
  AND (cardinality(tags) = 0 OR $5 = ANY(tags))
"""

EPOCH_STARTS = """
SELECT substring(batch_id FROM '^(.*)-[0-9]+$') AS epoch, min(sealed_at) AS first_sealed
FROM batch_ledger WHERE run_id = $1 AND attempt = $2 AND member = $3 GROUP BY 1
"""

SERIES_BATCHES = "SELECT DISTINCT batch_id FROM curve_chunks WHERE series_id = $1"

# The chunks a purge cuts: those of a cut batch reaching the cut (a chunk wholly at or past
# it is gone whole, never read; one that straddles it is decoded: ``cut_chunks``).
CUT_CHUNKS = """
SELECT c.batch_id, c.chunk_index, c.n, c.step_min, w.cut
FROM curve_chunks c JOIN unnest($2::text[], $3::bigint[]) AS w(batch_id, cut)
     USING (batch_id)
WHERE c.series_id = $1 AND c.step_max >= w.cut
"""
#: What of a chunk survives a cut, by its series id, its batch's identity (run, attempt,
#: member, batch id), its index there and the cut step. A chunk's points are its batch's,
#: and the projector stores one batch per identity (its ledger), so nothing kept goes
#: stale; the series id too, for a deleted run's id may be taken again. A purged answer is
#: read again each time (a marker may come), and a run restarted many times straddles a
#: cut in each of its series' cut batches: each such chunk is decoded once a process.
LEFT_OF_CUT: LRUCache[tuple[int, str, int, str, str, int, int], ChunkSummary | None] = \
    LRUCache(50_000)
#: Decodes stored chunks: one per process (the web serves from one event loop).
CODEC = Codec()


async def epoch_starts(conn: Connection, member: MemberKey) -> dict[str, float]:
    """Each spool epoch of ``member`` with its first batch's seal time: the epochs' read
    order (``purge.batch_order``)."""
    return {r["epoch"]: r["first_sealed"] for r in await conn.fetch(
        EPOCH_STARTS, member.run_id, member.attempt, member.member)}


async def purge_cuts(conn: Connection, series_id: int | None, member: MemberKey, source: str,
                     run_path: str, tag: str) -> dict[str, int]:
    """batch id → the step from which TensorBoard's purge drops the series' points there
    (empty without purge markers: the common case costs one indexed query)."""
    rows = await conn.fetch(MARKERS, member.run_id, member.attempt, member.member, source, tag)
    markers = markers_of_series((Marker(r["batch_id"], r["file"], r["step"], r["marker_index"],
                                        tuple(r["tags"])) for r in rows), run_path, tag)
    if series_id is None or not markers:
        return {}
    epochs = await epoch_starts(conn, member)
    batches = [r["batch_id"] for r in await conn.fetch(SERIES_BATCHES, series_id)]
    return cuts(batches, markers, epochs)


@dataclass(frozen=True, slots=True)
class SeriesRead:
    """A series' bounded answer over the step range [lo, hi], the points a purge dropped
    from the whole series, and the wall time of its first stored point (where a relative
    time axis starts; None for a series with no points)."""

    answer: ColumnAnswer
    lo: int
    hi: int
    purged: int
    wall_first: float | None
    wall_time: str = "written"  # whose clock: written, read or mixed
    version: series_chunks.Version | None = None  # what it was read at (``answers``)
    #: Its JSON as the scalars route gives it, kept with a kept answer (``answers``).
    body: list[bytes] = field(default_factory=list, compare=False, repr=False)


NOTHING = ColumnAnswer(False, 0, NO_POINTS, NO_BUCKETS)


async def cut_chunks(conn: Connection, series_id: int, member: MemberKey, chunks: Chunks,
                     purge: Mapping[str, int]) -> tuple[Chunks, Ints, int]:
    """``chunks`` with what survives each purge cut in place of a cut chunk (none left:
    gone), the points each stores (what unpacking it costs), and the points purged."""
    stored_n = dict(zip(chunks.refs, chunks.summary.n.tolist(), strict=True))
    rows = await conn.fetch(CUT_CHUNKS, series_id, list(purge), list(purge.values()))
    straddling = [((r["batch_id"], r["chunk_index"]), r["cut"]) for r in rows
                  if r["step_min"] < r["cut"]]
    batch = (series_id, member.run_id, member.attempt, member.member)
    left: dict[ChunkRef, ChunkSummary | None] = {
        ref: LEFT_OF_CUT[(*batch, *ref, cut)] for ref, cut in straddling
        if (*batch, *ref, cut) in LEFT_OF_CUT}
    unknown = [ref for ref, _ in straddling if ref not in left]
    if unknown:
        for r in await conn.fetch(STORED_POINTS, series_id, [ref[0] for ref in unknown],
                                  [ref[1] for ref in unknown]):
            ref, at = (r["batch_id"], r["chunk_index"]), purge[r["batch_id"]]
            left[ref] = LEFT_OF_CUT[(*batch, *ref, at)] = left_of_cut(
                ref, stored.points_of(r, CODEC), at)
    remaining: dict[ChunkRef, ChunkSummary | None] = {}
    purged = 0
    for row in rows:  # (a chunk gone since the first statement, a purge's: none left)
        ref = (row["batch_id"], row["chunk_index"])
        kept = left.get(ref)
        purged += row["n"] - (0 if kept is None else kept.n)
        remaining[ref] = kept
    if not remaining:
        return chunks, chunks.summary.n, purged
    summaries = [remaining.get(s.ref, s) for s in chunks.summaries()]
    cut = Chunks.of([s for s in summaries if s is not None])
    return cut, ints([stored_n[ref] for ref in cut.refs]), purged


def left_of_cut(ref: ChunkRef, points: blob.Points, cut: int) -> ChunkSummary | None:
    """What of a stored chunk is before its purge cut: its summary, or None (nothing)."""
    kept = np.flatnonzero(points.steps < cut)
    if not len(kept):
        return None
    steps, values = points.steps[kept], points.values[kept]
    finite = values[np.isfinite(values)]
    return ChunkSummary(ref, len(kept), int(steps.min()), int(steps.max()),
                        float(finite.min()) if len(finite) else None,
                        float(finite.max()) if len(finite) else None,
                        float(values[-1]), float(points.wall_times[kept[-1]]))


def within_budget(needed: list[int], stored: Ints, unpack_budget: int) -> list[int]:
    """The chunks of ``needed`` (in order) whose stored points fit ``unpack_budget``; the
    answer takes the others from their summaries. A writer chooses its chunks' step ranges:
    any number of them may straddle a range's edge or a purge's cut."""
    spent = np.cumsum(stored[needed])
    return needed[:int(np.searchsorted(spent, unpack_budget, side="right"))]


async def unpack(conn: Connection, series_id: int, chunks: Chunks, needed: list[int],
                 purge: Mapping[str, int]) -> dict[int, Points]:
    """The points of the chunks at positions ``needed``, what a purge cut left of them."""
    if not needed:
        return {}
    refs = [chunks.refs[i] for i in needed]
    position = dict(zip(refs, needed, strict=True))
    unpacked: dict[int, Points] = {}
    for r in await conn.fetch(STORED_POINTS, series_id, [ref[0] for ref in refs],
                              [ref[1] for ref in refs]):
        found = stored.points_of(r, CODEC)
        points = Points(found.steps, found.wall_times, found.values)
        cut = purge.get(r["batch_id"])
        if cut is not None:
            keep = points.steps < cut
            points = Points(points.steps[keep], points.walls[keep], points.values[keep])
        unpacked[position[(r["batch_id"], r["chunk_index"])]] = points
    return unpacked


async def read(conn: Connection, key: SeriesKey, lo: int | None, hi: int | None,
               max_points: int, unpack_budget: int, *,
               purge: bool = False) -> SeriesRead | None:
    """The bounded answer for one series (None when it is not stored), with TensorBoard's
    purge applied when ``purge``. One query (series, bounds, summaries, whether any purge
    marker could apply) unless the answer unpacks chunks or a marker applies."""
    member = key.member
    whole = lo is None and hi is None
    row = await conn.fetchrow(series_chunks.WHOLE if whole else series_chunks.RANGE,
                              member.run_id, member.attempt, member.member, key.source,
                              key.run_path, key.tag, *(() if whole else (lo, hi)))
    if row is None:
        return None
    found = series_chunks.SeriesChunks.of(row, whole=whole)
    chunks, first, last = found.chunks, found.first, found.last
    wall_first, walls = found.wall_first, found.wall_time
    lo = first if lo is None else lo
    hi = last if hi is None else hi
    cuts: dict[str, int] = {}
    stored, purged = chunks.summary.n, 0
    if purge and found.marked:
        cuts = await purge_cuts(conn, found.series_id, member, key.source, key.run_path, key.tag)
        if cuts:
            chunks, stored, purged = await cut_chunks(conn, found.series_id, member,
                                                           chunks, cuts)
    if lo is None or hi is None or lo > hi:
        return SeriesRead(NOTHING, lo or 0, hi or 0, purged, wall_first, walls, found.version)
    needed = within_budget(columnar.chunks_to_unpack(chunks, lo, hi, max_points,
                                                     unpack_budget), stored, unpack_budget)
    unpacked = await unpack(conn, found.series_id, chunks, needed, cuts)
    try:
        result = columnar.answer(chunks, unpacked, lo, hi, max_points)
    except Unrepresentable:
        summaries = chunks.summaries()
        arrays = {chunks.refs[i]: (p.steps.tolist(), p.walls.tolist(), p.values.tolist())
                  for i, p in unpacked.items()}
        result = ColumnAnswer.of(answer(summaries, arrays, lo, hi, max_points))
    return SeriesRead(result, lo, hi, purged, wall_first, walls, found.version)
