"""Replaying the batches topic into read models: from an offset or a time, or all of it.

The projector's pipeline on a ``KafkaRangeConsumer`` (no group, nothing committed): each
partition is read from the start point up to the end offset seen when the replay began,
through the same projection and writer as the live projector, so replaying into live read
models is idempotent (the ledger drops what is already there). Poison records are stepped
over: the live projector dead-letters them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tuneplane.common.kafka import topics
from tuneplane.common.kafka.adapter import KafkaRangeConsumer, StartAt
from tuneplane.common.kafka.poison import PoisonPolicy, StepOver
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


async def replay(bootstrap: str, writer: PostgresWriter, start: StartAt | Mapping[int, int], *,
                 group_batches: int = 256, progress: Progress | None = None,
                 ends: Mapping[int, int] | None = None,
                 topic: str = topics.BATCHES) -> tuple[ReplayReport, dict[int, int]]:
    """Replay ``topic`` from ``start`` (or per-partition offsets) up to ``ends`` (partition
    → end offset; default: the ends seen now). The dead-letter topic replays the same way
    (a redrive): its records are the batches as they were.

    Returns the report and the end offsets it replayed to.
    """
    consumer = KafkaRangeConsumer(bootstrap, topic)
    report = ReplayReport()
    await consumer.start(start, ends)
    try:
        pipeline = projector_pipeline(consumer, group_write(writer, retry=False),
                                      PoisonPolicy(StepOver(f"replay of {topic}"), limit=None),
                                      group_batches)
        last_report = time.monotonic()
        while not consumer.exhausted:
            group = await pipeline.run_once()
            report.records += len(group.messages)
            report.applied += group.applied
            report.duplicates += group.duplicates
            report.poison += group.poison
            if progress and (time.monotonic() - last_report > 1.0 or consumer.exhausted):
                progress(report.records, consumer.total)
                last_report = time.monotonic()
    finally:
        await consumer.stop()
    return report, consumer.ends
