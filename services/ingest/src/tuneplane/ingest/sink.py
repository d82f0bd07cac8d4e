"""Where durable batches go: the batches topic, through an idempotent acks=all producer. A
batch delivered late (under a delivery token) carries ``topics.LATE_HEADER``, so the read models
can list it."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.partitioner import murmur2

from tuneplane.common.kafka import topics
from tuneplane.ingest import metrics
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey
from tuneplane.telemetry.v1.limits import TOPIC_MAX_MESSAGE_BYTES


class SinkUnavailable(Exception):
    """Kafka did not confirm the batch; the caller must not ACK and the client retries."""


class BatchSink(Protocol):
    async def put(self, key: BatchKey, payload: bytes, *, late: bool = False) -> None:
        """Returns only once the batch is durable; raises SinkUnavailable otherwise."""
        ...


def partition_for(key: BatchKey, partitions: int) -> int:
    """One member's batches always land on one partition, so they stay ordered."""
    return member_partition(key.member, partitions)


def member_partition(member: MemberKey, partitions: int) -> int:
    hashed: int = murmur2(member.partition_key())
    return (hashed & 0x7FFFFFFF) % partitions


class KafkaBatchSink:
    def __init__(self, bootstrap: str, *, timeout_seconds: float = 15.0) -> None:
        self._timeout = timeout_seconds
        self._producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            enable_idempotence=True,
            max_request_size=TOPIC_MAX_MESSAGE_BYTES,
            request_timeout_ms=int(timeout_seconds * 1000),
            linger_ms=2,
        )
        self._partitions = 0

    async def start(self) -> None:
        await self._producer.start()
        self._partitions = await self._partition_count()

    async def stop(self) -> None:
        await self._producer.stop()

    def partition_of(self, member: MemberKey) -> int:
        """The partition the member's batches go to."""
        return member_partition(member, self._partitions)

    async def _partition_count(self) -> int:
        partitions = await self._producer.partitions_for(topics.BATCHES)
        if not partitions:
            raise SinkUnavailable(f"topic {topics.BATCHES} does not exist; "
                                  "run `tuneplane-admin topics`")
        return len(partitions)

    async def put(self, key: BatchKey, payload: bytes, *, late: bool = False) -> None:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._timeout):
                await self._producer.send_and_wait(
                    topics.BATCHES, payload, key=key.kafka_key(),
                    partition=partition_for(key, self._partitions),
                    headers=[(topics.LATE_HEADER, b"1")] if late else None)
        except (KafkaError, TimeoutError) as exc:
            raise SinkUnavailable(f"Kafka did not confirm batch {key}: {exc!r}") from exc
        metrics.PRODUCE_SECONDS.observe(time.perf_counter() - started)
