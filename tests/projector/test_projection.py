"""The pure projection: typed rows from a batch, the same every time."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tuneplane.projector.projection import PoisonBatch, RecordMeta, project
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

IDENTITY = pb.BatchIdentity(run_id="r", attempt=1, member="m", spool_epoch="e", sequence=7)
KEY = BatchKey(MemberKey("r", 1, "m"), "e", 7)


def payload(values: list[float]) -> bytes:
    n = len(values)
    return pb.Batch(identity=IDENTITY, sealed_at=3.5, chunks=[
        pb.SeriesChunk(source="s", tag="loss", steps=list(range(10, 10 + n)),
                       wall_times=[1.0] * n, values=values)]).SerializeToString()


def test_rows_carry_points_and_their_summary() -> None:
    projection = project(payload([3.0, math.nan, -1.0, math.inf]),
                         RecordMeta(2, 40, KEY.kafka_key()))
    assert projection.key == KEY
    assert projection.points == 4
    (row,) = projection.chunks
    assert (row.step_min, row.step_max, row.v_min, row.v_max, row.v_first) == (10, 13, -1.0,
                                                                               3.0, 3.0)
    assert row.v_last == math.inf
    assert math.isnan(row.values[1])


def plain(value: object) -> object:
    """A projection as tuples, its arrays as their bytes (so NaN equals NaN, bit for bit)."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.tobytes())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    return value


def test_projecting_the_same_record_twice_gives_equal_output() -> None:
    meta = RecordMeta(0, 1, KEY.kafka_key())
    values = [float(i % 7) for i in range(1000)]
    values[3] = math.nan
    first, again = project(payload(values), meta), project(payload(values), meta)
    assert first.chunks[0].segments is not None
    assert plain(first) == plain(again)


def test_all_non_finite_chunk_has_no_min_max() -> None:
    (row,) = project(payload([math.nan]), RecordMeta(0, 0, None)).chunks
    assert row.v_min is None
    assert row.v_max is None


@pytest.mark.parametrize(("data", "key", "reason"), [
    (b"\xff\xff", None, "batch at 0/5: undecodable batch"),
    (pb.Batch().SerializeToString(), None, "has no identity"),
    (payload([1.0]), b"other-key", "does not match batch identity"),
])
def test_poison_records_say_why(data: bytes, key: bytes | None, reason: str) -> None:
    with pytest.raises(PoisonBatch, match=reason):
        project(data, RecordMeta(0, 5, key))


def test_unequal_columns_are_poison() -> None:
    batch = pb.Batch.FromString(payload([1.0, 2.0]))
    del batch.chunks[0].wall_times[0]
    with pytest.raises(PoisonBatch, match="unequal length"):
        project(batch.SerializeToString(), RecordMeta(0, 0, None))


def test_big_chunks_carry_a_segment_summary_a_128_points_that_add_up() -> None:
    values = [float(i % 97) for i in range(1000)]
    values[500] = math.nan
    data = pb.Batch(identity=IDENTITY, chunks=[pb.SeriesChunk(
        source="s", tag="t", steps=list(range(1000)), wall_times=[0.0] * 1000,
        values=values)]).SerializeToString()
    (row,) = project(data, RecordMeta(0, 0, None)).chunks
    segments = row.segments
    assert segments is not None
    assert segments.counts.tolist() == [142, 143, 143, 143, 143, 143, 143]  # 1,000 // 128

    assert segments.first_steps[0] == 0
    assert segments.last_steps[-1] == 999
    assert min(m for m in segments.mins if m is not None) == row.v_min == 0.0
    assert max(m for m in segments.maxs if m is not None) == row.v_max == 96.0
    assert segments.lasts[-1] == values[-1]
    small = project(payload([1.0, 2.0]), RecordMeta(0, 0, None)).chunks[0]
    assert small.segments is None
    big = project(payload([0.5] * 10_000), RecordMeta(0, 0, None)).chunks[0].segments
    assert big is not None
    assert len(big.counts) == 64  # at most
