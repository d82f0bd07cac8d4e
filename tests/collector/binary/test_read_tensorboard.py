"""The static collector's ``read`` on TensorBoard log directories, for both targets (aarch64
under qemu), against TensorBoard itself: event files of real writers (tensorboardX, torch,
TensorBoard's own writer; ``add_scalars`` runs, restarts, old-style purges, images, audio)
give every scalar of each run and tag as TensorBoard's loader reads it, and their markers,
applied as TensorBoard purges, what its multiplexer serves; a hostile or damaged file gives
its good records and says each bad one with its offset."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.collector.binary.collected import purged, read, read_series
from tests.support import writers
from tests.support.collector_binary import TARGETS, run
from tests.support.media import write_media_logdir
from tests.support.truth import (
    frame,
    tensorboard_purged,
    tensorboard_runs,
    write_add_scalars_logdir,
    write_old_style_logdir,
    write_restart_logdir,
)
from tuneplane.tensorboard.v1 import event_pb2 as tb

Summary, Value = tb.Summary, tb.Summary.Value


def hostile_events(path: Path) -> None:
    """An event file of what a hostile or broken writer leaves: bad tags and plugin names,
    tensors that are not scalars, values with nothing to read, bytes that are not an Event,
    a record whose data CRC fails, lost framing, and a partial last record."""
    def event(step: int, *values: tb.Summary.Value) -> bytes:
        return tb.Event(step=step, wall_time=1.7e9 + step,
                        summary=Summary(value=list(values))).SerializeToString()
    scalars = tb.SummaryMetadata(plugin_data=tb.SummaryMetadata.PluginData(
        plugin_name="scalars"))
    vector = tb.TensorProto(dtype=tb.DT_FLOAT, float_val=[1.0, 2.0],
                            tensor_shape=tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=2)]))
    records_written = [
        tb.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString(),
        event(1, Value(tag="ok", simple_value=0.1)),
        event(2, Value(tag="", simple_value=1.0), Value(tag="a\x07b", simple_value=2.0)),
        event(3, Value(node_name="legacy", simple_value=3.0)),
        event(4, Value(tag="t", metadata=scalars, tensor=tb.TensorProto(
            dtype=tb.DT_DOUBLE, double_val=[4.5]))),
        event(5, Value(tag="vec", metadata=scalars, tensor=vector)),
        event(6, Value(tag="str", metadata=scalars, tensor=tb.TensorProto(
            dtype=tb.DT_STRING, string_val=[b"x"]))),
        event(7, Value(tag="half", metadata=scalars, tensor=tb.TensorProto(
            dtype=tb.DT_HALF, half_val=[0x3C00]))),
        event(8, Value(tag="empty")),
        event(9, Value(tag="p", metadata=tb.SummaryMetadata(
            plugin_data=tb.SummaryMetadata.PluginData(plugin_name="bad\nname")),
            simple_value=1.0)),
        b"\xff\xfe not an event",
        tb.Event(step=10, session_log=tb.SessionLog(status=tb.SessionLog.START))
        .SerializeToString(),
        event(11, Value(tag="ok", simple_value=float("nan")),
              Value(tag="inf", simple_value=float("inf"))),
    ]
    framed = [frame(r) for r in records_written]
    broken = bytearray(frame(event(12, Value(tag="ok", simple_value=12.0))))
    broken[-6] ^= 0xFF  # the data CRC fails
    after = frame(event(13, Value(tag="ok", simple_value=13.0)))
    path.write_bytes(b"".join(framed) + bytes(broken) + b"garbage!" + after
                     + frame(event(14, Value(tag="ok", simple_value=14.0)))[:20])


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    writers.tensorboardx_with_restarts(root / "tbx")
    writers.tensorboardx_resumed_once(root / "tbx_resumed")
    writers.tensorboard_writer_resumed(root / "tb_writer")
    writers.torch_with_restarts(root / "torch")
    write_add_scalars_logdir(root / "groups")
    write_restart_logdir(root / "restarts")
    write_old_style_logdir(root / "old")
    write_media_logdir(root / "media")
    return root


@pytest.mark.parametrize("target", TARGETS)
def test_read_gives_what_tensorboard_loads_and_serves(target: str, logdir: Path) -> None:
    records, problems = read(logdir, target)
    assert problems == []
    truth = tensorboard_runs(logdir)
    assert len(truth) >= 20  # every writer's runs, so the truth is not empty
    assert read_series(records) == truth  # every scalar, per run and tag, in file order
    served = {key: points for key, points in tensorboard_purged(logdir).items() if points}
    assert purged(records) == served
    assert purged(records) != truth  # restarts and steps back were marked, and purge
    kinds = {r["kind"] for r in records}
    assert kinds == {"scalar", "image", "audio", "histogram", "text", "session_start",
                     "out_of_order_step"}, kinds


def test_a_hostile_file_gives_its_good_records_and_says_each_bad_one(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.hostile"
    hostile_events(path)
    records, problems = read(path)
    scalars = [(r["tag"], r["step"], r["value"]) for r in records if r["kind"] == "scalar"]
    assert scalars == [("ok", 1, float(tb.Summary.Value(simple_value=0.1).simple_value)),
                       ("legacy", 3, 3.0),  # a value of no tag is its node's
                       ("t", 4, 4.5), ("half", 7, 1.0), ("ok", 11, "nan"), ("inf", 11, "inf"),
                       ("ok", 13, 13.0)]
    others = [(r["kind"], r.get("tag"), r["step"]) for r in records if r["kind"] != "scalar"]
    assert others == [("tensor", "vec", 5), ("tensor", "str", 6), ("session_start", None, 10)]
    said = "\n".join(problems)
    for expected in ("tag is empty; value skipped",
                     "tag holds the control character '\\x07' at 1: 'a\\x07b'; value skipped",
                     "tag 'vec' of the scalars plugin kept as a tensor: tensor is not rank 0",
                     "tag 'str' of the scalars plugin kept as a tensor: dtype DT_STRING is not "
                     "numeric",
                     "tag 'empty' has no readable value; skipped",
                     "tag 'p': plugin name holds the control character '\\n' at 3",
                     "not a TensorBoard Event",
                     "bad record data CRC; record skipped",
                     "bad record length CRC; skipped 8 bytes to resynchronise",
                     "incomplete last record (20 bytes); not read"):
        assert expected in said, (expected, problems)
    assert all(p.startswith(f"{path.name}@") for p in problems), problems


@pytest.mark.parametrize("target", TARGETS)
def test_one_event_file_and_a_log_directory_without_any(target: str, logdir: Path,
                                                        tmp_path: Path) -> None:
    one = next((logdir / "groups").glob("*tfevents*"))
    records, _ = read(one, target)
    assert read_series(records) == {("", tag): points for (run_path, tag), points
                                    in tensorboard_runs(logdir / "groups").items()
                                    if run_path == ""}
    empty = run(target, "read", str(tmp_path))
    assert empty.returncode == 1
    assert f"tuneplane-collector read: {tmp_path}: no *tfevents* files".encode() in \
        empty.stderr
