"""Projection of one batch: a pure function of (batch bytes, Kafka metadata) to typed rows."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tuneplane.common.kafka.message import InvalidMessage
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey
from tuneplane.telemetry.v1.names import CONFIG_ORIGIN_NAMES, RICH_KIND_NAMES
from tuneplane.telemetry.v1.validation import InvalidBatch, parse, validate


class PoisonBatch(InvalidMessage):
    """The record can never be projected (undecodable or inconsistent); goes to the DLQ."""


@dataclass(frozen=True, slots=True)
class RecordMeta:
    partition: int
    offset: int
    key: bytes | None
    #: Delivered late (the record's header said so).
    late: bool = False


Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

#: Chunks with more points than this carry segment summaries: one a ``SEGMENT_POINTS``
#: points, at most ``MAX_SEGMENTS``. A 1M-point series in chunks of 2,000 has 8,000, four
#: to each of a chart's 2,000 buckets; finer (64 a chunk, before) cost ~1 B a point stored
#: and most of what a chart's answer read from PostgreSQL.
SEGMENT_FROM = 256
SEGMENT_POINTS = 128
MAX_SEGMENTS = 64


@dataclass(frozen=True, slots=True)
class Segments:
    """Equal-count pieces of a chunk (in read order), summarised."""

    first_steps: Ints
    last_steps: Ints
    counts: Ints
    mins: list[float | None]  # over the piece's finite values; None when it has none
    maxs: list[float | None]
    lasts: Floats
    last_walls: Floats  # the wall time of each ``lasts`` value


def finite_range(values: Floats) -> tuple[float | None, float | None]:
    """Min and max over the finite values (None when there are none)."""
    low, high = float(values.min()), float(values.max())
    if math.isfinite(low) and math.isfinite(high):
        return low, high  # NaN would have made both NaN
    finite = values[np.isfinite(values)]
    return (float(finite.min()), float(finite.max())) if len(finite) else (None, None)


def _bounded(extremes: Floats) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in extremes.tolist()]


def segments(steps: Ints, wall_times: Floats, values: Floats) -> Segments | None:
    n = len(steps)
    if n <= SEGMENT_FROM:
        return None
    pieces = min(MAX_SEGMENTS, n // SEGMENT_POINTS)
    starts = np.arange(pieces, dtype=np.int64) * n // pieces
    ends = np.append(starts[1:], n) - 1
    finite = np.isfinite(values)
    # A piece's min over finite values: the others count as +inf (-inf for the max), and
    # a piece left at +inf (-inf) has no finite value.
    lows = np.minimum.reduceat(np.where(finite, values, np.inf), starts)
    highs = np.maximum.reduceat(np.where(finite, values, -np.inf), starts)
    return Segments(first_steps=np.minimum.reduceat(steps, starts),
                    last_steps=np.maximum.reduceat(steps, starts),
                    counts=np.diff(np.append(starts, n)), mins=_bounded(lows),
                    maxs=_bounded(highs), lasts=values[ends], last_walls=wall_times[ends])


@dataclass(frozen=True, slots=True)
class ChunkRow:
    source: str
    run_path: str  # '' for the root, and for batches sealed before chunks carried it
    tag: str
    chunk_index: int
    steps: Ints
    wall_times: Floats
    values: Floats
    step_min: int
    step_max: int
    v_min: float | None  # over finite values
    v_max: float | None
    v_first: float
    v_last: float
    w_first: float  # wall times of the first and last point (read order)
    w_last: float
    segments: Segments | None = None
    walls_read: bool = False  # the wall times are the collector's clock when it read them


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
class ConfigRow:
    """One setting as its member declared it; a later batch's entry of the key replaces it."""

    source: str
    key: str
    value: float | str | bool
    wall_time: float
    origin: str
    run_path: str


def config_row(entry: pb.ConfigEntry) -> ConfigRow:
    """A validated entry's row (``validate`` refused one without a value or origin)."""
    held = entry.WhichOneof("value")
    value: float | str | bool = (entry.number if held == "number" else
                                 entry.text if held == "text" else entry.flag)
    return ConfigRow(entry.source, entry.key, value, entry.wall_time,
                     CONFIG_ORIGIN_NAMES[entry.origin], entry.run_path)


@dataclass(frozen=True, slots=True)
class Projection:
    key: BatchKey
    meta: RecordMeta
    sealed_at: float
    points: int
    chunks: list[ChunkRow]
    rich: list[RichRow] = field(default_factory=list)
    session_starts: list[StartRow] = field(default_factory=list)
    config: list[ConfigRow] = field(default_factory=list)
    #: Where the batch's file was read to (None: a batch of before, or its state too long).
    position: pb.SourcePosition | None = None


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
    # The repeated fields' buffers, copied once (no Python object per element).
    steps = np.array(chunk.steps, dtype=np.int64)
    wall_times = np.array(chunk.wall_times, dtype=np.float64)
    values = np.array(chunk.values, dtype=np.float64)
    low, high = finite_range(values)
    return ChunkRow(
        source=chunk.source, run_path=chunk.run_path, tag=chunk.tag, chunk_index=index,
        steps=steps, wall_times=wall_times, values=values,
        step_min=int(steps.min()), step_max=int(steps.max()), v_min=low, v_max=high,
        v_first=float(values[0]), v_last=float(values[-1]), w_first=float(wall_times[0]),
        w_last=float(wall_times[-1]),
        segments=segments(steps, wall_times, values), walls_read=chunk.wall_times_read,
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
                        for i, m in enumerate(batch.session_starts)],
        config=[config_row(e) for e in batch.config],
        position=batch.position if batch.HasField("position") else None)
