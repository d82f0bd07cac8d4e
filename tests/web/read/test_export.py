"""Where an export page ends (``Gathered.cut``): before the first step past the bound among
the steps every chunk of has been read, wherever chunks begin; never inside a step; and
before the steps a restart wrote again rather than among them (``tangled``), so pages one
after another keep the read order."""

from __future__ import annotations

import numpy as np
import pytest

from tuneplane.common.chunks.blob import Points
from tuneplane.web.read.export import (
    DECODED,
    Cut,
    Gathered,
    NoStepToCut,
    groups,
    tangled,
    untangled,
)

FIRST, LAST = -(2**63), 2**63 - 1


def chunk(steps: list[int], value: float = 0.0) -> Points:
    return Points(np.array(steps, "i8"), np.full(len(steps), 1.7e9),
                  np.full(len(steps), value))


def gathered(*chunks: Points, lo: int = FIRST, hi: int = LAST) -> Gathered:
    found = Gathered(lo, hi, [])
    for at, points in enumerate(chunks):
        found.add(((0.0, "e", at), 0), points)
    return found


def test_steps_below_the_next_chunks_start_are_whole_and_cut_past_the_bound() -> None:
    # Ten restarts wrote steps 0..9 each: 10 points a step, overlapping chunks.
    restarts = gathered(*(chunk(list(range(10)), r) for r in range(10)))
    assert restarts.cut(None, 35) == Cut(3)  # steps 0..2: 30 points; step 3 would pass 35
    assert restarts.cut(None, 1000) == Cut(None)
    # A chunk not read yet starts at 2: only steps 0 and 1 are whole, and within the bound.
    assert restarts.cut(2, 1000) is None
    assert restarts.cut(2, 15) == Cut(1)
    page = restarts.page(3)
    assert page.steps.tolist() == [s for _ in range(10) for s in range(3)]  # read order
    assert page.values.tolist() == [float(r) for r in range(10) for _ in range(3)]


def test_the_range_bounds_what_is_kept_and_counted() -> None:
    found = gathered(chunk(list(range(100))), lo=40, hi=59)
    assert found.decoded == 100
    assert found.cut(None, 20) == Cut(None)
    assert found.page(None).steps.tolist() == list(range(40, 60))
    assert found.cut(None, 19) == Cut(59)


def test_more_points_at_one_step_than_a_page_holds_are_refused_naming_it() -> None:
    with pytest.raises(NoStepToCut, match="more than 5 points at step 7"):
        gathered(*(chunk([7, 8]) for _ in range(6))).cut(None, 5)


def test_past_the_decoding_bound_a_page_ends_where_the_next_chunk_starts() -> None:
    limit = 10
    many = gathered(*(chunk(list(range(100)), r) for r in range(DECODED)), chunk([0, 1]))
    assert many.decoded > DECODED * limit
    with pytest.raises(NoStepToCut, match=f"step 0 hold more than {DECODED * limit} points"):
        many.cut(0, limit)
    # Steps 0 and 1 are whole (the next chunk starts at 2), within the bound: one page.
    assert many.cut(2, limit) == Cut(2)


def test_chunks_are_fetched_a_quarter_page_at_a_time_and_every_one_once() -> None:
    rows = [{"n": n} for n in (10, 10, 30, 5, 5, 5, 5, 40, 1)]
    found = groups(rows, 80)
    assert [[r["n"] for r in g] for g in found] == [[10, 10], [30], [5, 5, 5, 5], [40], [1]]
    assert groups([], 80) == []


def test_a_page_ends_before_the_steps_a_restart_wrote_again() -> None:
    epochs = {"a": 1.0, "b": 2.0}
    rows = [  # by first step, as fetched; read order: a-1, a-2, b-1 (a restart at 150), b-2
        {"batch_id": "a-1", "chunk_index": 0, "step_min": 0, "step_max": 99},
        {"batch_id": "a-2", "chunk_index": 0, "step_min": 100, "step_max": 199},
        {"batch_id": "b-1", "chunk_index": 0, "step_min": 150, "step_max": 249},
        {"batch_id": "b-2", "chunk_index": 0, "step_min": 250, "step_max": 300},
    ]
    spans = tangled(rows, epochs, FIRST, LAST)
    assert spans == [(150, 199)]
    assert [untangled(rest, spans) for rest in (150, 151, 199, 200, 120)] == [
        150, 150, 150, 200, 120]
    assert tangled(rows, epochs, FIRST, 160) == [(150, 160)]  # within the range asked
    in_order = [{**r, "batch_id": f"a-{at}"} for at, r in enumerate(rows[:2])]
    assert tangled(in_order, epochs, FIRST, LAST) == []
