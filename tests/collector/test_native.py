"""The compiled reader holds to the Python path (``tfrecord.scan``, ``simple_scalar``,
``decode``) bit for bit: framing, damage and resynchronisation, truncated tails, the points
it reads and the batches a read fills, bounds and purges included."""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.util import tensor_util

from tuneplane.collector import native, tensorboard, tfrecord
from tuneplane.collector.draft import Position, ReadStep
from tuneplane.collector.tbevents import simple_scalar

frames = native.compiled()
pytestmark = pytest.mark.skipif(frames is None, reason="the compiled reader is not built")

TAGS = ["loss", "train/acc", "lr", "", "bad\x00tag", "é" * 40, "x" * 200]
Summary, Value = summary_pb2.Summary, summary_pb2.Summary.Value


def event(step: int, wall_time: float, summary: Any = None, **fields: Any) -> bytes:
    data: bytes = event_pb2.Event(step=step, wall_time=wall_time, summary=summary,
                                  **fields).SerializeToString()
    return data


def simple(tag: str, step: int, wall_time: float, number: float) -> bytes:
    return event(step, wall_time, Summary(value=[Value(tag=tag, simple_value=number)]))


steps = st.one_of(st.integers(-3, 40), st.integers(-(2**63), 2**63 - 1))
simples = st.builds(simple, st.sampled_from(TAGS), steps, st.floats(width=64),
                    st.floats(width=32))
others = st.one_of(
    st.builds(lambda v: event(0, 1.0, file_version=f"brain.Event:{v}"), st.sampled_from([1, 2])),
    st.builds(lambda s: event(s, 2.0, session_log=event_pb2.SessionLog(
        status=event_pb2.SessionLog.START)), steps),
    st.builds(lambda tag, s, n: event(s, 3.0, Summary(value=[Value(
        tag=tag, tensor=tensor_util.make_tensor_proto(n))])), st.sampled_from(TAGS), steps,
        st.floats(width=32)),
    st.builds(lambda s: event(s, 4.0, Summary(value=[
        Value(tag="loss", simple_value=1.0), Value(tag="lr", simple_value=2.0)])), steps),
    st.builds(lambda s: event(s, 5.0, Summary(value=[Value(
        tag="w", histo=summary_pb2.HistogramProto(min=0, max=1, num=2, bucket_limit=[1],
                                                  bucket=[2]))])), steps),
    st.binary(max_size=40),
)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A simple event with bytes changed: the layouts next to the fast path's."""
    data = bytearray(draw(simples))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        match draw(st.sampled_from(["set", "insert", "delete"])):
            case "set" if at < len(data):
                data[at] = draw(st.integers(0, 255))
            case "insert":
                data.insert(at, draw(st.integers(0, 255)))
            case _ if at < len(data):
                del data[at]
    return bytes(data)


@st.composite
def training(draw: st.DrawFn) -> list[bytes]:
    """Records as a training job writes them: runs of points of a few tags, steps mostly
    going up, now and then another record, a restart or a damaged layout."""
    out, step = [], draw(st.integers(-2, 5))
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.integers(0, 19))
        if kind < 15:
            step += draw(st.sampled_from([0, 1, 1, 1, 2, -1]) if kind else st.integers(-9, 9))
            out.append(simple(draw(st.sampled_from(TAGS[:3] if kind > 1 else TAGS)), step,
                              draw(st.floats(width=64)), draw(st.floats(width=32))))
        else:
            out.append(draw(others if kind < 18 else mutated()))
    return out


records = st.one_of(training(), st.lists(st.one_of(simples, others, mutated()), max_size=30))


@st.composite
def event_files(draw: st.DrawFn) -> bytes:
    """Framed records, some bytes damaged, the tail perhaps cut."""
    data = bytearray(b"".join(tfrecord.frame(r) for r in draw(records)))
    for _ in range(draw(st.sampled_from([0, 0, 1, 3]))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data[:draw(st.integers(0, len(data)))] if draw(st.booleans()) else data)


def bits(numbers: list[float]) -> bytes:
    return struct.pack(f"<{len(numbers)}d", *numbers)


def seen(step: ReadStep) -> tuple[Any, ...]:
    """A read step as compared: every float bit for bit."""
    draft = step.draft
    return (draft.source, draft.run_path, draft.points, draft.approx_bytes,
            [(tag, s.steps, bits(s.wall_times), bits(s.values))
             for tag, s in draft.series.items()],
            [r.SerializeToString() for r in draft.rich],
            [m.SerializeToString() for m in draft.session_starts],
            step.position, step.problems, step.rejected, step.at_end)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(event_files(), st.integers(0, 400), st.one_of(st.none(), st.integers(1, 30)))
def test_framing_matches_tfrecord_scan(data: bytes, base: int, limit: int | None) -> None:
    assert frames is not None
    found = frames(data, base, limit, tensorboard.is_name)
    scan = tfrecord.scan(data, base, limit)
    assert (found.consumed, found.wanted, found.count) == (scan.consumed, scan.wanted, scan.count)
    assert [(found.offset(i), found.data(i)) for i in range(found.count)] == scan.records
    assert [tfrecord.Damage.bad_data(o) if n < 0 else tfrecord.Damage.lost_framing(o, n)
            for o, n in found.damage] == scan.damage


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(simples, mutated(), others), max_size=30))
def test_points_match_the_simple_value_fast_path(datas: list[bytes]) -> None:
    assert frames is not None
    found = frames(b"".join(map(tfrecord.frame, datas)), 0, None, tensorboard.is_name)
    names: dict[bytes, str] = {}
    expected = [simple_scalar(d, names) for d in datas]
    got: list[tuple[str, int, bytes, bytes] | None] = [None] * len(datas)
    for first, end, is_simple in found.segments():
        assert is_simple or end == first + 1
        for index in range(first + 1, end):  # a run's steps do not go down
            assert found.step(index) >= found.step(index - 1)
        if is_simple:
            at = {tag: [i for i in range(first, end) if (e := expected[i]) and e[0] == tag]
                  for tag, *_ in found.columns(first, end)}
            for tag, steps, walls, values in found.columns(first, end):
                for i, step, wall, value in zip(at[tag], steps, walls, values, strict=True):
                    got[i] = (tag, step, bits([wall]), bits([value]))
    assert got == [None if e is None else (e[0], e[1], bits([e[2]]), bits([e[3]]))
                   for e in expected]


RELATIVE = ["events.out.tfevents.1", "run/events.out.tfevents.1", "../events.out.tfevents.1"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(event_files(), st.sampled_from(RELATIVE), st.integers(1, 12), st.integers(60, 900),
       st.lists(st.integers(0, 4000), max_size=3))
def test_reads_fill_the_same_batches(tmp_path: Path, data: bytes, relative: str,
                                     max_points: int, max_bytes: int, cuts: list[int]) -> None:
    """A file read to its end, growing at ``cuts``, in batches of small bounds."""
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(b"")
    position = {True: Position(), False: Position()}
    for cut in [*sorted(cuts), len(data)]:
        path.write_bytes(data[:cut])
        for _ in range(len(data) + 2):
            steps = {way: tensorboard.read_file(path, relative, "tb", position[way],
                                                max_points=max_points, max_bytes=max_bytes,
                                                compiled=way) for way in (True, False)}
            assert seen(steps[True]) == seen(steps[False])
            position = {way: steps[way].position for way in steps}
            if steps[True].at_end:
                break


def test_without_the_extension_the_python_path_reads_and_says_so_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(b"".join(tfrecord.frame(simple("loss", s, 1.0, s / 2)) for s in range(5)))
    monkeypatch.setattr(native, "_found", None)
    monkeypatch.setattr(native, "_said", False)
    with caplog.at_level(logging.WARNING, "tuneplane.collector"):
        reads = [tensorboard.read_file(path, path.name, "tb", Position(), max_points=10,
                                       max_bytes=1 << 20) for _ in range(2)]
    assert [seen(r) for r in reads] == [seen(tensorboard.read_file(
        path, path.name, "tb", Position(), max_points=10, max_bytes=1 << 20, compiled=False))] * 2
    assert reads[0].draft.series["loss"].values == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert [r.message for r in caplog.records if "compiled" in r.message] == [
        caplog.records[0].message]
    assert "not installed" in caplog.records[0].message


def two_values(step: int) -> bytes:
    return event(step, 1.0, Summary(value=[Value(tag="loss", simple_value=1.0),
                                           Value(tag="lr", simple_value=2.0)]))


@pytest.mark.parametrize(("datas", "max_points"), [
    # the points bound falls inside a run of points of tags the batch holds
    ([two_values(0), *(simple(t, 1, 1.0, 0.5) for t in ["loss", "lr", "loss", "lr"])], 4),
    # the series bound of the contract: the tag after 2,000 others waits for the next batch
    ([*(simple(f"t{i}", i, 1.0, 0.5) for i in range(2_001)),
      *(simple("t7", 2_001 + i, 1.0, 0.5) for i in range(3))], 10_000),
])
def test_a_run_stops_where_reading_record_by_record_stops(
        tmp_path: Path, datas: list[bytes], max_points: int) -> None:
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(b"".join(map(tfrecord.frame, datas)))
    position = {True: Position(), False: Position()}
    while position[True].offset < path.stat().st_size:
        steps = {way: tensorboard.read_file(path, path.name, "tb", position[way],
                                            max_points=max_points, max_bytes=1 << 20,
                                            compiled=way) for way in (True, False)}
        assert seen(steps[True]) == seen(steps[False])
        position = {way: steps[way].position for way in steps}
        assert steps[True].draft.points <= max_points
