"""Decoding single TensorBoard values: what is a scalar, what is a rich record."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.util import tensor_util

from tuneplane.collector.tbevents import Decoded, PurgeState, TagPlugins, decode, simple_scalar
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

Kind = pb.RichRecord.Kind


def value(tag: str, plugin: str, tensor: tensor_pb2.TensorProto) -> summary_pb2.Summary.Value:
    v = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    v.metadata.plugin_data.plugin_name = plugin
    return v


def run(*values: summary_pb2.Summary.Value, plugins: TagPlugins | None = None) -> Decoded:
    out = Decoded()
    data = event_pb2.Event(step=7, wall_time=2.5,
                           summary=summary_pb2.Summary(value=list(values))).SerializeToString()
    decode(data, source="tb", file="f", offset=40, plugins={} if plugins is None else plugins,
           state=PurgeState(), out=out)
    return out


@pytest.mark.parametrize(("plugin", "shape", "kind"), [
    ("histograms", (30, 3), Kind.KIND_HISTOGRAM),
    ("images", (3,), Kind.KIND_IMAGE),
    ("audio", (1, 2), Kind.KIND_AUDIO),
    ("text", (), Kind.KIND_TEXT),
    ("pr_curves", (6, 10), Kind.KIND_TENSOR),
    ("", (4,), Kind.KIND_TENSOR),
])
def test_tensors_of_other_plugins_are_rich_records_never_scalars(
        plugin: str, shape: tuple[int, ...], kind: int) -> None:
    tensor = tensor_util.make_tensor_proto(np.zeros(shape, np.float32))
    out = run(value("t", plugin, tensor))
    assert out.scalars == []
    (record,) = out.rich
    assert (record.kind, record.plugin_name, record.step, record.offset) == (kind, plugin, 7, 40)
    assert summary_pb2.Summary.Value.FromString(record.payload).tensor == tensor


def test_a_rank0_tensor_without_the_scalars_plugin_is_not_guessed_a_scalar() -> None:
    out = run(summary_pb2.Summary.Value(tag="t", tensor=tensor_util.make_tensor_proto(1.5)))
    assert out.scalars == []
    assert [r.kind for r in out.rich] == [Kind.KIND_TENSOR]


def test_a_scalars_plugin_tensor_that_is_not_rank0_is_kept_as_a_tensor_and_reported() -> None:
    out = run(value("t", "scalars", tensor_util.make_tensor_proto(np.ones(2, np.float32))))
    assert [r.kind for r in out.rich] == [Kind.KIND_TENSOR]
    assert "kept as a tensor: tensor is not rank 0" in out.problems[0]


def test_a_scalars_plugin_tensor_of_an_unknown_dtype_is_reported_not_raised() -> None:
    out = run(value("t", "scalars", tensor_pb2.TensorProto(dtype=99, float_val=[1.0])))
    assert [r.kind for r in out.rich] == [Kind.KIND_TENSOR]
    assert "kept as a tensor: dtype 99 is not numeric" in out.problems[0]


@pytest.mark.parametrize(("dtype", "bits", "expected"), [
    (19, struct.unpack("<H", struct.pack("<e", 1.5))[0], 1.5),          # DT_HALF
    (14, struct.unpack("<I", struct.pack("<f", -2.0))[0] >> 16, -2.0),  # DT_BFLOAT16
])
def test_half_precision_scalars(dtype: int, bits: int, expected: float) -> None:
    tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    half_val=[bits])
    out = run(value("h", "scalars", tensor))
    assert out.scalars == [("h", 7, 2.5, expected)]


def test_the_first_values_metadata_holds_for_the_tags_later_values() -> None:
    plugins: TagPlugins = {}
    run(value("loss", "scalars", tensor_util.make_tensor_proto(np.float64(1.0))), plugins=plugins)
    later = run(summary_pb2.Summary.Value(tag="loss",
                                          tensor=tensor_util.make_tensor_proto(np.float64(2.0))),
                plugins=plugins)
    assert later.scalars == [("loss", 7, 2.5, 2.0)]


def test_an_undecodable_event_is_a_problem_not_a_crash() -> None:
    out = Decoded()
    decode(b"\xff\xff\xff", source="tb", file="f", offset=9, plugins={}, state=PurgeState(),
           out=out)
    assert out.problems[0].startswith("f@9: not a TensorBoard Event")


def test_an_out_of_order_step_marks_its_tags_and_one_without_tags_marks_nothing() -> None:
    """In a run without file_version 2, TensorBoard purges the tags of an out-of-order
    Summary event; one with no values (or none we keep) purges nothing, so it must not
    become a marker without tags, which would read as a restart."""
    state, out = PurgeState(most_recent_step=50), Decoded()
    for offset, values in ((0, []), (10, [summary_pb2.Summary.Value(tag="bad\x00tag",
                                                                     simple_value=1.0)]),
                           (20, [summary_pb2.Summary.Value(tag="loss", simple_value=2.0)])):
        state.most_recent_step = 50
        decode(event_pb2.Event(step=7, wall_time=2.5, summary=summary_pb2.Summary(
            value=values)).SerializeToString(), source="tb", file="f", offset=offset,
            plugins={}, state=state, out=out)
    assert [(m.offset, list(m.tags)) for m in out.session_starts] == [(20, ["loss"])]


def bits(scalar: tuple[str, int, float, float]) -> tuple[str, int, bytes, bytes]:
    """A scalar compared bit for bit (NaN equals itself)."""
    tag, step, wall_time, value = scalar
    return tag, step, struct.pack("<d", wall_time), struct.pack("<d", value)


def decoded_alone(data: bytes) -> Decoded:
    out = Decoded()
    decode(data, source="tb", file="f", offset=0, plugins={}, state=PurgeState(2.0), out=out)
    return out


simple_events = st.builds(
    lambda tag, step, wall_time, number: event_pb2.Event(
        step=step, wall_time=wall_time, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=tag, simple_value=number)])).SerializeToString(),
    st.text(min_size=0, max_size=130), st.integers(-(2**63), 2**63 - 1),
    st.floats(width=64), st.floats(width=32))


@given(simple_events)
def test_the_simple_value_fast_path_reads_what_decode_reads(data: bytes) -> None:
    out = decoded_alone(data)
    fast = simple_scalar(data, {})
    if fast is not None:
        assert (out.problems, out.rich, out.session_starts) == ([], [], [])
        assert [bits(s) for s in out.scalars] == [bits(fast)]
    elif not out.problems:  # taken for every such event with a short printable tag
        assert not (out.scalars[0][0].isprintable() and len(out.scalars[0][0].encode()) < 100)


@given(simple_events, st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                               min_size=1, max_size=4))
def test_the_fast_path_reads_nothing_decode_would_read_otherwise(
        data: bytes, changes: list[tuple[int, int]]) -> None:
    damaged = bytearray(data)
    for at, byte in changes:
        damaged[at % len(damaged)] = byte
    fast = simple_scalar(bytes(damaged), {})
    if fast is not None:
        out = decoded_alone(bytes(damaged))
        assert (out.problems, out.rich, out.session_starts) == ([], [], [])
        assert [bits(s) for s in out.scalars] == [bits(fast)]


def test_the_fast_path_leaves_metadata_two_values_and_other_layouts_to_decode() -> None:
    with_metadata = summary_pb2.Summary.Value(tag="loss", simple_value=1.0)
    with_metadata.metadata.plugin_data.plugin_name = "scalars"
    for summary in (summary_pb2.Summary(value=[with_metadata]),
                    summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="a", simple_value=1),
                                               summary_pb2.Summary.Value(tag="b", simple_value=2)]),
                    summary_pb2.Summary(value=[summary_pb2.Summary.Value(node_name="n",
                                                                         simple_value=1)])):
        data = event_pb2.Event(step=3, wall_time=1.5, summary=summary).SerializeToString()
        assert simple_scalar(data, {}) is None
    heads: dict[bytes, str] = {}
    assert simple_scalar(event_pb2.Event(step=2**40, summary=summary_pb2.Summary(value=[
        summary_pb2.Summary.Value(tag="t", simple_value=0.5)])).SerializeToString(), heads) == \
        ("t", 2**40, 0.0, 0.5)
    assert list(heads.values()) == ["t"]
