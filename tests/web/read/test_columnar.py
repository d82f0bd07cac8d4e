"""The columnar downsampler against ``downsample``'s, over the same summaries and points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.tier import examples
from tests.web.read.test_downsample import series
from tuneplane.web.read import columnar, downsample
from tuneplane.web.read.columnar import Chunks, ColumnAnswer, Unrepresentable
from tuneplane.web.read.downsample import Arrays, ChunkRef, ChunkSummary


def same(a: float | None, b: float) -> bool:
    if a is None:
        return math.isnan(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def assert_same(reference: downsample.Answer, found: ColumnAnswer) -> None:
    assert (found.reduced, found.points_in_range, found.points_returned) == (
        reference.reduced, reference.points_in_range, reference.points_returned)
    p = found.points
    assert p.steps.tolist() == [s for s, _, _ in reference.points]
    assert p.walls.tolist() == [w for _, w, _ in reference.points]
    assert all(same(v, f) for (_, _, v), f in zip(reference.points, p.values, strict=True))
    b = found.buckets
    assert list(zip(b.step_lo.tolist(), b.step_hi.tolist(), b.count.tolist(), strict=True)) == [
        (x.step_lo, x.step_hi, x.count) for x in reference.buckets]
    for x, low, high, last, wall in zip(reference.buckets, b.min, b.max, b.last, b.wall,
                                        strict=True):
        assert same(x.min, low)
        assert same(x.max, high)
        assert same(x.last, last)
        assert x.wall == wall


@settings(max_examples=examples(400))
@given(series(), st.integers(-100, 400), st.integers(0, 500), st.integers(2, 50),
       st.integers(0, 200), st.booleans())
def test_columns_answer_as_the_reference_does(
        data: tuple[list[ChunkSummary], dict[ChunkRef, Arrays]], lo: int, span: int,
        max_points: int, budget: int, as_arrays: bool) -> None:
    summaries, arrays = data
    hi = lo + span
    chunks = Chunks.of(summaries)
    needed = downsample.chunks_to_unpack(summaries, lo, hi, max_points, budget)
    positions = columnar.chunks_to_unpack(chunks, lo, hi, max_points, budget)
    assert [chunks.refs[i] for i in positions] == needed
    reference = downsample.answer(summaries, {r: arrays[r] for r in needed}, lo, hi,
                                  max_points)
    unpacked = {i: columnar.points_of([arrays[chunks.refs[i]]], -(2**63), 2**63 - 1)
                if as_arrays else arrays[chunks.refs[i]] for i in positions}
    assert_same(reference, columnar.answer(chunks, unpacked, lo, hi, max_points))


@settings(max_examples=examples(200))
@given(series(), st.integers(-100, 400), st.integers(0, 500), st.integers(2, 50))
def test_summaries_alone_answer_as_the_reference_does(
        data: tuple[list[ChunkSummary], dict[ChunkRef, Arrays]], lo: int, span: int,
        max_points: int) -> None:
    """Chunks cut by the range's edges answered from their summaries too (what a spent
    unpack budget leaves): buckets before ``lo`` and widened past ``hi`` alike."""
    summaries, _ = data
    assert_same(downsample.answer(summaries, {}, lo, lo + span, max_points),
                columnar.answer(Chunks.of(summaries), {}, lo, lo + span, max_points))


def test_chunks_round_trip_through_columns() -> None:
    unit = downsample.Unit(3, 4, 2, None, None, math.nan, 1.5)
    summaries = [ChunkSummary(("a", 0), 2, 1, 2, 1.0, 2.0, 2.0, 0.5),
                 ChunkSummary(("b", 1), 4, 3, 6, None, None, math.inf, 2.5,
                              (unit, downsample.Unit(5, 6, 2, 1.0, 1.0, 1.0, 2.5)))]
    back = Chunks.of(summaries).summaries()
    assert [(s.ref, s.n, s.step_min, s.step_max, s.v_min, s.v_last) for s in back] == [
        (s.ref, s.n, s.step_min, s.step_max, s.v_min, s.v_last) for s in summaries]
    assert back[1].segments[0].v_min is None
    assert math.isnan(back[1].segments[0].v_last)


def test_steps_near_the_int64_ends_are_left_to_the_reference() -> None:
    top = 2**63 - 1
    summaries = [ChunkSummary(("a", 0), 3, top - 2, top, 1.0, 3.0, 3.0, 0.5)]
    arrays = {0: ([top - 2, top - 1, top], [0.1, 0.2, 0.3], [1.0, 2.0, 3.0])}
    with pytest.raises(Unrepresentable):
        columnar.answer(Chunks.of(summaries), arrays, -(2**63), top, 2)
    exact = columnar.answer(Chunks.of(summaries), arrays, top - 2, top, 5)
    assert exact.points.steps.tolist() == [top - 2, top - 1, top]
    reduced = columnar.answer(Chunks.of(summaries), arrays, top - 5, top, 2)
    assert reduced.buckets.count.tolist() == [3]
    assert reduced.buckets.step_hi[-1] == top


def test_a_big_series_answers_from_its_segments_in_step_order() -> None:
    steps = np.arange(10_000)
    summaries = []
    for c in range(10):
        units = tuple(downsample.Unit(int(a), int(a) + 99, 100, float(a), float(a) + 99,
                                      float(a) + 99, 0.0)
                      for a in steps[c * 1000:(c + 1) * 1000:100])
        summaries.append(ChunkSummary(("b", c), 1000, c * 1000, c * 1000 + 999,
                                      float(c * 1000), float(c * 1000 + 999),
                                      float(c * 1000 + 999), 0.0, units))
    reference = downsample.answer(summaries, {}, 0, 9999, 50)
    assert_same(reference, columnar.answer(Chunks.of(summaries), {}, 0, 9999, 50))
