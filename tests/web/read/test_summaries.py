"""Stored TensorBoard records read as TensorBoard's dashboards read them (no services
needed): histograms equal to TensorBoard's own migration of the same values, TF1 and TF2
shapes alike; images, audio and text out of either shape; a record of another kind refused
with what it holds."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from tensorboard import data_compat
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.histogram import summary_v2 as histogram_v2
from tensorboard.plugins.text import summary_v2 as text_v2
from tensorboard.util import tensor_util

from tests.support.media import picture, tone
from tests.support.tensorboardx import summary as tbx
from tuneplane.tensorboard.v1 import event_pb2 as tb
from tuneplane.web.read import summaries
from tuneplane.web.read.summaries import Undecodable


def stored(summary: Any) -> bytes:
    """The record's object as the collector keeps it: the Summary.Value's bytes (of
    TensorBoard's or tensorboardX's proto)."""
    (value,) = summary.value
    return bytes(value.SerializeToString())


def tensorflow_bins() -> list[float]:
    """tensorboardX's default bins (``add_histogram``'s "tensorflow"): ±1e-12 growing by
    10% to ±1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def tensorboard_buckets(payload: bytes) -> list[tuple[float, ...]]:
    value = summary_pb2.Summary.Value.FromString(payload)
    migrated = data_compat.migrate_value(value)
    return [tuple(map(float, row)) for row in tensor_util.make_ndarray(migrated.tensor)]


@pytest.mark.parametrize("data", [np.random.default_rng(1).normal(0, 1, 500),
                                  np.array([3.0] * 10), np.array([-1.0, 1e6])])
def test_a_tf1_histogram_is_migrated_as_tensorboard_migrates_it(data: np.ndarray) -> None:
    payload = stored(tbx().histogram("h", data, tensorflow_bins()))
    ours = summaries.histogram(payload)
    theirs = tensorboard_buckets(payload)
    assert len(ours) == len(theirs) > 0
    for mine, truth in zip(ours, theirs, strict=True):
        assert mine == pytest.approx(truth, rel=1e-6)  # TensorBoard keeps float32


def test_a_tf2_histogram_tensor_is_read_as_written() -> None:
    payload = stored(histogram_v2.histogram_pb("h", np.arange(10.0), buckets=4))
    assert summaries.histogram(payload) == tensorboard_buckets(payload)
    assert len(summaries.histogram(payload)) == 4


def test_images_and_audio_come_out_of_tf1_values_and_tf2_tensors() -> None:
    image = stored(tbx().image("i", picture(3), dataformats="HWC"))
    assert summaries.media(image).startswith(b"\x89PNG\r\n\x1a\n")
    clip = stored(tbx().audio("a", tone(1), sample_rate=8000))
    assert summaries.media(clip)[8:12] == b"WAVE"
    tf2_images = tb.Summary.Value(tag="i", tensor=tb.TensorProto(
        dtype=tb.DataType.DT_STRING, tensor_shape=tb.TensorShapeProto(
            dim=[tb.TensorShapeProto.Dim(size=4)]), string_val=[b"8", b"8", b"one", b"two"]))
    assert summaries.media(tf2_images.SerializeToString(), 1) == b"two"
    tf2_audio = tb.Summary.Value(tag="a", tensor=tb.TensorProto(
        dtype=tb.DataType.DT_STRING, tensor_shape=tb.TensorShapeProto(
            dim=[tb.TensorShapeProto.Dim(size=2), tb.TensorShapeProto.Dim(size=2)]),
        string_val=[b"clip0", b"label0", b"clip1", b"label1"]))
    assert summaries.media(tf2_audio.SerializeToString(), 1) == b"clip1"
    with pytest.raises(Undecodable, match="holds 2 samples; there is no sample 2"):
        summaries.media(tf2_images.SerializeToString(), 2)
    with pytest.raises(Undecodable, match="is a TF1 image value: one sample, no sample 1"):
        summaries.media(image, 1)


def test_text_is_its_strings_and_shape() -> None:
    assert summaries.text(stored(tbx().text("t", "<b>x</b>"))) == ([1], ["<b>x</b>"])
    table = stored(text_v2.text_pb("t", np.array([["a", "b"], ["c", "\N{SNOWMAN}"]])))
    assert summaries.text(table) == ([2, 2], ["a", "b", "c", "\N{SNOWMAN}"])


def test_a_record_of_another_kind_is_refused_with_what_it_holds() -> None:
    image = stored(tbx().image("i", picture(3), dataformats="HWC"))
    histogram = stored(tbx().histogram("h", np.arange(5.0), tensorflow_bins()))
    with pytest.raises(Undecodable, match=r"^holds an image value, not a histogram$"):
        summaries.histogram(image)
    with pytest.raises(Undecodable, match=r"^holds a histo value, not text$"):
        summaries.text(histogram)
    with pytest.raises(Undecodable, match=r"^holds a histo value, not an image or audio clip$"):
        summaries.media(histogram)
    with pytest.raises(Undecodable, match=r"^is not a TensorBoard Summary\.Value"):
        summaries.media(b"\xff\xff\xff")
    strings = stored(text_v2.text_pb("t", np.array(["a", "b", "c"])))
    with pytest.raises(Undecodable, match=r"DT_STRING tensor of shape \[3\], not histogram"):
        summaries.histogram(strings)


def huge_shape(dims: int) -> bytes:
    """A value whose tensor claims ``dims`` dimensions of 2**62 each (a hostile writer's:
    their product is a bignum of millions of digits) and holds one element."""
    tensor = tb.TensorProto(dtype=tb.DataType.DT_STRING, string_val=[b"x"])
    tensor.tensor_shape.dim.extend(tb.TensorShapeProto.Dim(size=2**62) for _ in range(dims))
    return tb.Summary.Value(tag="t", tensor=tensor).SerializeToString()


@pytest.mark.parametrize("decode", [summaries.text, summaries.media, summaries.histogram])
def test_a_shape_of_many_huge_dimensions_is_refused_at_once_and_named_briefly(
        decode: Any) -> None:
    """The shape is a writer's: its element count is never a bignum product (quadratic in
    the rank: minutes for one record of a few MB, the web service's loop blocked), and a
    refusal names a few dimensions, not a megabyte of them."""
    payload = huge_shape(100_000)
    started = time.monotonic()
    with pytest.raises(Undecodable) as refused:
        decode(payload)
    assert time.monotonic() - started < 3
    assert "(100000 dimensions)" in str(refused.value)
    assert len(str(refused.value)) < 300


def test_a_negative_dimension_is_refused() -> None:
    tensor = tb.TensorProto(dtype=tb.DataType.DT_STRING, string_val=[b"x"],
                            tensor_shape=tb.TensorShapeProto(dim=[
                                tb.TensorShapeProto.Dim(size=-1),
                                tb.TensorShapeProto.Dim(size=-1)]))
    payload = tb.Summary.Value(tag="t", tensor=tensor).SerializeToString()
    with pytest.raises(Undecodable, match=r"shape \[-1, -1\] has a negative dimension"):
        summaries.text(payload)
