"""Event files written by real writers, read by the binary and by TensorBoard's own loader.

Writers: tensorboardX's SummaryWriter (TF1-style values, add_scalars sub-directories,
histograms, images, audio, text) and the tensorboard package's EventFileWriter with TF2-style
scalar tensors of several dtypes (the plugin metadata on a tag's first value only).
TensorBoard's EventFileLoader and data_compat give the truth every scalar is compared with,
bit for bit; other plugins' values are counted. On both targets (aarch64 under qemu)."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard import data_compat
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from tests.collector.binary.collected import number, read
from tests.support.collector_binary import TARGETS
from tests.support.tensorboardx import summary_writer

Row = tuple[str, str, int, bytes, bytes]  # file, tag, step, wall time and value as bits
PLUGINS = {"image": "images", "histogram": "histograms", "audio": "audio", "text": "text"}


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


def tensorboard_truth(logdir: Path) -> tuple[list[Row], dict[str, int]]:
    """Scalars and counts of other plugins' values, as TensorBoard's loader reads them."""
    scalars: list[Row] = []
    others: dict[str, int] = {}
    for path in sorted(logdir.rglob("*tfevents*")):
        relative = path.relative_to(logdir).as_posix()
        plugins: dict[str, str] = {}
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value if event.HasField("summary") else ():
                migrated = data_compat.migrate_value(value)
                if migrated.HasField("metadata"):
                    plugins.setdefault(migrated.tag, migrated.metadata.plugin_data.plugin_name)
                plugin = plugins.get(migrated.tag, "")
                if plugin == "scalars":
                    found = float(tensor_util.make_ndarray(migrated.tensor).item())
                    scalars.append((relative, migrated.tag, event.step, bits(event.wall_time),
                                    bits(found)))
                else:
                    others[plugin or "tensor"] = others.get(plugin or "tensor", 0) + 1
    return scalars, others


def binarys(records: list[dict[str, Any]]) -> tuple[list[Row], dict[str, int]]:
    scalars: list[Row] = []
    others: dict[str, int] = {}
    for r in records:
        if r["kind"] == "scalar":
            scalars.append((r["file"], r["tag"], r["step"], bits(r["wall_time"]),
                            bits(number(r["value"]))))
        elif r["kind"] not in ("session_start", "out_of_order_step"):
            plugin = PLUGINS.get(r["kind"], "tensor")
            others[plugin] = others.get(plugin, 0) + 1
    return scalars, others


def nan_as_one(rows: list[Row]) -> list[Row]:
    """NaN compared as NaN, whatever its payload bits (float32 NaN widened either way)."""
    return [(*row[:4], b"nan" if math.isnan(struct.unpack("<d", row[4])[0]) else row[4])
            for row in rows]


@pytest.mark.parametrize("target", TARGETS)
def test_tensorboardx_files_decode_as_tensorboard_decodes_them(target: str,
                                                               tmp_path: Path) -> None:
    writer = summary_writer(str(tmp_path))
    rng = np.random.default_rng(3)
    for step in range(200):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step)
        writer.add_scalar("train/odd", [math.nan, math.inf, -math.inf, 1e-30][step % 4], step)
        writer.add_scalars("group", {"a": step * 0.5, "b": -step}, step)  # sub-directories
        if step % 50 == 0:
            writer.add_histogram("weights", rng.normal(size=1000), step)
            writer.add_text("notes", f"step {step}", step)
            writer.add_audio("beep", np.sin(np.linspace(0, 100, 800)), step, sample_rate=8000)
            writer.add_image("image", rng.random((3, 8, 8)), step)
    writer.close()
    truth, truth_others = tensorboard_truth(tmp_path)
    records, problems = read(tmp_path, target)
    got, got_others = binarys(records)
    assert len(truth) == 200 * 4
    assert nan_as_one(got) == nan_as_one(truth)
    assert got_others == truth_others == {"histograms": 4, "text": 4, "audio": 4, "images": 4}
    assert problems == []
    assert any("/" in row[0] for row in got), "add_scalars sub-directories were not read"


def scalar_tensor(dtype: Any, value: float, *, content: bool) -> tensor_pb2.TensorProto:
    if not content:
        proto: tensor_pb2.TensorProto = tensor_util.make_tensor_proto(np.array(value, dtype))
        return proto
    kinds = {np.float32: (1, "<f"), np.float64: (2, "<d"), np.int32: (3, "<i"),
             np.int64: (9, "<q")}
    dt, fmt = kinds[dtype]
    return tensor_pb2.TensorProto(dtype=dt, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                  tensor_content=struct.pack(fmt, value))


@pytest.mark.parametrize("content", [False, True], ids=["typed_val", "tensor_content"])
def test_tf2_scalar_tensors_of_every_dtype_decode_as_tensorboard_decodes_them(
        tmp_path: Path, content: bool) -> None:
    writer = EventFileWriter(str(tmp_path))
    meta = scalar_metadata.create_summary_metadata(display_name="", description="")
    dtypes = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
    writer.add_event(event_pb2.Event(step=0, wall_time=1.0, session_log=event_pb2.SessionLog(
        status=event_pb2.SessionLog.START)))
    for step in range(300):
        values = []
        for tag, dtype in dtypes.items():
            raw = step * 1.25 - 100 if dtype in (np.float32, np.float64) else step * 7 - 1000
            value = summary_pb2.Summary.Value(tag=tag, tensor=scalar_tensor(dtype, raw,
                                                                            content=content))
            if step == 0:  # only the first value of a tag carries the plugin metadata
                value.metadata.CopyFrom(meta)
            values.append(value)
        writer.add_event(event_pb2.Event(step=step, wall_time=1000.0 + step,
                                         summary=summary_pb2.Summary(value=values)))
    writer.close()
    truth, truth_others = tensorboard_truth(tmp_path)
    records, problems = read(tmp_path)
    got, got_others = binarys(records)
    assert len(truth) == 300 * 4
    assert got == truth
    assert got_others == truth_others == {}
    assert problems == []
    starts = [r for r in records if r["kind"] == "session_start"]
    assert [(r["step"], r["offset"] > 0) for r in starts] == [(0, True)]
