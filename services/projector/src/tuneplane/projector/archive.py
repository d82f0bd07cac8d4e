"""The batches topic's archive segments: a partition's records over an offset range as one
Parquet file in the object store. Pure: records in, bytes out, and back.

One row per record: its partition, offset, timestamp, key, value (the batch as ingest put
it) and late mark, with the batch identity in columns of its own (run, attempt, member,
batch id: the key's parts) so the archive can be read by run without decoding a batch.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from google.protobuf.message import DecodeError

from tuneplane.common.kafka.message import Message
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

SCHEMA = pa.schema([("partition", pa.int32()), ("offset", pa.int64()),
                    ("timestamp_ms", pa.int64()), ("key", pa.binary()), ("value", pa.binary()),
                    ("late", pa.bool_()), ("run_id", pa.string()), ("attempt", pa.int32()),
                    ("member", pa.string()), ("batch_id", pa.string())])


def segment_key(topic: str, partition: int, first: int, last: int) -> str:
    return f"archive/{topic}/p{partition:04d}/{first:020d}-{last:020d}.parquet"


def identity(key: bytes | None) -> tuple[str, int, str, str]:
    """The batch identity a record's key names (``run/attempt/member/batch``); blanks when
    the key is not one (a poison record is archived as it is)."""
    parts = (key or b"").decode("utf-8", "replace").split("/", 3)
    if len(parts) == 4 and parts[1].isascii() and parts[1].isdigit():
        return parts[0], int(parts[1]), parts[2], parts[3]
    return "", 0, "", ""


def runs_of(records: Sequence[Message]) -> list[str]:
    """The run ids a segment's records name, sorted (what ``topic_archive.runs`` holds)."""
    return sorted({run for run, _, _, _ in map(identity, (m.key for m in records)) if run})


def without_rich(message: Message) -> Message:
    """The record with its batch's rich records emptied of their content (payload, plugin
    content); what they were stays, so a batch of rich records only is still a batch (a
    value that is no batch, poison, as it is)."""
    batch = pb.Batch()
    try:
        batch.ParseFromString(message.value)
    except DecodeError:
        return message
    if not any(r.payload or r.plugin_content for r in batch.rich):
        return message
    for record in batch.rich:
        record.payload, record.plugin_content = b"", b""
    return dataclasses.replace(message, value=batch.SerializeToString())


def encode(records: Sequence[Message]) -> bytes:
    ids = [identity(m.key) for m in records]
    table = pa.table({
        "partition": [m.partition for m in records], "offset": [m.offset for m in records],
        "timestamp_ms": [m.timestamp_ms for m in records], "key": [m.key for m in records],
        "value": [m.value for m in records], "late": [m.late for m in records],
        "run_id": [i[0] for i in ids], "attempt": [i[1] for i in ids],
        "member": [i[2] for i in ids], "batch_id": [i[3] for i in ids]}, schema=SCHEMA)
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue()


def decode(data: bytes) -> list[Message]:
    table = pq.read_table(io.BytesIO(data), columns=["partition", "offset", "timestamp_ms",
                                                     "key", "value", "late"])
    rows = table.to_pydict()
    return [Message(p, o, k, v, t, late) for p, o, t, k, v, late in zip(
        rows["partition"], rows["offset"], rows["timestamp_ms"], rows["key"], rows["value"],
        rows["late"], strict=True)]
