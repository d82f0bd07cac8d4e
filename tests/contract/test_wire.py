"""Naming the string that is not UTF-8, in wire bytes protobuf refuses to decode."""

from __future__ import annotations

import re

import pytest

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.validation import InvalidBatch, parse
from tuneplane.telemetry.v1.wire import Malformed, bad_utf8

MARK, BROKEN = b"QQMARKQ", b"QQ\xffARKQ"


def batch() -> pb.Batch:
    b = pb.Batch(identity=pb.BatchIdentity(run_id="r", attempt=1, member="m",
                                           spool_epoch="e", sequence=1))
    for tag in ("loss", "acc", "lr"):
        b.chunks.add(source="train", tag=tag, steps=[1, 2], wall_times=[1.0, 2.0],
                     values=[0.5, 0.25])
    b.rich.add(source="train", tag="img", kind=pb.RichRecord.KIND_IMAGE, file="events",
               plugin_name="images")
    return b


@pytest.mark.parametrize(("edit", "path"), [
    (lambda b: setattr(b.chunks[2], "tag", MARK.decode()), "chunks[2].tag"),
    (lambda b: setattr(b.chunks[0], "source", MARK.decode()), "chunks[0].source"),
    (lambda b: setattr(b.rich[0], "plugin_name", MARK.decode()), "rich[0].plugin_name"),
    (lambda b: setattr(b.identity, "member", MARK.decode()), "identity.member"),
    (lambda b: b.session_starts.add(source="s", file=MARK.decode()), "session_starts[0].file"),
])
def test_the_field_holding_invalid_utf8_is_named(edit: object, path: str) -> None:
    b = batch()
    edit(b)  # type: ignore[operator]
    data = b.SerializeToString().replace(MARK, BROKEN)
    assert bad_utf8(pb.Batch.DESCRIPTOR, data) == f"{path} is not valid UTF-8 " \
                                                  "(byte 2: invalid start byte)"
    with pytest.raises(InvalidBatch, match=f"^undecodable batch: {re.escape(path)} "):
        parse(data)


def test_a_well_formed_message_has_nothing_to_name() -> None:
    assert bad_utf8(pb.Batch.DESCRIPTOR, batch().SerializeToString()) is None
    assert parse(batch().SerializeToString()) == batch()


@pytest.mark.parametrize("data", [b"\x0a\x7f", b"\xff", b"\x0b\x00", b"\x08\xff\xff"])
def test_malformed_bytes_are_refused_without_a_field(data: bytes) -> None:
    with pytest.raises(Malformed):
        bad_utf8(pb.Batch.DESCRIPTOR, data)
    with pytest.raises(InvalidBatch, match=r"^undecodable batch: "):
        parse(data)
