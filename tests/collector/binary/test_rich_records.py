"""What of a TensorBoard value is a scalar and what a rich record: tensors of other plugins
(and of none) are sealed as rich records with their kind, plugin, step, offset and the value
itself, never guessed to be scalars; a scalars-plugin tensor that is not one number is kept
as a tensor and said; a tag or plugin name that is not a name is said and skipped."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.util import tensor_util

from tests.collector.binary.collected import collect, read
from tests.support.collector_binary import spooled
from tests.support.truth import frame
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

Kind = pb.RichRecord.Kind
#: (plugin, tensor shape, kind sealed)
PLUGINS = [("histograms", (30, 3), Kind.KIND_HISTOGRAM), ("images", (3,), Kind.KIND_IMAGE),
           ("audio", (1, 2), Kind.KIND_AUDIO), ("text", (), Kind.KIND_TEXT),
           ("pr_curves", (6, 10), Kind.KIND_TENSOR), ("", (4,), Kind.KIND_TENSOR)]


def value(tag: str, plugin: str | None, tensor: tensor_pb2.TensorProto,
          ) -> summary_pb2.Summary.Value:
    v = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if plugin is not None:
        v.metadata.plugin_data.plugin_name = plugin
    return v


def event(step: int, *values: summary_pb2.Summary.Value) -> bytes:
    return frame(event_pb2.Event(step=step, wall_time=2.5 + step, summary=summary_pb2.Summary(
        value=list(values))).SerializeToString())


def test_tensors_of_other_plugins_are_rich_records_never_scalars(tmp_path: Path,
                                                                 tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    written = [value(f"t{i}", plugin, tensor_util.make_tensor_proto(np.zeros(shape, np.float32)))
               for i, (plugin, shape, _) in enumerate(PLUGINS)]
    written.append(value("bare", None, tensor_util.make_tensor_proto(1.5)))  # rank 0, no plugin
    records = [event(7 + i, v) for i, v in enumerate(written)]
    path = logdir / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(records))
    done = collect(tmp_path, tls_dir, {("tb", path.name): path.stat().st_size},
                   "--tensorboard", f"tb={logdir}")
    sealed = spooled(tmp_path / "spool")
    assert not [c for b in sealed for c in b.chunks], "a tensor was taken for a scalar"
    rich = [r for b in sealed for r in b.rich]
    offsets = [sum(len(r) for r in records[:i]) for i in range(len(records))]
    assert [(r.kind, r.plugin_name, r.tag, r.step, r.wall_time, r.offset, r.file)
            for r in rich] == [
        (kind, plugin, f"t{i}", 7 + i, 9.5 + i, offsets[i], path.name)
        for i, (plugin, _, kind) in enumerate(PLUGINS)] + [
        (Kind.KIND_TENSOR, "", "bare", 13, 15.5, offsets[-1], path.name)]
    assert [summary_pb2.Summary.Value.FromString(r.payload).tensor for r in rich] == \
        [v.tensor for v in written]
    assert f"{path.name}@" not in done.stderr, done.stderr


def half(dtype: int, bits: int) -> tensor_pb2.TensorProto:
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                  half_val=[bits])


def test_scalars_plugin_tensors_are_numbers_or_kept_as_tensors_and_said(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join([
        event(1, value("vector", "scalars", tensor_util.make_tensor_proto(
            np.ones(2, np.float32)))),
        event(2, value("odd", "scalars", tensor_pb2.TensorProto(dtype=99, float_val=[1.0]))),
        event(3, value("half", "scalars", half(19, struct.unpack(  # DT_HALF
            "<H", struct.pack("<e", 1.5))[0]))),
        event(4, value("bf16", "scalars", half(14, struct.unpack(  # DT_BFLOAT16
            "<I", struct.pack("<f", -2.0))[0] >> 16))),
    ]))
    records, problems = read(path)
    assert [(r["kind"], r["tag"], r["step"]) for r in records] == [
        ("tensor", "vector", 1), ("tensor", "odd", 2), ("scalar", "half", 3),
        ("scalar", "bf16", 4)]
    assert [r["value"] for r in records if r["kind"] == "scalar"] == [1.5, -2.0]
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"{path.name}@0: ")
    assert "tag 'vector' of the scalars plugin kept as a tensor: tensor is not rank 0" \
        in problems[0]
    assert "tag 'odd' of the scalars plugin kept as a tensor: dtype " in problems[1]
    assert problems[1].endswith(" is not numeric")


def test_a_tag_or_plugin_name_that_is_not_a_name_is_said_and_skipped(tmp_path: Path) -> None:
    plugin = summary_pb2.Summary.Value(tag="img", simple_value=1.0)
    plugin.metadata.plugin_data.plugin_name = "images\x00"
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join([
        frame(event_pb2.Event(step=3, wall_time=1.0, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=t, simple_value=3.0)
            for t in ("loss", "bad\x00tag", "acc\x1b")])).SerializeToString()),
        event(4, plugin)]))
    records, problems = read(path)
    assert [(r["kind"], r["tag"]) for r in records] == [("scalar", "loss")]
    assert len(problems) == 3, problems
    assert "tag holds the control character '\\x00' at 3: 'bad\\x00tag'; value skipped" \
        in problems[0]
    assert "tag holds the control character '\\x1b' at 3" in problems[1]
    assert "plugin name holds the control character '\\x00'" in problems[2]
