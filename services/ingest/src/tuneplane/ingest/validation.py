"""Bounds and shape of an incoming batch, checked before anything touches Kafka."""

from __future__ import annotations

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES, MAX_BATCH_POINTS, MAX_NAME_BYTES


class InvalidBatch(ValueError):
    """The batch breaks the contract; the message says what and where."""


def check_name(what: str, value: str) -> None:
    if not value:
        raise InvalidBatch(f"{what} is empty")
    if len(value.encode()) > MAX_NAME_BYTES:
        raise InvalidBatch(f"{what} is {len(value.encode())} bytes, over the {MAX_NAME_BYTES} "
                           f"byte bound: {value[:40]!r}...")


def validate(batch: pb.Batch, size: int) -> int:
    """Returns the batch's point count, or raises InvalidBatch."""
    if size > MAX_BATCH_BYTES:
        raise InvalidBatch(f"batch is {size} bytes, over the {MAX_BATCH_BYTES} byte bound")
    identity = batch.identity
    check_name("identity.run_id", identity.run_id)
    check_name("identity.member", identity.member)
    check_name("identity.spool_epoch", identity.spool_epoch)
    if identity.attempt < 1:
        raise InvalidBatch("identity.attempt must be 1 or more")
    points = 0
    for i, chunk in enumerate(batch.chunks):
        check_name(f"chunks[{i}].source", chunk.source)
        check_name(f"chunks[{i}].tag", chunk.tag)
        n = len(chunk.steps)
        if n == 0:
            raise InvalidBatch(f"chunks[{i}] ({chunk.source}/{chunk.tag}) has no points")
        if len(chunk.wall_times) != n or len(chunk.values) != n:
            raise InvalidBatch(
                f"chunks[{i}] ({chunk.source}/{chunk.tag}) has columns of unequal length: "
                f"steps {n}, wall_times {len(chunk.wall_times)}, values {len(chunk.values)}")
        points += n
        if points > MAX_BATCH_POINTS:
            raise InvalidBatch(f"batch has more than {MAX_BATCH_POINTS} points "
                               f"(bound reached at chunks[{i}])")
    for i, record in enumerate(batch.rich):
        check_name(f"rich[{i}].source", record.source)
        check_name(f"rich[{i}].tag", record.tag)
        if record.kind == pb.RichRecord.KIND_UNSPECIFIED:
            raise InvalidBatch(f"rich[{i}] ({record.source}/{record.tag}) has no kind")
    for i, marker in enumerate(batch.session_starts):
        check_name(f"session_starts[{i}].source", marker.source)
    if not (batch.chunks or batch.rich or batch.session_starts):
        raise InvalidBatch("batch is empty")
    return points
