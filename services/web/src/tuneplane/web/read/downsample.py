"""Bounded answers for a series over a step range, from chunk summaries where possible.

A query names a step range and ``max_points``. When the range holds no more points
than that, every point is returned (chunks unpacked). Otherwise the answer is reduced
to at most ``max_points`` buckets, each with the count, min, max (over finite values)
and last value of exactly the points it covers, and says so. A chunk wholly inside the
range is used through its summaries (its segments, or the whole chunk), and
unpacked only when summaries would give too coarse an answer and the points stay within
``unpack_budget``; chunks cut by the range's edges are always unpacked. Counts and
envelopes are exact, never sampled.

The API answers with ``columnar``, the same downsampler over numpy columns; this one, over
Python objects, is its reference (the property tests compare them) and answers what
``columnar`` cannot represent in int64.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

ChunkRef = tuple[str, int]                      # (batch_id, chunk_index)
Arrays = tuple[list[int], list[float], list[float]]  # steps, wall times, values
Point = tuple[int, float, float]                # step, wall time, value

METHOD = "min/max/last per bucket"


@dataclass(frozen=True, slots=True)
class Unit:
    """Points summarised together: a whole chunk or one of its segments."""

    step_min: int
    step_max: int
    n: int
    v_min: float | None
    v_max: float | None
    v_last: float
    w_last: float  # the wall time of v_last


@dataclass(frozen=True, slots=True)
class ChunkSummary:
    ref: ChunkRef
    n: int
    step_min: int
    step_max: int
    v_min: float | None
    v_max: float | None
    v_last: float
    w_last: float
    segments: tuple[Unit, ...] = ()

    def units(self) -> tuple[Unit, ...]:
        return self.segments or (Unit(self.step_min, self.step_max, self.n, self.v_min,
                                      self.v_max, self.v_last, self.w_last),)


@dataclass(frozen=True, slots=True)
class Bucket:
    step_lo: int
    step_hi: int
    count: int
    min: float | None
    max: float | None
    last: float
    wall: float  # the wall time of ``last``: where the bucket sits on a time axis


@dataclass(frozen=True, slots=True)
class Answer:
    reduced: bool
    points_in_range: int
    points: list[Point]
    buckets: list[Bucket]

    @property
    def points_returned(self) -> int:
        return len(self.buckets) if self.reduced else len(self.points)


def overlapping(summaries: list[ChunkSummary], lo: int, hi: int) -> list[ChunkSummary]:
    return [s for s in summaries if s.step_max >= lo and s.step_min <= hi]


def chunks_to_unpack(summaries: list[ChunkSummary], lo: int, hi: int, max_points: int,
                     unpack_budget: int) -> list[ChunkRef]:
    """The chunks whose points the answer needs; the caller fetches only these."""
    inside = overlapping(summaries, lo, hi)
    edges = [s.ref for s in inside if s.step_min < lo or s.step_max > hi]
    inner = [s for s in inside if lo <= s.step_min and s.step_max <= hi]
    points = sum(s.n for s in inner)
    coarse = sum(len(s.units()) for s in inner) < max_points // 4
    if points <= max_points or (coarse and points <= unpack_budget):
        return edges + [s.ref for s in inner]
    return edges


@dataclass(slots=True)
class _Acc:
    step_lo: int
    step_hi: int
    count: int = 0
    low: float = math.inf
    high: float = -math.inf
    last_step: int = -(2**63)
    last: float = math.nan
    wall: float = math.nan

    def add(self, count: int, low: float | None, high: float | None, last_step: int,
            last: float, wall: float) -> None:
        self.count += count
        if low is not None:
            self.low = min(self.low, low)
        if high is not None:
            self.high = max(self.high, high)
        if last_step >= self.last_step:
            self.last_step, self.last, self.wall = last_step, last, wall

    def bucket(self) -> Bucket:
        finite = self.low <= self.high
        return Bucket(self.step_lo, self.step_hi, self.count, self.low if finite else None,
                      self.high if finite else None, self.last, self.wall)


def answer(summaries: list[ChunkSummary], unpacked: Mapping[ChunkRef, Arrays], lo: int,
           hi: int, max_points: int) -> Answer:
    """Combine summaries and the unpacked chunks into the bounded answer for [lo, hi]."""
    points: list[Point] = []
    units: list[Unit] = []
    for summary in overlapping(summaries, lo, hi):
        arrays = unpacked.get(summary.ref)
        if arrays is None:
            units.extend(summary.units())
            continue
        points.extend((s, w, v) for s, w, v in zip(*arrays, strict=True) if lo <= s <= hi)
    in_range = len(points) + sum(u.n for u in units)
    if in_range <= max_points and not units:
        points.sort(key=lambda p: p[0])
        return Answer(False, in_range, points, [])
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    accs: dict[int, _Acc] = {}

    def acc_for(step: int) -> _Acc:
        index = min((step - lo) // width, max_points - 1)
        found = accs.get(index)
        if found is None:
            start = lo + index * width
            found = accs[index] = _Acc(start, min(hi, start + width - 1))
        return found

    for step, wall, value in points:
        finite = value if math.isfinite(value) else None
        acc_for(step).add(1, finite, finite, step, value, wall)
    for unit in units:  # a summary lands in the bucket of its first step, and widens it
        acc = acc_for(unit.step_min)
        acc.step_hi = max(acc.step_hi, unit.step_max)
        acc.add(unit.n, unit.v_min, unit.v_max, unit.step_max, unit.v_last, unit.w_last)
    return Answer(True, in_range, [], [accs[i].bucket() for i in sorted(accs)])
