"""The pipeline's ports over aiokafka: a consumer group, a replay of offset ranges, and
the dead-letter topic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from tuneplane.common.kafka import topics
from tuneplane.common.kafka.message import Message, dead_letter_headers, late_in

#: Batches are up to 4 MiB: fetch whole groups of them at once.
FETCH = {"max_partition_fetch_bytes": 16 << 20, "fetch_max_bytes": 64 << 20}


def to_message(record: ConsumerRecord[bytes, bytes]) -> Message:
    return Message(record.partition, record.offset, record.key, record.value or b"",
                   record.timestamp, late_in(record.headers))


def flatten(fetched: Mapping[TopicPartition, Iterable[ConsumerRecord[bytes, bytes]]],
            ) -> list[Message]:
    return [to_message(r) for tp in sorted(fetched, key=lambda tp: tp.partition)
            for r in fetched[tp]]


class KafkaGroupConsumer:
    """A member of a consumer group on one topic; ``commit`` commits what was polled."""

    def __init__(self, bootstrap: str, group: str, topic: str = topics.BATCHES, *,
                 offset_reset: str = "latest") -> None:
        self._consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                          enable_auto_commit=False,
                                          auto_offset_reset=offset_reset, **FETCH)

    async def start(self) -> None:
        await self._consumer.start()

    async def stop(self) -> None:
        await self._consumer.stop()

    async def poll(self, max_records: int, within: float) -> Sequence[Message]:
        return flatten(await self._consumer.getmany(timeout_ms=int(within * 1000),
                                                    max_records=max_records))

    async def commit(self) -> None:
        await self._consumer.commit()

    async def lags(self) -> dict[int, int]:
        """Records behind each assigned partition's end (its high watermark as last
        fetched), from the position polled up to; partitions not fetched yet are left out."""
        found: dict[int, int] = {}
        for tp in self._consumer.assignment():
            end = self._consumer.highwater(tp)
            if end is not None:
                found[tp.partition] = max(0, end - await self._consumer.position(tp))
        return found


@dataclass(frozen=True, slots=True)
class StartAt:
    """Where each partition's replay starts: an offset, a time (ms since epoch), or 0."""

    offset: int | None = None
    timestamp_ms: int | None = None


class KafkaRangeConsumer:
    """Each partition of the topic from a start up to an end offset, in no group: replays
    commit nothing (``commit`` does nothing), so they never move a live group."""

    def __init__(self, bootstrap: str, topic: str = topics.BATCHES) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        # "none": a range whose start the log has passed (trimmed under it) fails loudly;
        # it is never skipped to the end.
        self._consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                          enable_auto_commit=False, auto_offset_reset="none",
                                          **FETCH)
        self._todo: dict[TopicPartition, int] = {}
        self.ends: dict[int, int] = {}
        #: Each partition's log start when the range was set (below it, Kafka holds nothing).
        self.beginnings: dict[int, int] = {}
        self.total = 0

    async def start(self, start: StartAt | Mapping[int, int],
                    ends: Mapping[int, int] | None = None) -> None:
        """Seek every partition to ``start`` (or per-partition offsets); the range ends at
        ``ends`` (partition → end offset; default: the ends seen now)."""
        await self._consumer.start()
        partitions = [TopicPartition(self._topic, p)
                      for p in sorted(await partitions_of(self._bootstrap, self._topic))]
        self._consumer.assign(partitions)
        self.ends = dict(ends) if ends is not None else {
            tp.partition: end for tp, end in (await self._consumer.end_offsets(partitions)).items()}
        starts = await self._start_offsets(partitions, start)
        self._todo = {tp: self.ends[tp.partition] for tp in partitions
                      if starts[tp] < self.ends[tp.partition]}
        self.total = sum(self.ends[tp.partition] - starts[tp] for tp in self._todo)
        for tp in partitions:
            self._consumer.seek(tp, starts[tp])
        idle = [tp for tp in partitions if tp not in self._todo]
        if idle:
            self._consumer.pause(*idle)

    async def _start_offsets(self, partitions: list[TopicPartition],
                             start: StartAt | Mapping[int, int]) -> dict[TopicPartition, int]:
        beginning = await self._consumer.beginning_offsets(partitions)
        self.beginnings = {tp.partition: offset for tp, offset in beginning.items()}
        if not isinstance(start, StartAt):
            return {tp: max(beginning[tp], start.get(tp.partition, 0)) for tp in partitions}
        if start.timestamp_ms is not None:
            found = await self._consumer.offsets_for_times(
                {tp: start.timestamp_ms for tp in partitions})
            ends = await self._consumer.end_offsets(partitions)
            return {tp: found[tp].offset if found[tp] is not None else ends[tp]
                    for tp in partitions}
        return {tp: max(beginning[tp], start.offset or 0) for tp in partitions}

    @property
    def exhausted(self) -> bool:
        """Every partition has been read up to its end."""
        return not self._todo

    async def poll(self, max_records: int, within: float) -> Sequence[Message]:
        if not self._todo:
            return []
        fetched = await self._consumer.getmany(*self._todo, timeout_ms=int(within * 1000),
                                               max_records=max_records)
        taken = [m for m in flatten(fetched)
                 if m.offset < self.ends[m.partition]]
        for tp in list(self._todo):
            if await self._consumer.position(tp) >= self._todo[tp]:
                self._consumer.pause(tp)
                del self._todo[tp]
        return taken

    async def commit(self) -> None:
        """Nothing to commit: a replay has no group."""

    async def stop(self) -> None:
        await self._consumer.stop()


class KafkaDeadLetters:
    """The dead-letter topic: the record as it was, its reason and origin in headers, on the
    same partition number as its source (the DLQ mirrors the topic's layout)."""

    def __init__(self, producer: AIOKafkaProducer, topic: str = topics.BATCHES_DLQ) -> None:
        self._producer = producer
        self._topic = topic

    async def send(self, message: Message, reason: str) -> None:
        await self._producer.send_and_wait(self._topic, message.value, key=message.key,
                                           partition=message.partition,
                                           headers=dead_letter_headers(message, reason))


async def partitions_of(bootstrap: str, topic: str = topics.BATCHES) -> set[int]:
    """A topic's partitions (a producer fetches a topic's metadata on request)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        return set(await producer.partitions_for(topic))
    finally:
        await producer.stop()
