"""The downsampler of ``downsample`` over columns: summaries, points and answers as numpy
arrays, so a series costs a few array operations instead of Python objects per bucket.

Same answers as ``downsample.answer`` and ``downsample.chunks_to_unpack`` (the property
tests compare them), with one difference of form: a summary's "no finite value" is NaN
here, never a stored minimum or maximum (those are over finite values). Where int64
arithmetic could overflow (step ranges near 2**63) ``Unrepresentable`` says so, and the
caller answers with ``downsample`` over Python integers instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tuneplane.web.read.downsample import (
    Answer,
    Arrays,
    ChunkRef,
    ChunkSummary,
    Unit,
)

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


class Unrepresentable(ValueError):
    """The answer's step arithmetic does not fit int64; ``downsample`` answers it."""


def ints(values: Sequence[int] | Ints) -> Ints:
    return np.asarray(values, dtype=np.int64)


def floats(values: Sequence[float | None] | Floats) -> Floats:
    """None (no finite value) becomes NaN."""
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class Units:
    """Summarised pieces of chunks as columns (``downsample.Unit``, one per row)."""

    step_min: Ints
    step_max: Ints
    n: Ints
    v_min: Floats  # NaN: no finite value
    v_max: Floats
    v_last: Floats
    w_last: Floats

    def take(self, rows: Ints | npt.NDArray[np.bool_]) -> Units:
        return Units(self.step_min[rows], self.step_max[rows], self.n[rows], self.v_min[rows],
                     self.v_max[rows], self.v_last[rows], self.w_last[rows])


@dataclass(frozen=True, slots=True)
class Chunks:
    """Chunk summaries as columns, and their segments flattened in chunk order:
    ``seg_n[i]`` segments of ``segments`` belong to chunk ``i`` (0: the chunk is its own
    unit)."""

    refs: list[ChunkRef]
    summary: Units
    seg_n: Ints
    segments: Units

    @classmethod
    def of(cls, summaries: Sequence[ChunkSummary]) -> Chunks:
        segs = [u for s in summaries for u in s.segments]
        return cls([s.ref for s in summaries],
                   Units(ints([s.step_min for s in summaries]),
                         ints([s.step_max for s in summaries]), ints([s.n for s in summaries]),
                         floats([s.v_min for s in summaries]),
                         floats([s.v_max for s in summaries]),
                         floats([s.v_last for s in summaries]),
                         floats([s.w_last for s in summaries])),
                   ints([len(s.segments) for s in summaries]),
                   Units(ints([u.step_min for u in segs]), ints([u.step_max for u in segs]),
                         ints([u.n for u in segs]), floats([u.v_min for u in segs]),
                         floats([u.v_max for u in segs]), floats([u.v_last for u in segs]),
                         floats([u.w_last for u in segs])))

    def summaries(self) -> list[ChunkSummary]:
        """Back to ``downsample``'s objects (for answers ``Unrepresentable`` here)."""
        starts = np.concatenate(([0], np.cumsum(self.seg_n)))
        s, g = self.summary, self.segments
        return [ChunkSummary(ref, int(s.n[i]), int(s.step_min[i]), int(s.step_max[i]),
                             none_if_nan(s.v_min[i]), none_if_nan(s.v_max[i]),
                             float(s.v_last[i]), float(s.w_last[i]),
                             tuple(Unit(int(g.step_min[j]), int(g.step_max[j]), int(g.n[j]),
                                        none_if_nan(g.v_min[j]), none_if_nan(g.v_max[j]),
                                        float(g.v_last[j]), float(g.w_last[j]))
                                   for j in range(starts[i], starts[i + 1])))
                for i, ref in enumerate(self.refs)]

    def units(self, chunks: npt.NDArray[np.bool_]) -> Units:
        """The units of the chosen chunks, in chunk order: their segments, or themselves."""
        whole = chunks & (self.seg_n == 0)
        segmented = np.repeat(chunks & (self.seg_n > 0), self.seg_n)
        if not segmented.any():
            return self.summary.take(whole)
        if not whole.any():
            return self.segments.take(segmented)
        # interleave in chunk order: each unit sorted by its chunk's position
        owner = np.concatenate((np.flatnonzero(whole),
                                np.repeat(np.arange(len(self.refs)), self.seg_n)[segmented]))
        both = concat_units([self.summary.take(whole), self.segments.take(segmented)])
        return both.take(np.argsort(owner, kind="stable"))


def none_if_nan(value: np.float64) -> float | None:
    return None if math.isnan(value) else float(value)


def concat_units(parts: Sequence[Units]) -> Units:
    return Units(*(np.concatenate([getattr(p, f) for p in parts]) for f in Units.__slots__))


def overlapping(chunks: Chunks, lo: int, hi: int) -> npt.NDArray[np.bool_]:
    return (chunks.summary.step_max >= lo) & (chunks.summary.step_min <= hi)


def chunks_to_unpack(chunks: Chunks, lo: int, hi: int, max_points: int,
                     unpack_budget: int) -> list[int]:
    """``downsample.chunks_to_unpack`` by position in ``chunks``: edges, then inner ones."""
    s = chunks.summary
    inside = overlapping(chunks, lo, hi)
    inner = inside & (s.step_min >= lo) & (s.step_max <= hi)
    edges = np.flatnonzero(inside & ~inner).tolist()
    points = int(s.n[inner].sum())
    units = int(np.maximum(chunks.seg_n[inner], 1).sum())
    if points <= max_points or (units < max_points // 4 and points <= unpack_budget):
        return edges + np.flatnonzero(inner).tolist()
    return edges


@dataclass(frozen=True, slots=True)
class Points:
    steps: Ints
    walls: Floats
    values: Floats


@dataclass(frozen=True, slots=True)
class Buckets:
    step_lo: Ints
    step_hi: Ints
    count: Ints
    min: Floats  # NaN: no finite value in the bucket
    max: Floats
    last: Floats
    wall: Floats


@dataclass(frozen=True, slots=True)
class ColumnAnswer:
    """``downsample.Answer`` as columns: ``points`` when not reduced, else ``buckets``."""

    reduced: bool
    points_in_range: int
    points: Points
    buckets: Buckets

    @property
    def points_returned(self) -> int:
        return len(self.buckets.count) if self.reduced else len(self.points.steps)

    @classmethod
    def of(cls, answer: Answer) -> ColumnAnswer:
        p, b = answer.points, answer.buckets
        return cls(answer.reduced, answer.points_in_range,
                   Points(ints([x[0] for x in p]), floats([x[1] for x in p]),
                          floats([x[2] for x in p])),
                   Buckets(ints([x.step_lo for x in b]), ints([x.step_hi for x in b]),
                           ints([x.count for x in b]), floats([x.min for x in b]),
                           floats([x.max for x in b]), floats([x.last for x in b]),
                           floats([x.wall for x in b])))


NO_POINTS = Points(ints([]), floats([]), floats([]))
NO_BUCKETS = Buckets(ints([]), ints([]), ints([]), floats([]), floats([]), floats([]),
                     floats([]))


def points_of(arrays: Sequence[Arrays | Points], lo: int, hi: int) -> Points:
    """The points of unpacked chunks (in the order given) whose steps are in [lo, hi]."""
    if not arrays:
        return NO_POINTS
    steps = np.concatenate([ints(a[0]) if isinstance(a, tuple) else a.steps for a in arrays])
    walls = np.concatenate([floats(a[1]) if isinstance(a, tuple) else a.walls for a in arrays])
    values = np.concatenate([floats(a[2]) if isinstance(a, tuple) else a.values
                             for a in arrays])
    keep = (steps >= lo) & (steps <= hi)
    if keep.all():
        return Points(steps, walls, values)
    return Points(steps[keep], walls[keep], values[keep])


def answer(chunks: Chunks, unpacked: Mapping[int, Arrays | Points], lo: int, hi: int,
           max_points: int) -> ColumnAnswer:
    """``downsample.answer`` over columns; ``unpacked`` by position in ``chunks``."""
    inside = overlapping(chunks, lo, hi)
    opened = np.zeros(len(chunks.refs), dtype=np.bool_)
    opened[list(unpacked)] = True
    points = points_of([unpacked[i] for i in sorted(unpacked) if inside[i]], lo, hi)
    units = chunks.units(inside & ~opened)
    in_range = len(points.steps) + int(units.n.sum())
    if in_range <= max_points and not len(units.n):
        order = np.argsort(points.steps, kind="stable")
        return ColumnAnswer(False, in_range, Points(points.steps[order], points.walls[order],
                                                    points.values[order]), NO_BUCKETS)
    finite = np.where(np.isfinite(points.values), points.values, np.nan)
    items = concat_units([Units(points.steps, points.steps, np.ones_like(points.steps),
                                finite, finite, points.values, points.walls), units])
    return ColumnAnswer(True, in_range, NO_POINTS,
                        reduce(items, len(points.steps), lo, hi, max_points))


def reduce(items: Units, n_points: int, lo: int, hi: int, max_points: int) -> Buckets:
    """Buckets of ``items`` (points first: they never widen a bucket, units do), each item
    in the bucket of its first step; a bucket's last value is its item with the highest
    last step, the latest given among equals (as ``downsample._Acc.add``)."""
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    first, top = int(items.step_min.min()), int(items.step_min.max())
    widest = max(lo + (max_points - 1) * width + width - 1, int(items.step_max.max()))
    if not (first - lo >= I64_MIN and top - lo <= I64_MAX and width <= I64_MAX
            and lo + ((first - lo) // width) * width >= I64_MIN and widest <= I64_MAX):
        raise Unrepresentable(f"steps {first}..{top} in buckets of {width} from {lo}")
    index = np.minimum((items.step_min - lo) // width, max_points - 1)
    order = np.lexsort((np.arange(len(index)), items.step_max, index))
    ranked = index[order]
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
    winners = order[np.concatenate((starts[1:], [len(order)])) - 1]
    step_lo = lo + ranked[starts] * width
    nominal_hi = np.minimum(step_lo + (width - 1), hi)
    widened = items.step_max.copy()
    widened[:n_points] = I64_MIN  # a point's step is its bucket's already
    with np.errstate(invalid="ignore"):
        return Buckets(step_lo, np.maximum(nominal_hi, np.maximum.reduceat(widened[order],
                                                                           starts)),
                       np.add.reduceat(items.n[order], starts),
                       np.fmin.reduceat(items.v_min[order], starts),
                       np.fmax.reduceat(items.v_max[order], starts),
                       items.v_last[winners], items.w_last[winners])
