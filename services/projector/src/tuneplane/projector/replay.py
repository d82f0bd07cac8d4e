"""Replaying the batches topic into read models: from an offset or a time, or all of it,
what Kafka no longer holds read from the topic's archive (``archiver``).

The projector's pipeline on a ``KafkaRangeConsumer`` (no group, nothing committed): each
partition is read from the start point up to the end offset seen when the replay began,
through the same projection and writer as the live projector, so replaying into live read
models is idempotent (the ledger drops what is already there). Poison records are stepped
over: the live projector dead-letters them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tuneplane.common.kafka import topics
from tuneplane.common.kafka.adapter import KafkaRangeConsumer, StartAt
from tuneplane.common.kafka.message import Message
from tuneplane.common.kafka.poison import PoisonPolicy, StepOver
from tuneplane.projector.archiver import ArchiveReader
from tuneplane.projector.pipeline import group_write, projector_pipeline
from tuneplane.projector.writer import PostgresWriter


@dataclass(slots=True)
class ReplayReport:
    records: int = 0
    applied: int = 0
    duplicates: int = 0
    poison: int = 0

    def add(self, other: ReplayReport) -> None:
        self.records += other.records
        self.applied += other.applied
        self.duplicates += other.duplicates
        self.poison += other.poison


Progress = Callable[[int, int], None]  # (records done, records to do)


class Source(Protocol):
    """A replay's records: a range of a topic, or of its archive."""

    total: int

    @property
    def exhausted(self) -> bool: ...

    async def poll(self, max_records: int, within: float) -> Sequence[Message]: ...

    async def commit(self) -> None: ...


async def drain(source: Source, writer: PostgresWriter, report: ReplayReport, what: str,
                group_batches: int, progress: Progress | None) -> None:
    """Project every record of ``source`` through the projector's pipeline."""
    pipeline = projector_pipeline(source, group_write(writer, retry=False),
                                  PoisonPolicy(StepOver(f"replay of {what}"), limit=None),
                                  group_batches)
    last_report = time.monotonic()
    while not source.exhausted:
        group = await pipeline.run_once()
        report.records += len(group.messages)
        report.applied += group.applied
        report.duplicates += group.duplicates
        report.poison += group.poison
        if progress and (time.monotonic() - last_report > 1.0 or source.exhausted):
            progress(report.records, source.total)
            last_report = time.monotonic()


async def replay(bootstrap: str, writer: PostgresWriter, start: StartAt | Mapping[int, int], *,
                 group_batches: int = 256, progress: Progress | None = None,
                 ends: Mapping[int, int] | None = None, topic: str = topics.BATCHES,
                 archived: ArchiveReader | None = None) -> tuple[ReplayReport, dict[int, int]]:
    """Replay ``topic`` from ``start`` (or per-partition offsets) up to ``ends`` (partition
    → end offset; default: the ends seen now): first what ``archived`` holds below each
    partition's log start (what Kafka no longer has), then Kafka. The dead-letter topic
    replays the same way (a redrive): its records are the batches as they were.

    Returns the report and the end offsets it replayed to.
    """
    consumer = KafkaRangeConsumer(bootstrap, topic)
    report = ReplayReport()
    await consumer.start(start, ends)
    try:
        below = {p: low for p, low in consumer.beginnings.items() if low > 0}
        if archived is not None and below:
            if isinstance(start, StartAt):
                await archived.start({p: start.offset or 0 for p in below}, below,
                                     since_ms=start.timestamp_ms)
            else:
                await archived.start(start, below)
            await drain(archived, writer, report, f"{topic}'s archive", group_batches,
                        progress)
        await drain(consumer, writer, report, topic, group_batches, progress)
    finally:
        await consumer.stop()
    return report, consumer.ends
