"""Batch bounds and shape, checked before anything reaches Kafka."""

from __future__ import annotations

import pytest

from tuneplane.ingest.validation import InvalidBatch, validate
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES, MAX_NAME_BYTES


def batch(**identity: object) -> pb.Batch:
    proto = pb.BatchIdentity(run_id="r", attempt=1, member="m", spool_epoch="e", sequence=1)
    for name, value in identity.items():
        setattr(proto, name, value)
    return pb.Batch(identity=proto, chunks=[
        pb.SeriesChunk(source="s", tag="t", steps=[1, 2], wall_times=[0, 0], values=[1, 2])])


def test_a_good_batch_counts_its_points() -> None:
    assert validate(batch(), 100) == 2


@pytest.mark.parametrize(("identity", "reason"), [
    ({"run_id": ""}, "identity.run_id is empty"),
    ({"member": ""}, "identity.member is empty"),
    ({"spool_epoch": ""}, "identity.spool_epoch is empty"),
    ({"attempt": 0}, "identity.attempt must be 1 or more"),
    ({"member": "m" * (MAX_NAME_BYTES + 1)}, f"over the {MAX_NAME_BYTES} byte bound"),
])
def test_identity_fields_are_checked(identity: dict[str, object], reason: str) -> None:
    with pytest.raises(InvalidBatch, match=reason):
        validate(batch(**identity), 100)


def test_columns_of_unequal_length_are_named() -> None:
    b = batch()
    b.chunks[0].values.append(3.0)
    with pytest.raises(InvalidBatch, match=r"chunks\[0\] \(s/t\) has columns of unequal length"):
        validate(b, 100)


def test_empty_chunk_and_empty_tag_are_refused() -> None:
    b = batch()
    b.chunks.add(source="s", tag="")
    with pytest.raises(InvalidBatch, match=r"chunks\[1\].tag is empty"):
        validate(b, 100)
    b.chunks[1].tag = "x"
    with pytest.raises(InvalidBatch, match=r"chunks\[1\] \(s/x\) has no points"):
        validate(b, 100)


def test_rich_records_and_markers_are_checked() -> None:
    b = batch()
    b.rich.add(source="s", tag="img", kind=pb.RichRecord.KIND_IMAGE, payload=b"png")
    b.session_starts.add(source="s", step=3)
    assert validate(b, 100) == 2
    b.rich.add(source="s", tag="x")
    with pytest.raises(InvalidBatch, match=r"rich\[1\] \(s/x\) has no kind"):
        validate(b, 100)
    b.rich[1].tag = ""
    with pytest.raises(InvalidBatch, match=r"rich\[1\].tag is empty"):
        validate(b, 100)


def test_an_empty_batch_is_refused() -> None:
    b = batch()
    del b.chunks[:]
    with pytest.raises(InvalidBatch, match="batch is empty"):
        validate(b, 100)


def test_byte_bound_is_checked_on_the_serialized_size() -> None:
    with pytest.raises(InvalidBatch, match=f"over the {MAX_BATCH_BYTES} byte bound"):
        validate(batch(), MAX_BATCH_BYTES + 1)
