"""The golden sealed batches (tests/vectors/sealed.json): what the collector seals from a
fixed set of sources, byte for byte, on both targets.

The sources (``write_sources``) are a JSONL file with NaN, infinities, a damaged line and
config records, and a TensorBoard log directory with a run below it, scalars (TF1
``simple_value`` and a TF2 scalar tensor), an image, a histogram, a text, and in the run an
HParams session start (TensorBoard's ``hparams_pb``). Each batch the binary seals is read from
its spool, its fields that differ by nature cleared (the spool's random epoch, the seal's
wall time, and the wall times of a chunk stamped when read: line 9 gives none), and
compared with the corpus: the identity, every chunk's columns, every
rich record's bytes. The payload must also be protobuf's canonical encoding of itself, so
Python's decoding and re-encoding reproduce the wire bytes. After an intended change of the
wire output, ``TUNEPLANE_WRITE_VECTORS=1`` writes the corpus anew (review the diff).
"""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
import struct
import time
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.plugins.hparams.summary_v2 import hparams_pb

from tests.support.collector_binary import TARGETS, unreachable_run
from tests.support.truth import frame
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

CORPUS = Path(__file__).with_name("sealed.json")
#: A 1x1 PNG (a red pixel).
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/"
                       "iZk9HQAAAABJRU5ErkJggg==")


def event(step: int, *values: summary_pb2.Summary.Value) -> bytes:
    return frame(event_pb2.Event(step=step, wall_time=1.7e9 + step,
                                 summary=summary_pb2.Summary(value=list(values)))
                 .SerializeToString())


def session_start() -> summary_pb2.Summary.Value:
    """TensorBoard's ``hparams_pb`` value, its plugin data encoded deterministically (a
    map's order is protobuf's choice, and the rich record keeps the value's bytes)."""
    (value,) = hparams_pb({"lr": 0.01, "layers": 4, "optimizer": "sgd", "amp": False},
                          trial_id="t1", start_time_secs=1.7e9).value
    data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
    value.metadata.plugin_data.content = data.SerializeToString(deterministic=True)
    return value


def write_sources(place: Path) -> tuple[Path, Path, list[Path]]:
    jsonl = place / "metrics.jsonl"
    lines = [json.dumps({"step": s, "wall_time": 1.7e9 + s,
                         "metrics": {"loss": 1 / (s + 1), "lr": 0.1 * 0.5 ** s}})
             for s in range(40)]
    lines[7] = '{"step": 7, "wall_time": 1.7e9, "metrics": {"loss": NaN, "acc": Infinity}}'
    lines[8] = '{"step": 8, "metrics": {"loss": -Infinity}}'
    lines[9] = '{"step": 9, "wall_time": "x", "metrics": {"loss": 1}'  # damaged
    lines += ['{"wall_time": 1700000040.5, "config": {"optimizer": {"lr": 0.001, '
              '"betas": [0.9, 0.999]}, "amp": true, "note": null}}',
              '{"step": 40, "wall_time": 1700000041, "metrics": {"loss": 0.5}, '
              '"config": {"epochs": 10, "name": "exp-1"}}']
    jsonl.write_text("\n".join(lines) + "\n")
    logdir = place / "tb"
    (logdir / "eval" / "fold_1").mkdir(parents=True)
    version = frame(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2")
                    .SerializeToString())
    scalar = tensor_pb2.TensorProto(dtype=1, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    float_val=[0.75])
    text = tensor_pb2.TensorProto(dtype=7, string_val=[b"hello, **world**"])
    histogram = summary_pb2.HistogramProto(min=0, max=2, num=3, sum=3, sum_squares=5,
                                           bucket_limit=[1, 2], bucket=[1, 2])
    image = summary_pb2.Summary.Image(height=1, width=1, colorspace=4,
                                      encoded_image_string=PNG)
    train = logdir / "events.out.tfevents.1700000000.host.1.v2"
    train.write_bytes(version + b"".join(
        event(s, summary_pb2.Summary.Value(tag="loss", simple_value=s / 4),
              summary_pb2.Summary.Value(tag="acc", tensor=scalar,
                                        metadata=summary_pb2.SummaryMetadata(
                                            plugin_data=summary_pb2.SummaryMetadata.PluginData(
                                                plugin_name="scalars"))))
        for s in range(30)) + event(30, summary_pb2.Summary.Value(tag="sample", image=image))
        + event(31, summary_pb2.Summary.Value(tag="weights", histo=histogram))
        + event(32, summary_pb2.Summary.Value(tag="note", tensor=text, metadata=(
            summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
                plugin_name="text"))))))
    evaluation = logdir / "eval" / "fold_1" / "events.out.tfevents.1700000001.host.2.v2"
    evaluation.write_bytes(version + b"".join(
        event(s, summary_pb2.Summary.Value(tag="score", simple_value=struct.unpack(
            "<f", struct.pack("<f", s / 3))[0])) for s in range(25))
        + event(25, session_start()))
    return jsonl, logdir, [train, evaluation]


def sealed(spool: Path, since: float) -> list[dict[str, object]]:
    """The spool's batches in order, each normalised and as a readable dict beside it; a
    chunk stamped when read holds wall times of the collector's clock since ``since``."""
    with sqlite3.connect(spool / "spool.sqlite3") as db:
        rows = db.execute("SELECT sequence, points, payload FROM batches ORDER BY sequence")
        found = []
        for sequence, points, payload in rows:
            batch = pb.Batch.FromString(payload)
            assert batch.SerializeToString(deterministic=True) == payload, sequence
            assert re.fullmatch(r"[0-9a-f]{16}", batch.identity.spool_epoch), batch.identity
            assert batch.sealed_at > 1.7e9, batch.sealed_at
            batch.identity.spool_epoch, batch.sealed_at = "", 0.0
            for chunk in (c for c in batch.chunks if c.wall_times_read):
                assert all(since <= w <= time.time() for w in chunk.wall_times), chunk
                chunk.wall_times[:] = [0.0] * len(chunk.wall_times)
            found.append({"sequence": sequence, "points": points,
                          "bytes": base64.b64encode(
                              batch.SerializeToString(deterministic=True)).decode(),
                          "batch": MessageToDict(batch)})
    return found


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_collector_seals_the_golden_batches(target: str, tmp_path: Path,
                                                tls_dir: Path) -> None:
    jsonl, logdir, events = write_sources(tmp_path)
    started = time.time()
    done = unreachable_run(target, tmp_path, tls_dir, {"train": jsonl}, "--tensorboard",
                           f"tb={logdir}", read=[jsonl, *events])
    assert done.returncode == 3, done.stderr  # all spooled, none delivered
    assert "metrics.jsonl:10" in done.stderr, done.stderr  # the damaged line, said
    got = sealed(tmp_path / "spool", started)
    if os.environ.get("TUNEPLANE_WRITE_VECTORS") == "1":
        CORPUS.write_text(json.dumps(got, indent=1) + "\n")
        pytest.fail(f"{CORPUS} written anew: review the diff and commit it", pytrace=False)
    want = json.loads(CORPUS.read_text())
    assert [b["batch"] for b in got] == [b["batch"] for b in want]
    assert got == want
