"""Projection of one batch: a pure function of (batch bytes, Kafka metadata) to typed rows."""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field

from tuneplane.common.kafka.message import InvalidMessage
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey
from tuneplane.telemetry.v1.names import RICH_KIND_NAMES
from tuneplane.telemetry.v1.validation import InvalidBatch, parse, validate


class PoisonBatch(InvalidMessage):
    """The record can never be projected (undecodable or inconsistent); goes to the DLQ."""


@dataclass(frozen=True, slots=True)
class RecordMeta:
    partition: int
    offset: int
    key: bytes | None


#: Chunks with more points than this carry segment summaries.
SEGMENT_FROM = 256
SEGMENTS = 64


@dataclass(frozen=True, slots=True)
class Segments:
    """Equal-count pieces of a chunk (in read order), summarised."""

    first_steps: list[int]
    last_steps: list[int]
    counts: list[int]
    mins: list[float | None]
    maxs: list[float | None]
    lasts: list[float]
    last_walls: list[float]  # the wall time of each ``lasts`` value


def finite_range(values: list[float]) -> tuple[float | None, float | None]:
    """Min and max over the finite values (None when there are none), at C speed when
    every value is finite: a finite sum proves it."""
    if math.isfinite(sum(values)):
        return min(values), max(values)
    finite = [v for v in values if math.isfinite(v)]
    return (min(finite), max(finite)) if finite else (None, None)


def segments(steps: list[int], wall_times: list[float],
             values: list[float]) -> Segments | None:
    n = len(steps)
    if n <= SEGMENT_FROM:
        return None
    bounds = [n * i // SEGMENTS for i in range(SEGMENTS + 1)]
    out = Segments([], [], [], [], [], [], [])
    for start, end in itertools.pairwise(bounds):
        piece, piece_steps = values[start:end], steps[start:end]
        low, high = finite_range(piece)
        out.first_steps.append(min(piece_steps))
        out.last_steps.append(max(piece_steps))
        out.counts.append(end - start)
        out.mins.append(low)
        out.maxs.append(high)
        out.lasts.append(piece[-1])
        out.last_walls.append(wall_times[end - 1])
    return out


@dataclass(frozen=True, slots=True)
class ChunkRow:
    source: str
    run_path: str  # '' for the root, and for batches sealed before chunks carried it
    tag: str
    chunk_index: int
    steps: list[int]
    wall_times: list[float]
    values: list[float]
    step_min: int
    step_max: int
    v_min: float | None  # over finite values
    v_max: float | None
    v_first: float
    v_last: float
    w_first: float  # wall times of the first and last point (read order)
    w_last: float
    segments: Segments | None = None


@dataclass(frozen=True, slots=True)
class RichRow:
    """A rich record's metadata row; its bytes go to the object store under ``object_key``."""

    record_index: int
    source: str
    tag: str
    step: int
    wall_time: float
    kind: str
    plugin_name: str
    plugin_content: bytes
    file: str
    file_offset: int
    object_key: str
    payload: bytes


@dataclass(frozen=True, slots=True)
class StartRow:
    marker_index: int
    source: str
    file: str
    file_offset: int
    step: int
    wall_time: float
    tags: tuple[str, ...] = ()  # an out-of-order step's (old-style files); () a restart


@dataclass(frozen=True, slots=True)
class Projection:
    key: BatchKey
    meta: RecordMeta
    sealed_at: float
    points: int
    chunks: list[ChunkRow]
    rich: list[RichRow] = field(default_factory=list)
    session_starts: list[StartRow] = field(default_factory=list)


def object_key(payload: bytes) -> str:
    """Content-addressed: a replay, or the same bytes logged twice, writes the same object."""
    digest = hashlib.sha256(payload).hexdigest()
    return f"rich/sha256/{digest[:2]}/{digest}"


def rich_row(record: pb.RichRecord, index: int) -> RichRow:
    """A validated record's row (``validate`` refused kinds outside the enum)."""
    return RichRow(index, record.source, record.tag, record.step, record.wall_time,
                   RICH_KIND_NAMES[record.kind],
                   record.plugin_name, record.plugin_content, record.file, record.offset,
                   object_key(record.payload), record.payload)


def summarise(chunk: pb.SeriesChunk, index: int) -> ChunkRow:
    """A validated chunk's row (``validate`` refused empty chunks and unequal columns)."""
    steps, wall_times, values = list(chunk.steps), list(chunk.wall_times), list(chunk.values)
    low, high = finite_range(values)
    return ChunkRow(
        source=chunk.source, run_path=chunk.run_path, tag=chunk.tag, chunk_index=index,
        steps=steps, wall_times=wall_times, values=values,
        step_min=min(steps), step_max=max(steps), v_min=low, v_max=high,
        v_first=values[0], v_last=values[-1], w_first=wall_times[0], w_last=wall_times[-1],
        segments=segments(steps, wall_times, values),
    )


def project(payload: bytes, meta: RecordMeta) -> Projection:
    try:  # what ingest checks; a record that bypassed it, or older than the check, is poison
        batch = parse(payload)
        if not batch.HasField("identity") or not batch.identity.run_id:
            raise InvalidBatch("batch has no identity")
        validate(batch, len(payload))
    except InvalidBatch as exc:
        raise PoisonBatch(f"batch at {meta.partition}/{meta.offset}: {exc}") from None
    key = BatchKey.from_proto(batch.identity)
    if meta.key is not None and meta.key != key.kafka_key():
        raise PoisonBatch(f"record key {meta.key!r} does not match batch identity {key}")
    chunks = [summarise(chunk, i) for i, chunk in enumerate(batch.chunks)]
    return Projection(
        key, meta, batch.sealed_at, sum(len(c.steps) for c in chunks), chunks,
        rich=[rich_row(r, i) for i, r in enumerate(batch.rich)],
        session_starts=[StartRow(i, m.source, m.file, m.offset, m.step, m.wall_time,
                                 tuple(m.tags))
                        for i, m in enumerate(batch.session_starts)])
