"""Our TensorBoard record declarations match TensorBoard's own, field by field (the HParams
plugin's data with them, and protobuf's JSON values it holds, which ours mirror)."""

from __future__ import annotations

import pytest
from google.protobuf import struct_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.hparams import plugin_data_pb2

from tuneplane.tensorboard.v1 import event_pb2 as ours
from tuneplane.tensorboard.v1 import hparams_pb2 as ours_hparams

MESSAGES = [
    (ours.Event.DESCRIPTOR, event_pb2.Event.DESCRIPTOR),
    (ours.SessionLog.DESCRIPTOR, event_pb2.SessionLog.DESCRIPTOR),
    (ours.Summary.DESCRIPTOR, summary_pb2.Summary.DESCRIPTOR),
    (ours.SummaryMetadata.DESCRIPTOR, summary_pb2.SummaryMetadata.DESCRIPTOR),
    (ours.HistogramProto.DESCRIPTOR, summary_pb2.HistogramProto.DESCRIPTOR),
    (ours.TensorProto.DESCRIPTOR, tensor_pb2.TensorProto.DESCRIPTOR),
    (ours.TensorShapeProto.DESCRIPTOR, tensor_shape_pb2.TensorShapeProto.DESCRIPTOR),
    (ours_hparams.HParamsPluginData.DESCRIPTOR, plugin_data_pb2.HParamsPluginData.DESCRIPTOR),
    (ours_hparams.SessionStartInfo.DESCRIPTOR, plugin_data_pb2.SessionStartInfo.DESCRIPTOR),
    (ours_hparams.Value.DESCRIPTOR, struct_pb2.Value.DESCRIPTOR),
    (ours_hparams.Struct.DESCRIPTOR, struct_pb2.Struct.DESCRIPTOR),
    (ours_hparams.ListValue.DESCRIPTOR, struct_pb2.ListValue.DESCRIPTOR),
]


def walk(mine: Descriptor, theirs: Descriptor) -> list[tuple[Descriptor, Descriptor]]:
    pairs = [(mine, theirs)]
    for nested in mine.nested_types:
        pairs += walk(nested, theirs.nested_types_by_name[nested.name])
    return pairs


@pytest.mark.parametrize(("mine", "theirs"), MESSAGES, ids=lambda d: d.name)
def test_every_declared_field_has_tensorboards_number_and_type(
        mine: Descriptor, theirs: Descriptor) -> None:
    for m, t in walk(mine, theirs):
        assert m.fields, m.full_name
        for field in m.fields:
            other = t.fields_by_name.get(field.name)
            assert other is not None, f"{m.full_name}.{field.name} is not in {t.full_name}"
            assert (field.number, field.type) == (other.number, other.type), \
                f"{m.full_name}.{field.name}"
            assert field.is_repeated == other.is_repeated, f"{m.full_name}.{field.name}"


@pytest.mark.parametrize(("mine", "theirs"), [
    (ours.DataType.DESCRIPTOR, types_pb2.DataType.DESCRIPTOR),
    (ours.DataClass.DESCRIPTOR, summary_pb2.DataClass.DESCRIPTOR),
    (ours.SessionLog.SessionStatus.DESCRIPTOR, event_pb2.SessionLog.SessionStatus.DESCRIPTOR),
    (ours_hparams.NullValue.DESCRIPTOR, struct_pb2.NullValue.DESCRIPTOR),
], ids=lambda d: d.name)
def test_enum_values_match(mine: EnumDescriptor, theirs: EnumDescriptor) -> None:
    for value in mine.values:
        assert theirs.values_by_name[value.name].number == value.number, value.name
