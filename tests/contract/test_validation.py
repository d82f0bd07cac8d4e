"""Batch bounds and shape: what ingest refuses and the projector treats as poison."""

from __future__ import annotations

import re

import pytest

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import (
    MAX_BATCH_BYTES,
    MAX_BATCH_RICH,
    MAX_BATCH_SERIES,
    MAX_BATCH_SESSION_STARTS,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    MAX_POSITION_STATE_BYTES,
    MAX_RUN_PATH_BYTES,
)
from tuneplane.telemetry.v1.validation import (
    InvalidBatch,
    name_problem,
    run_path_problem,
    validate,
)


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
    ({"attempt": 0}, "identity.attempt must be 1 to 2147483647, not 0"),
    ({"attempt": 2**31}, "identity.attempt must be 1 to 2147483647, not 2147483648"),
    ({"run_id": "a/b"}, "identity.run_id holds '/'"),
    ({"member": "rank\x000"}, r"identity.member holds the control character '\\x00' at 4"),
    ({"spool_epoch": "e\n"}, r"identity.spool_epoch holds the control character '\\n' at 1"),
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


def rich(**fields: object) -> pb.Batch:
    b = batch()
    record = b.rich.add(source="s", tag="img", kind=pb.RichRecord.KIND_IMAGE, payload=b"x")
    for name, value in fields.items():
        setattr(record, name, value)
    return b


@pytest.mark.parametrize(("fields", "reason"), [
    ({"kind": 7}, r"rich\[0\] \(s/img\).kind 7 is not a kind this service knows"),
    ({"tag": "a\x00b"}, r"rich\[0\].tag holds the control character"),
    ({"source": "s\x1b"}, r"rich\[0\].source holds the control character"),
    ({"plugin_name": "p\x00"}, r"rich\[0\] \(s/img\).plugin_name holds the control"),
    ({"file": "events\x00.tb"}, r"rich\[0\] \(s/img\).file holds the control character"),
    ({"file": "f" * (MAX_PATH_BYTES + 1)}, f"file is {MAX_PATH_BYTES + 1} bytes"),
    ({"offset": 2**63}, r"rich\[0\] \(s/img\).offset 9223372036854775808 is over"),
    ({"wall_time": float("nan")}, r"rich\[0\] \(s/img\).wall_time nan is not a time"),
])
def test_every_field_of_a_rich_record_is_checked(fields: dict[str, object], reason: str) -> None:
    with pytest.raises(InvalidBatch, match=reason):
        validate(rich(**fields), 100)


def test_every_string_of_a_chunk_and_a_marker_is_checked() -> None:
    b = batch()
    b.chunks[0].tag = "loss\x07"
    with pytest.raises(InvalidBatch, match=r"chunks\[0\].tag holds the control character"):
        validate(b, 100)
    b = batch()
    b.session_starts.add(source="s", file="e\x00", step=1)
    with pytest.raises(InvalidBatch, match=r"session_starts\[0\].file holds the control"):
        validate(b, 100)
    b.session_starts[0].file, b.session_starts[0].offset = "e", 2**64 - 1
    with pytest.raises(InvalidBatch, match=r"session_starts\[0\].offset .* is over"):
        validate(b, 100)
    b.session_starts[0].offset = 0
    b.session_starts[0].tags.extend(["loss", "a\x1bcc"])
    with pytest.raises(InvalidBatch, match=r"session_starts\[0\].tags holds the control"):
        validate(b, 100)
    del b.session_starts[0].tags[:]
    b.session_starts[0].tags.extend(f"t{i}" for i in range(2001))
    with pytest.raises(InvalidBatch, match=r"session_starts\[0\] purges 2001 tags, over"):
        validate(b, 100)


def test_sealed_at_must_be_a_time() -> None:
    b = batch()
    b.sealed_at = float("inf")
    with pytest.raises(InvalidBatch, match="sealed_at inf is not a time"):
        validate(b, 100)


def test_counts_are_bounded() -> None:
    b = batch()
    for i in range(MAX_BATCH_SERIES):
        b.chunks.add(source="s", tag=f"t{i}", steps=[1], wall_times=[0.0], values=[1.0])
    with pytest.raises(InvalidBatch, match=rf"more than {MAX_BATCH_SERIES} distinct series "
                                           rf"\(bound reached at chunks\[{MAX_BATCH_SERIES}\]\)"):
        validate(b, 100)
    b = batch()
    for _ in range(MAX_BATCH_RICH + 1):
        b.rich.add(source="s", tag="t", kind=pb.RichRecord.KIND_TEXT)
    with pytest.raises(InvalidBatch, match=f"{MAX_BATCH_RICH + 1} rich records, over"):
        validate(b, 100)
    b = batch()
    for _ in range(MAX_BATCH_SESSION_STARTS + 1):
        b.session_starts.add(source="s")
    with pytest.raises(InvalidBatch, match="session markers, over the"):
        validate(b, 100)


def test_the_same_series_in_two_chunks_counts_once() -> None:
    b = batch()
    b.chunks.add(source="s", tag="t", steps=[3], wall_times=[0.0], values=[1.0])
    assert validate(b, 100) == 3


@pytest.mark.parametrize("run_path", ["", "lr_group", "lr_group/a", "eval/fold 1/ünï",
                                      "a\\b", "..x", "r" * MAX_RUN_PATH_BYTES])
def test_a_run_path_is_a_relative_path_of_names(run_path: str) -> None:
    b = batch()
    b.chunks[0].run_path = run_path
    assert validate(b, 100) == 2
    assert run_path_problem(run_path) is None


@pytest.mark.parametrize(("run_path", "reason"), [
    ("/abs", "starts with '/'"),
    ("a/", "has an empty, '.' or '..' segment"),
    ("a//b", "has an empty, '.' or '..' segment"),
    ("a/../b", "has an empty, '.' or '..' segment"),
    ("..", "has an empty, '.' or '..' segment"),
    ("./a", "has an empty, '.' or '..' segment"),
    ("a\x00b", r"holds the control character '\\x00' at 1"),
    ("a/\nb", r"holds the control character '\\n' at 2"),
    ("r" * (MAX_RUN_PATH_BYTES + 1), f"is 513 bytes, over the {MAX_RUN_PATH_BYTES} byte bound"),
])
def test_a_run_path_that_is_not_one_is_refused_naming_the_chunk(run_path: str,
                                                                  reason: str) -> None:
    b = batch()
    b.chunks[0].run_path = run_path
    with pytest.raises(InvalidBatch, match=r"chunks\[0\].run_path " + reason):
        validate(b, 100)


def test_one_tag_of_two_runs_is_two_series_toward_the_bound() -> None:
    b = batch()
    b.chunks[0].run_path = "lr_group/a"
    for i in range(MAX_BATCH_SERIES - 1):
        b.chunks.add(source="s", run_path=f"run{i}", tag="t", steps=[3], wall_times=[0.0],
                     values=[1.0])
    assert validate(b, 100) == MAX_BATCH_SERIES + 1
    b.chunks.add(source="s", tag="t", steps=[3], wall_times=[0.0], values=[1.0])  # the root's
    with pytest.raises(InvalidBatch, match="more than 2000 distinct series"):
        validate(b, 100)


def test_a_chunk_sealed_before_run_paths_is_the_roots_byte_for_byte() -> None:
    """Batches already in Kafka have no run path field: they read as the root ('')."""
    chunk = pb.SeriesChunk(source="s", tag="t", steps=[1], wall_times=[0.0], values=[1.0])
    assert pb.SeriesChunk(source="s", run_path="", tag="t", steps=[1], wall_times=[0.0],
                          values=[1.0]).SerializeToString() == chunk.SerializeToString()
    assert pb.SeriesChunk.FromString(chunk.SerializeToString()).run_path == ""


def test_a_name_holding_a_lone_surrogate_is_refused_not_raised() -> None:
    assert name_problem("loss\ud800") == "holds a lone surrogate at 4: 'loss\\ud800'"


def test_a_source_position_is_checked_and_its_state_bounded() -> None:
    b = batch()
    b.position.CopyFrom(pb.SourcePosition(source="s", file="run/events.out", offset=10,
                                          fingerprint="10:0badf00d", state="{}"))
    assert validate(b, 100) == 2
    b.position.state = "x" * (MAX_POSITION_STATE_BYTES + 1)
    with pytest.raises(InvalidBatch, match=f"state is over {MAX_POSITION_STATE_BYTES} bytes"):
        validate(b, 100)
    b.position.state = ""
    b.position.source = ""
    with pytest.raises(InvalidBatch, match="source is empty"):
        validate(b, 100)


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("file", "../etc/shadow", "position.file has an empty, '.' or '..' segment"),
    ("file", "/etc/shadow", "position.file starts with '/'"),
    ("file", "run/\x1b.tfevents", "position.file holds the control character"),
    ("file", "f" * 1025, "position.file is 1025 bytes"),
    ("state", '{"a": "\x00"}', "position.state holds a NUL character"),
])
def test_a_position_the_read_models_could_not_keep_is_refused(field: str, value: str,
                                                                reason: str) -> None:
    """Whatever ingest takes, the projector's checkpoint row holds: no NUL in text, a key
    an index entry holds, a file below its source's root."""
    b = batch()
    b.position.source = "s"
    setattr(b.position, field, value)
    with pytest.raises(InvalidBatch, match=re.escape(reason)):
        validate(b, 100)


def test_a_sequence_over_what_bigint_holds_is_refused() -> None:
    with pytest.raises(InvalidBatch, match=r"identity\.sequence"):
        validate(batch(sequence=2**63), 100)
