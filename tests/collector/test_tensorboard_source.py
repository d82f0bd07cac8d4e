"""A TensorBoard log directory read into spool batches, across growth and restarts."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.util import tensor_util

from tests.support.truth import tensorboard_runs, write_add_scalars_logdir, write_restart_logdir
from tuneplane.collector.reader import SourceKind, SourceReader, SourceSpec
from tuneplane.collector.spool import Spool
from tuneplane.collector.tbevents import PurgeState
from tuneplane.collector.tensorboard import dump_state, load_state
from tuneplane.collector.tfrecord import HEADER, frame
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

OWNER = MemberKey("run", 1, "rank-0")


def scalar_event(step: int, value: float, *, first: bool, tag: str = "loss") -> bytes:
    v = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(value))
    if first:
        v.metadata.CopyFrom(scalar_metadata.create_summary_metadata("", ""))
    return frame(event_pb2.Event(step=step, wall_time=100.0 + step,
                                 summary=summary_pb2.Summary(value=[v])).SerializeToString())


def histo_event(step: int) -> bytes:
    histo = summary_pb2.HistogramProto(min=0, max=1, num=2, bucket_limit=[1], bucket=[2])
    return frame(event_pb2.Event(step=step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="w", histo=histo)])).SerializeToString())


def reader(spool_dir: Path, logdir: Path, max_points: int = 10_000) -> SourceReader:
    return SourceReader(Spool(spool_dir, OWNER),
                        [SourceSpec("tb", logdir, SourceKind.TENSORBOARD)],
                        max_points=max_points, max_bytes=1 << 20, spool_bytes=1 << 30,
                        clock=time.time)


def batches(spool_dir: Path) -> list[pb.Batch]:
    spool = Spool(spool_dir, OWNER)
    try:
        return [pb.Batch.FromString(b.payload) for b in spool.pending(limit=10_000)]
    finally:
        spool.close()


def scalars(spool_dir: Path) -> list[tuple[str, int, float]]:
    return [(c.tag, step, value) for b in batches(spool_dir) for c in b.chunks
            for step, value in zip(c.steps, c.values, strict=True)]


def test_every_file_below_the_logdir_is_read_with_rich_records_apart(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    (logdir / "group_a").mkdir(parents=True)
    (logdir / "events.out.tfevents.1.host").write_bytes(  # with a version: no purge markers
        frame(event_pb2.Event(file_version="brain.Event:2").SerializeToString()) +
        b"".join(scalar_event(s, s * 0.5, first=s == 0) for s in range(10)) + histo_event(3))
    (logdir / "group_a" / "events.out.tfevents.2.host").write_bytes(
        b"".join(scalar_event(s, -s, first=s == 0, tag="a") for s in range(5)))
    (logdir / "notes.txt").write_text("not an event file")
    r = reader(tmp_path / "spool", logdir)
    assert r.run_once() is True
    assert sorted(scalars(tmp_path / "spool")) == sorted(
        [("loss", s, s * 0.5) for s in range(10)] + [("a", s, float(-s)) for s in range(5)])
    (rich,) = [r for b in batches(tmp_path / "spool") for r in b.rich]
    assert (rich.kind, rich.tag, rich.step, rich.file) == (
        pb.RichRecord.KIND_HISTOGRAM, "w", 3, "events.out.tfevents.1.host")
    spool = Spool(tmp_path / "spool", OWNER)
    for relative, path in (("events.out.tfevents.1.host", "events.out.tfevents.1.host"),
                           ("group_a/events.out.tfevents.2.host",
                            "group_a/events.out.tfevents.2.host")):
        saved = spool.position("tb", relative)
        assert saved is not None
        assert saved.offset == (logdir / path).stat().st_size
    assert r.counters.problems == 0


def test_plugin_metadata_of_a_tags_first_value_survives_a_restart(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1.host"
    path.write_bytes(scalar_event(0, 1.0, first=True))
    first = reader(tmp_path / "spool", logdir)
    first.run_once()
    first.close()  # the collector restarts; only the spool remembers the tag is a scalar
    with path.open("ab") as out:
        out.write(b"".join(scalar_event(s, float(s), first=False) for s in range(1, 5)))
    reader(tmp_path / "spool", logdir).run_once()
    assert scalars(tmp_path / "spool") == [("loss", s, float(s) if s else 1.0)
                                           for s in range(5)]
    assert not [r for b in batches(tmp_path / "spool") for r in b.rich]


def test_a_partial_last_record_waits_and_is_read_once_complete(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1.host"
    records = [scalar_event(s, float(s), first=s == 0) for s in range(3)]
    whole = b"".join(records)
    path.write_bytes(whole[:-5])
    r = reader(tmp_path / "spool", logdir)
    assert r.run_once() is True
    assert [s for _, s, _ in scalars(tmp_path / "spool")] == [0, 1]
    with path.open("ab") as out:
        out.write(whole[-5:])
    r.run_once()
    assert [s for _, s, _ in scalars(tmp_path / "spool")] == [0, 1, 2]
    assert r.counters.problems == 0


def test_a_damaged_record_is_reported_with_file_and_offset_and_the_rest_delivered(
        tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    records = [scalar_event(s, float(s), first=s == 0) for s in range(4)]
    data = bytearray(b"".join(records))
    bad_offset = len(records[0]) + len(records[1])
    data[bad_offset + HEADER + 2] ^= 0x40
    (logdir / "events.out.tfevents.1.host").write_bytes(bytes(data))
    r = reader(tmp_path / "spool", logdir)
    r.run_once()
    assert [s for _, s, _ in scalars(tmp_path / "spool")] == [0, 1, 3]
    assert r.problems == [f"events.out.tfevents.1.host@{bad_offset}: bad record data CRC; "
                          "record skipped"]


def test_batches_respect_the_point_bound_and_resume_where_they_stopped(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    (logdir / "events.out.tfevents.1.host").write_bytes(
        b"".join(scalar_event(s, float(s), first=s == 0) for s in range(25)))
    r = reader(tmp_path / "spool", logdir, max_points=10)
    while not r.run_once():
        pass
    assert [sum(len(c.steps) for c in b.chunks) for b in batches(tmp_path / "spool")] == \
        [10, 10, 5]
    assert [s for _, s, _ in scalars(tmp_path / "spool")] == list(range(25))


def test_each_tensorboard_run_and_tag_is_its_own_series_equal_to_tensorboards(
        tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_add_scalars_logdir(logdir)
    r = reader(tmp_path / "spool", logdir, max_points=128)
    while not r.run_once():
        pass
    ours: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for b in batches(tmp_path / "spool"):
        for chunk in b.chunks:
            ours.setdefault((chunk.run_path, chunk.tag), []).extend(
                zip(chunk.steps, chunk.wall_times, chunk.values, strict=True))
    truth = tensorboard_runs(logdir)
    assert sorted(truth) == [("", "lr_group"), ("eval/fold_1", "lr_group"),
                             ("lr_group/a", "lr_group"), ("lr_group/b", "lr_group")]
    assert ours == truth  # point for point, in file order
    assert r.counters.problems == 0


def test_a_run_path_that_is_not_a_name_skips_its_scalars_with_a_reason(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    (logdir / "bad\x01run").mkdir(parents=True)
    (logdir / "bad\x01run" / "events.out.tfevents.1.host").write_bytes(
        b"".join(scalar_event(s, s, first=s == 0) for s in range(4)))
    (logdir / "events.out.tfevents.1.host").write_bytes(scalar_event(0, 1.0, first=True))
    r = reader(tmp_path / "spool", logdir)
    assert r.run_once() is True
    assert [(c.run_path, c.tag, list(c.values)) for b in batches(tmp_path / "spool")
            for c in b.chunks] == [("", "loss", [1.0])]
    (problem,) = r.problems
    assert "bad\\x01run/events.out.tfevents.1.host: run path holds the control character" \
        in problem
    assert problem.endswith("4 scalar values skipped")


def test_a_start_opens_its_batch_and_a_runs_files_are_read_in_order(tmp_path: Path) -> None:
    """What applying TensorBoard's purge needs: batch order is TensorBoard's read order, and
    a restart marker precedes every point of its batch."""
    logdir = tmp_path / "logs"
    write_restart_logdir(logdir)
    read = reader(tmp_path / "spool", logdir, max_points=37)
    while not read.run_once():
        pass
    sealed = batches(tmp_path / "spool")
    runs: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for batch in sealed:
        assert len(batch.session_starts) <= 1
        for chunk in batch.chunks:
            runs.setdefault((chunk.run_path, chunk.tag), []).extend(
                zip(chunk.steps, chunk.wall_times, chunk.values, strict=True))
    assert runs == tensorboard_runs(logdir)  # per run, in file order
    opened = [b for b in sealed if b.session_starts]
    assert [m.step for b in opened for m in b.session_starts if "/" not in m.file] == [0, 100]
    assert [m.step for b in opened for m in b.session_starts if "/" in m.file] == [30, 10]
    for batch in opened:  # its points follow the marker: none older than its file's offset
        assert all(min(c.steps) >= batch.session_starts[0].step for c in batch.chunks)


def test_a_file_state_saved_before_purge_states_reads_on_under_the_start_rule() -> None:
    legacy = json.dumps({"loss": ["scalars", "", 1]})
    plugins, purge = load_state(legacy)
    assert plugins == {"loss": ("scalars", b"", 1)}
    assert purge == PurgeState(2.0)
    assert purge.restarts()
    # A file not begun takes its run's previous file's purge state; its tags are its own.
    saved = dump_state({"acc": ("scalars", b"x", 1)}, PurgeState(None, 41))
    assert load_state("", saved) == ({}, PurgeState(None, 41))
    assert load_state(saved) == ({"acc": ("scalars", b"x", 1)}, PurgeState(None, 41))
    assert load_state("", "") == ({}, PurgeState())


def test_an_out_of_order_simple_value_in_an_old_style_file_opens_a_batch_with_its_marker(
        tmp_path: Path) -> None:
    """Single ``simple_value`` events take the reader's fast path; an out-of-order step in
    a file before version 2 still becomes the purge marker of its tags, opening its batch."""
    def simple(step: int, tag: str = "loss") -> bytes:
        value = summary_pb2.Summary.Value(tag=tag, simple_value=step)
        return frame(event_pb2.Event(step=step, wall_time=100.0 + step,
                                     summary=summary_pb2.Summary(value=[value]),
                                     ).SerializeToString())

    logdir = tmp_path / "logs"
    logdir.mkdir()
    steps = [*range(10), 4, 5, 6]
    (logdir / "events.out.tfevents.1.host").write_bytes(
        frame(event_pb2.Event(file_version="brain.Event:1").SerializeToString()) +
        b"".join(simple(s) for s in steps))
    r = reader(tmp_path / "spool", logdir)
    while not r.run_once():
        pass
    sealed = batches(tmp_path / "spool")
    assert [[(m.step, list(m.tags)) for m in b.session_starts] for b in sealed] == \
        [[], [(4, ["loss"])]]
    assert [list(c.steps) for b in sealed for c in b.chunks] == [list(range(10)), [4, 5, 6]]
    assert scalars(tmp_path / "spool") == [("loss", s, float(s)) for s in steps]
