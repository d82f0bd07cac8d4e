"""The downsampler against brute force over the same points."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.tier import examples
from tuneplane.web.read.downsample import (
    Arrays,
    ChunkRef,
    ChunkSummary,
    Unit,
    answer,
    chunks_to_unpack,
)

values = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf, -math.inf]))


@st.composite
def series(draw: st.DrawFn) -> tuple[list[ChunkSummary], dict[ChunkRef, Arrays]]:
    summaries, arrays, step = [], {}, draw(st.integers(-50, 50))
    for index in range(draw(st.integers(1, 12))):
        n = draw(st.integers(1, 40))
        steps = list(range(step, step + n * 3, 3))
        step = steps[-1] + draw(st.integers(1, 20))
        vals = [draw(values) for _ in steps]
        finite = [v for v in vals if math.isfinite(v)]
        ref = ("b", index)
        arrays[ref] = (steps, [wall_of(s) for s in steps], vals)
        pieces = draw(st.sampled_from([0, 1, 4]))  # as the projector writes: 0 = none
        units = tuple(unit(steps[a:b], vals[a:b]) for a, b in
                      zip([n * i // pieces for i in range(pieces)],
                          [n * (i + 1) // pieces for i in range(pieces)], strict=True)
                      if b > a) if pieces else ()
        summaries.append(ChunkSummary(ref, n, steps[0], steps[-1], min(finite, default=None),
                                      max(finite, default=None), vals[-1],
                                      wall_of(steps[-1]), units))
    return summaries, arrays


def wall_of(step: int) -> float:
    """Wall times that name their step, so a bucket's wall time can be traced back."""
    return step * 10.0 + 0.5


def unit(steps: list[int], vals: list[float]) -> Unit:
    finite = [v for v in vals if math.isfinite(v)]
    return Unit(min(steps), max(steps), len(steps), min(finite, default=None),
                max(finite, default=None), vals[-1], wall_of(steps[-1]))


def brute(arrays: dict[ChunkRef, Arrays], lo: int, hi: int) -> list[tuple[int, float]]:
    return sorted((s, v) for steps, _, vals in arrays.values()
                  for s, v in zip(steps, vals, strict=True) if lo <= s <= hi)


def comparable(step: int, value: float) -> tuple[int, float | str]:
    return step, "nan" if math.isnan(value) else value


@settings(max_examples=examples(300))
@given(series(), st.integers(-100, 400), st.integers(0, 500), st.integers(2, 50),
       st.integers(0, 200))
def test_answers_are_bounded_and_exact(data: tuple[list[ChunkSummary], dict[ChunkRef, Arrays]],
                                       lo: int, span: int, max_points: int, budget: int) -> None:
    summaries, arrays = data
    hi = lo + span
    needed = chunks_to_unpack(summaries, lo, hi, max_points, budget)
    result = answer(summaries, {r: arrays[r] for r in needed}, lo, hi, max_points)
    truth = brute(arrays, lo, hi)
    assert result.points_in_range == len(truth)
    assert result.points_returned <= max_points
    if not result.reduced:
        assert [comparable(s, v) for s, _, v in result.points] == [
            comparable(s, v) for s, v in truth]
        return
    assert sum(b.count for b in result.buckets) == len(truth)
    finite = [v for _, v in truth if math.isfinite(v)]
    lows = [b.min for b in result.buckets if b.min is not None]
    highs = [b.max for b in result.buckets if b.max is not None]
    assert min(lows, default=None) == min(finite, default=None)
    assert max(highs, default=None) == max(finite, default=None)
    assert all(b.step_lo <= b.step_hi for b in result.buckets)
    values = dict(truth)  # each bucket's wall time is its last value's
    for b in result.buckets:
        step = round((b.wall - 0.5) / 10)
        assert b.step_lo <= step <= b.step_hi
        assert comparable(step, values[step]) == comparable(step, b.last)


def test_edge_chunks_are_unpacked_and_inner_ones_answered_from_summaries() -> None:
    summaries, arrays = [], {}
    for index in range(100):  # 100 chunks of 100 points: steps 0..9999
        steps = list(range(index * 100, index * 100 + 100))
        arrays[("b", index)] = (steps, [0.0] * 100, [float(s) for s in steps])
        summaries.append(ChunkSummary(("b", index), 100, steps[0], steps[-1], float(steps[0]),
                                      float(steps[-1]), float(steps[-1]), 0.0))
    needed = chunks_to_unpack(summaries, 150, 9849, max_points=50, unpack_budget=1000)
    assert needed == [("b", 1), ("b", 98)]
    result = answer(summaries, {r: arrays[r] for r in needed}, 150, 9849, 50)
    assert result.reduced
    assert result.points_in_range == 9700
    assert len(result.buckets) <= 50
    assert (result.buckets[0].min, result.buckets[-1].max) == (150.0, 9849.0)
    assert result.buckets[-1].last == 9849.0


def test_a_small_range_returns_every_point_in_step_order() -> None:
    ref = ("b", 0)
    summaries = [ChunkSummary(ref, 3, 1, 3, 1.0, 3.0, 3.0, 0.3)]
    result = answer(summaries, {ref: ([1, 2, 3], [0.1, 0.2, 0.3], [1.0, math.nan, 3.0])}, 2, 3,
                    10)
    assert not result.reduced
    assert [(s, w) for s, w, _ in result.points] == [(2, 0.2), (3, 0.3)]
    assert math.isnan(result.points[0][2])
