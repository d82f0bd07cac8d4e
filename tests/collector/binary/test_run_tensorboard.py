"""``run`` reading a TensorBoard log directory into its spool: every event file below it,
rich records apart from scalars; a tag's plugin metadata (on its first value only) held
across a restart; a partial last record waited for; a damaged one said with its file and
offset; batches within their point bound, and a step of more tags than a batch may hold
series sealed over several batches that ingest's validation takes; each TensorBoard run and
tag its own series, as TensorBoard's own loader reads it; a run path that is not a name
refused with its reason."""

from __future__ import annotations

from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.util import tensor_util

from tests.collector.binary.collected import collect, spooled_points, spooled_series
from tests.support.collector_binary import spooled
from tests.support.truth import frame, tensorboard_runs, write_add_scalars_logdir
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import MAX_BATCH_SERIES
from tuneplane.telemetry.v1.validation import validate

HEADER = 12  # a record's length and its CRC


def scalar_event(step: int, value: float, *, first: bool, tag: str = "loss") -> bytes:
    """A TF2-style scalar: a rank-0 tensor, the plugin metadata on the tag's first value."""
    v = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(value))
    if first:
        v.metadata.CopyFrom(scalar_metadata.create_summary_metadata("", ""))
    return frame(event_pb2.Event(step=step, wall_time=100.0 + step,
                                 summary=summary_pb2.Summary(value=[v])).SerializeToString())


def histo_event(step: int) -> bytes:
    histo = summary_pb2.HistogramProto(min=0, max=1, num=2, bucket_limit=[1], bucket=[2])
    return frame(event_pb2.Event(step=step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="w", histo=histo)])).SerializeToString())


def test_every_event_file_below_the_logdir_is_read_with_rich_records_apart(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    (logdir / "group_a").mkdir(parents=True)
    root = logdir / "events.out.tfevents.1.host"
    root.write_bytes(frame(event_pb2.Event(file_version="brain.Event:2").SerializeToString())
                     + b"".join(scalar_event(s, s * 0.5, first=s == 0) for s in range(10))
                     + histo_event(3))
    nested = logdir / "group_a" / "events.out.tfevents.2.host"
    nested.write_bytes(b"".join(scalar_event(s, -s, first=s == 0, tag="a") for s in range(5)))
    (logdir / "notes.txt").write_text("not an event file")
    done = collect(tmp_path, tls_dir, {
        ("tb", "events.out.tfevents.1.host"): root.stat().st_size,
        ("tb", "group_a/events.out.tfevents.2.host"): nested.stat().st_size},
        "--tensorboard", f"tb={logdir}")
    assert sorted(spooled_points(tmp_path / "spool")) == sorted(
        [("loss", s, s * 0.5) for s in range(10)] + [("a", s, float(-s)) for s in range(5)])
    (rich,) = [r for b in spooled(tmp_path / "spool") for r in b.rich]
    assert (rich.kind, rich.tag, rich.step, rich.file) == (
        pb.RichRecord.KIND_HISTOGRAM, "w", 3, "events.out.tfevents.1.host")
    assert "notes.txt" not in done.stderr
    assert "15 points and 1 rich records read" in done.stderr, done.stderr


def test_a_tags_plugin_metadata_on_its_first_value_holds_after_a_restart(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1.host"
    path.write_bytes(scalar_event(0, 1.0, first=True))
    key = ("tb", path.name)
    collect(tmp_path, tls_dir, {key: path.stat().st_size}, "--tensorboard", f"tb={logdir}")
    with path.open("ab") as out:  # the collector restarts; only its spool knows the tag
        out.write(b"".join(scalar_event(s, float(s), first=False) for s in range(1, 5)))
    collect(tmp_path, tls_dir, {key: path.stat().st_size}, "--tensorboard", f"tb={logdir}")
    assert spooled_points(tmp_path / "spool") == [
        ("loss", s, float(s) if s else 1.0) for s in range(5)]
    assert not [r for b in spooled(tmp_path / "spool") for r in b.rich]


def test_a_partial_last_record_waits_and_is_read_once_complete(tmp_path: Path,
                                                               tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1.host"
    records = [scalar_event(s, float(s), first=s == 0) for s in range(3)]
    whole = b"".join(records)
    path.write_bytes(whole[:-5])
    key = ("tb", path.name)
    waiting = collect(tmp_path, tls_dir, {key: len(records[0]) + len(records[1])},
                      "--tensorboard", f"tb={logdir}")
    assert [s for _, s, _ in spooled_points(tmp_path / "spool")] == [0, 1]
    with path.open("ab") as out:
        out.write(whole[-5:])
    done = collect(tmp_path, tls_dir, {key: len(whole)}, "--tensorboard", f"tb={logdir}")
    assert [s for _, s, _ in spooled_points(tmp_path / "spool")] == [0, 1, 2]
    assert path.name + "@" not in waiting.stderr + done.stderr  # no damage said


def test_a_damaged_record_is_said_with_file_and_offset_and_the_rest_delivered(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    records = [scalar_event(s, float(s), first=s == 0) for s in range(4)]
    data = bytearray(b"".join(records))
    bad_offset = len(records[0]) + len(records[1])
    data[bad_offset + HEADER + 2] ^= 0x40
    path = logdir / "events.out.tfevents.1.host"
    path.write_bytes(bytes(data))
    done = collect(tmp_path, tls_dir, {("tb", path.name): len(data)},
                   "--tensorboard", f"tb={logdir}")
    assert [s for _, s, _ in spooled_points(tmp_path / "spool")] == [0, 1, 3]
    assert f"{path.name}@{bad_offset}: bad record data CRC; record skipped" in done.stderr


def test_batches_hold_to_the_point_bound_and_go_on_where_they_stopped(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(scalar_event(s, float(s), first=s == 0) for s in range(25)))
    collect(tmp_path, tls_dir, {("tb", path.name): path.stat().st_size},
            "--tensorboard", f"tb={logdir}", "--max-batch-points", "10")
    assert [sum(len(c.steps) for c in b.chunks) for b in spooled(tmp_path / "spool")] == \
        [10, 10, 5]
    assert [s for _, s, _ in spooled_points(tmp_path / "spool")] == list(range(25))


def test_each_run_and_tag_is_its_own_series_as_tensorboard_loads_it(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    write_add_scalars_logdir(logdir)
    files = sorted(logdir.rglob("*tfevents*"))
    done = collect(tmp_path, tls_dir, {
        ("tb", p.relative_to(logdir).as_posix()): p.stat().st_size for p in files},
        "--tensorboard", f"tb={logdir}", "--max-batch-points", "128")
    truth = tensorboard_runs(logdir)
    assert sorted(truth) == [("", "lr_group"), ("eval/fold_1", "lr_group"),
                             ("lr_group/a", "lr_group"), ("lr_group/b", "lr_group")]
    assert spooled_series(tmp_path / "spool") == truth  # point for point, in file order
    assert "@" not in done.stderr, done.stderr  # no record said damaged or refused


def test_a_run_path_that_is_not_a_name_skips_its_scalars_with_the_reason(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    (logdir / "bad\x01run").mkdir(parents=True)
    bad = logdir / "bad\x01run" / "events.out.tfevents.1.host"
    bad.write_bytes(b"".join(scalar_event(s, s, first=s == 0) for s in range(4)))
    good = logdir / "events.out.tfevents.1.host"
    good.write_bytes(scalar_event(0, 1.0, first=True))
    done = collect(tmp_path, tls_dir, {
        ("tb", good.name): good.stat().st_size,
        ("tb", "bad\x01run/events.out.tfevents.1.host"): bad.stat().st_size},
        "--tensorboard", f"tb={logdir}")
    assert [(c.run_path, c.tag, list(c.values)) for b in spooled(tmp_path / "spool")
            for c in b.chunks] == [("", "loss", [1.0])]
    assert "bad\\x01run/events.out.tfevents.1.host: run path holds the control character" \
        in done.stderr, done.stderr
    assert "4 scalar values skipped" in done.stderr


def tags_event(step: int, tags: list[str]) -> bytes:
    values = [summary_pb2.Summary.Value(tag=t, simple_value=float(step)) for t in tags]
    return frame(event_pb2.Event(step=step, wall_time=1.0 + step, summary=summary_pb2.Summary(
        value=values)).SerializeToString())


def test_many_tags_at_one_step_are_sealed_within_the_series_bound(tmp_path: Path,
                                                                  tls_dir: Path) -> None:
    tags = [f"layer{i}/grad_norm" for i in range(MAX_BATCH_SERIES + 700)]
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1"
    path.write_bytes(b"".join(tags_event(step, tags[i::50])
                              for step in range(3) for i in range(50)))
    collect(tmp_path, tls_dir, {("tb", path.name): path.stat().st_size},
            "--tensorboard", f"tb={logdir}", "--max-batch-points", "50000")
    sealed = spooled(tmp_path / "spool")
    assert len(sealed) >= 3  # the bound took effect: 2,700 series do not fit one batch
    points = 0
    for batch in sealed:
        assert len(batch.chunks) <= MAX_BATCH_SERIES
        points += validate(batch, batch.ByteSize())  # what ingest would accept
    assert points == 3 * len(tags)
    assert {(c.tag, s) for b in sealed for c in b.chunks for s in c.steps} == {
        (t, s) for t in tags for s in range(3)}
