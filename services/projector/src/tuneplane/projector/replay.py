"""Replaying the batches topic into read models: from an offset or a time, or all of it.

Uses its own consumer with manual assignment (no group, nothing committed): it reads
each partition from the start point up to the end offset it saw when it began and
writes through the same projection and writer as the live projector, so replaying
into live read models is idempotent (the ledger drops what is already there).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tuneplane.common.kafka import topics
from tuneplane.projector.projection import PoisonBatch, RecordMeta, project
from tuneplane.projector.writer import PostgresWriter

log = logging.getLogger("tuneplane.projector.replay")


@dataclass(frozen=True, slots=True)
class StartAt:
    """Where each partition's replay starts: an offset, a time (ms since epoch), or 0."""

    offset: int | None = None
    timestamp_ms: int | None = None


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


async def _start_offsets(consumer: AIOKafkaConsumer, partitions: list[TopicPartition],
                         start: StartAt | dict[int, int]) -> dict[TopicPartition, int]:
    beginning = await consumer.beginning_offsets(partitions)
    if isinstance(start, dict):
        return {tp: max(beginning[tp], start.get(tp.partition, 0)) for tp in partitions}
    if start.timestamp_ms is not None:
        found = await consumer.offsets_for_times({tp: start.timestamp_ms for tp in partitions})
        ends = await consumer.end_offsets(partitions)
        return {tp: found[tp].offset if found[tp] is not None else ends[tp] for tp in partitions}
    return {tp: max(beginning[tp], start.offset or 0) for tp in partitions}


async def replay(bootstrap: str, writer: PostgresWriter, start: StartAt | dict[int, int], *,
                 group_batches: int = 256, progress: Progress | None = None,
                 ends: dict[int, int] | None = None) -> tuple[ReplayReport, dict[int, int]]:
    """Replay from ``start`` (or per-partition offsets) up to ``ends`` (partition → end
    offset; default: the ends seen now).

    Returns the report and the end offsets it replayed to.
    """
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                group_id=None, max_partition_fetch_bytes=16 << 20,
                                fetch_max_bytes=64 << 20)
    await consumer.start()
    report = ReplayReport()
    try:
        partitions = [TopicPartition(topics.BATCHES, p)
                      for p in sorted(await partitions_of(bootstrap))]
        consumer.assign(partitions)
        if ends is None:
            ends = {tp.partition: end
                    for tp, end in (await consumer.end_offsets(partitions)).items()}
        starts = await _start_offsets(consumer, partitions, start)
        todo = {tp: ends[tp.partition] for tp in partitions if starts[tp] < ends[tp.partition]}
        total = sum(ends[tp.partition] - starts[tp] for tp in todo)
        for tp in partitions:
            consumer.seek(tp, starts[tp])
        if todo:
            consumer.pause(*[tp for tp in partitions if tp not in todo])
        last_report = time.monotonic()
        while todo:
            fetched = await consumer.getmany(*todo, timeout_ms=1000, max_records=group_batches)
            projections = []
            for tp, messages in fetched.items():
                for message in messages:
                    if tp not in todo or message.offset >= todo[tp]:
                        continue
                    report.records += 1
                    try:
                        projections.append(project(message.value, RecordMeta(
                            message.partition, message.offset, message.key)))
                    except PoisonBatch as exc:
                        report.poison += 1
                        log.warning("skipping poison batch at %s/%s (dead-lettered by the "
                                    "live projector): %s", tp.partition, message.offset, exc)
                if tp in todo and await consumer.position(tp) >= todo[tp]:
                    consumer.pause(tp)
                    del todo[tp]
            if projections:
                applied = await writer.write_group(projections)
                report.applied += sum(applied)
                report.duplicates += len(applied) - sum(applied)
            if progress and (time.monotonic() - last_report > 1.0 or not todo):
                progress(report.records, total)
                last_report = time.monotonic()
    finally:
        await consumer.stop()
    return report, ends


async def partitions_of(bootstrap: str) -> set[int]:
    """The batches topic's partitions (a producer fetches a topic's metadata on request)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        return set(await producer.partitions_for(topics.BATCHES))
    finally:
        await producer.stop()
