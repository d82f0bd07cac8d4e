"""The static collector's ``read`` on TensorBoard log directories, for both targets (aarch64
under qemu), against the Python collector's reader on the same files: event files of real
writers (tensorboardX, torch, TensorBoard's own writer; ``add_scalars`` runs, restarts,
old-style purges), images, histograms, text and audio, and hostile or damaged records: the
same records field for field and bit for bit, and the same problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.collector.binary.test_read import exact, reason
from tests.support import writers
from tests.support.collector_binary import TARGETS, run
from tests.support.media import write_media_logdir
from tests.support.truth import (
    write_add_scalars_logdir,
    write_old_style_logdir,
    write_restart_logdir,
)
from tuneplane.collector import records, tfrecord
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
    framed = [tfrecord.frame(r) for r in records_written]
    broken = bytearray(tfrecord.frame(event(12, Value(tag="ok", simple_value=12.0))))
    broken[-6] ^= 0xFF  # the data CRC fails
    after = tfrecord.frame(event(13, Value(tag="ok", simple_value=13.0)))
    path.write_bytes(b"".join(framed) + bytes(broken) + b"garbage!" + after
                     + tfrecord.frame(event(14, Value(tag="ok", simple_value=14.0)))[:20])


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
    (root / "hostile").mkdir()
    hostile_events(root / "hostile" / "events.out.tfevents.1.hostile")
    return root


def reference(path: Path) -> tuple[list[object], list[str]]:
    problems: list[str] = []
    found = [exact(json.loads(json.dumps(r))) for r in records.records(path, problems.append)]
    return found, problems


@pytest.mark.parametrize("target", TARGETS)
def test_read_gives_what_the_python_reader_gives(target: str, logdir: Path) -> None:
    done = run(target, "read", str(logdir), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    want_records, want_problems = reference(logdir)
    got = [exact(json.loads(line)) for line in done.stdout.splitlines()]
    assert len(got) == len(want_records)
    for index, (mine, theirs) in enumerate(zip(got, want_records, strict=True)):
        assert mine == theirs, f"record {index}"
    kinds = {r["kind"] for r in got if isinstance(r, dict)}
    assert kinds == {"scalar", "image", "histogram", "text", "audio", "tensor",
                     "session_start", "out_of_order_step"}
    problems = done.stderr.decode().splitlines()
    assert [reason(p) for p in problems] == [reason(p) for p in want_problems]
    assert len(problems) >= 10  # the hostile file's problems, so both sides saw them


@pytest.mark.parametrize("target", TARGETS)
def test_one_event_file_and_a_log_directory_without_any(target: str, logdir: Path,
                                                        tmp_path: Path) -> None:
    one = next((logdir / "hostile").iterdir())
    done = run(target, "read", str(one))
    want, _ = reference(one)
    assert [exact(json.loads(line)) for line in done.stdout.splitlines()] == want
    empty = run(target, "read", str(tmp_path))
    assert empty.returncode == 1
    assert f"tuneplane-collector read: {tmp_path}: no *tfevents* files".encode() in \
        empty.stderr
