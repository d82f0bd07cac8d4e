"""What one read step gathered for a batch: scalar columns per tag, rich records, markers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import (
    MAX_BATCH_RICH,
    MAX_BATCH_SERIES,
    MAX_BATCH_SESSION_STARTS,
)


@dataclass(slots=True)
class Series:
    steps: list[int] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


@dataclass(slots=True)
class BatchDraft:
    """Points of one source, one column set per tag in read order, plus rich records.
    ``run_path`` is the TensorBoard run the points belong to (one event file's directory
    below the log directory; empty for the root and other sources)."""

    source: str
    run_path: str = ""
    series: dict[str, Series] = field(default_factory=dict)
    rich: list[pb.RichRecord] = field(default_factory=list)
    session_starts: list[pb.SessionStart] = field(default_factory=list)
    points: int = 0
    approx_bytes: int = 0

    #: Upper bound of the encoded size of one point (three packed 8-byte numbers + varint slack).
    POINT_BYTES = 30
    #: Framing of one chunk or record besides its names and payload.
    ENTRY_BYTES = 32

    def cost(self, metrics: list[tuple[str, float]]) -> int:
        """Encoded bytes that adding ``metrics`` would cost at most."""
        cost, series = len(metrics) * self.POINT_BYTES, self.series
        for tag, _ in metrics:  # a loop, not a generator: this runs for every line read
            if tag not in series:
                cost += len(tag.encode()) + self.chunk_names_bytes()
        return cost

    def chunk_names_bytes(self) -> int:
        """What a new chunk costs besides its tag and points: its source and run path."""
        return len(self.source) + len(self.run_path.encode()) + self.ENTRY_BYTES

    def add(self, step: int, wall_time: float, metrics: list[tuple[str, float]],
            cost: int | None = None) -> None:
        """Add one line's metrics; ``cost`` is ``self.cost(metrics)`` if the caller has it."""
        self.approx_bytes += self.cost(metrics) if cost is None else cost
        for tag, value in metrics:
            series = self.series.get(tag)
            if series is None:
                series = self.series[tag] = Series()
            series.steps.append(step)
            series.wall_times.append(wall_time)
            series.values.append(value)
        self.points += len(metrics)

    def add_point(self, tag: str, step: int, wall_time: float, value: float) -> None:
        """One point: the hot path of TensorBoard reading."""
        series = self.series.get(tag)
        if series is None:
            series = self.series[tag] = Series()
            self.approx_bytes += len(tag.encode()) + self.chunk_names_bytes()
        series.steps.append(step)
        series.wall_times.append(wall_time)
        series.values.append(value)
        self.points += 1
        self.approx_bytes += self.POINT_BYTES

    def extend(self, tag: str, steps: list[int], wall_times: list[float],
               values: list[float]) -> None:
        """Points of one tag at once, as ``add_point`` one by one would add them."""
        series = self.series.get(tag)
        if series is None:
            series = self.series[tag] = Series()
            self.approx_bytes += len(tag.encode()) + self.chunk_names_bytes()
        series.steps += steps
        series.wall_times += wall_times
        series.values += values
        self.points += len(steps)
        self.approx_bytes += self.POINT_BYTES * len(steps)

    @classmethod
    def rich_cost(cls, record: pb.RichRecord) -> int:
        return record.ByteSize() + cls.ENTRY_BYTES

    def add_rich(self, record: pb.RichRecord) -> None:
        self.approx_bytes += self.rich_cost(record)
        self.rich.append(record)

    def add_session_start(self, marker: pb.SessionStart) -> None:
        self.approx_bytes += marker.ByteSize() + self.ENTRY_BYTES
        self.session_starts.append(marker)

    def crowded(self, scalars: Sequence[tuple[Any, ...]] = (), rich: int = 0,
                markers: int = 0) -> bool:
        """Adding these (scalars as (tag, ...) tuples) would pass a count bound of the
        contract: series, rich records or markers per batch. The batch is sealed before."""
        if len(self.rich) + rich > MAX_BATCH_RICH or \
                len(self.session_starts) + markers > MAX_BATCH_SESSION_STARTS:
            return True
        if len(self.series) + len(scalars) <= MAX_BATCH_SERIES:
            return False
        new = {item[0] for item in scalars if item[0] not in self.series}
        return len(self.series) + len(new) > MAX_BATCH_SERIES

    def empty(self) -> bool:
        return not (self.points or self.rich or self.session_starts)

    def chunks(self) -> list[pb.SeriesChunk]:
        return [pb.SeriesChunk(source=self.source, run_path=self.run_path, tag=tag, steps=s.steps,
                               wall_times=s.wall_times, values=s.values)
                for tag, s in self.series.items()]


@dataclass(frozen=True, slots=True)
class Position:
    """Where reading a file resumes."""

    offset: int = 0
    line: int = 1     # number of the next line (JSONL); unused for event files
    state: str = ""   # what the reader must remember about the file, as JSON


@dataclass(slots=True)
class ReadStep:
    """What one read of one file gathered, and where the next read starts."""

    draft: BatchDraft
    position: Position
    problems: list[str] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)  # refused records, by reason
    at_end: bool = False  # nothing more to read now (at most a record still being written)
