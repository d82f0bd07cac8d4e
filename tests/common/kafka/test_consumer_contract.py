"""One contract for every ``Consumer`` adapter, run against the in-memory broker and a
real Kafka: the fake behaves as the broker does where the pipeline relies on it."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.support.environment import Endpoints
from tuneplane.common.kafka.adapter import KafkaGroupConsumer
from tuneplane.common.kafka.memory import MemoryBroker, MemoryConsumer
from tuneplane.common.kafka.message import Message
from tuneplane.common.kafka.port import Consumer


class Broker(Protocol):
    async def produce(self, values: Sequence[bytes]) -> None: ...
    async def join(self, group: str) -> Consumer: ...
    async def leave(self, consumer: Consumer) -> None: ...


async def take(consumer: Consumer, count: int, seconds: float = 30.0) -> list[Message]:
    """Polls until ``count`` records came (a group's first poll waits for its join)."""
    taken: list[Message] = []
    deadline = time.monotonic() + seconds
    while len(taken) < count and time.monotonic() < deadline:
        taken.extend(await consumer.poll(count - len(taken), 0.5))
    return taken


class ConsumerContract:
    async def test_records_come_in_order_with_key_and_value(self, broker: Broker) -> None:
        await broker.produce([b"a", b"b", b"c"])
        consumer = await broker.join("g1")
        got = await take(consumer, 3)
        assert [(m.partition, m.offset, m.value) for m in got] == [
            (0, 0, b"a"), (0, 1, b"b"), (0, 2, b"c")]
        assert await consumer.poll(10, 0.5) == []  # nothing more, and no repeats
        await broker.leave(consumer)

    async def test_a_new_member_resumes_after_the_commit(self, broker: Broker) -> None:
        await broker.produce([b"a", b"b"])
        first = await broker.join("g2")
        assert len(await take(first, 2)) == 2
        await first.commit()
        await broker.leave(first)
        await broker.produce([b"c"])
        second = await broker.join("g2")
        assert [m.value for m in await take(second, 1)] == [b"c"]
        assert await second.poll(10, 0.5) == []
        await broker.leave(second)

    async def test_what_was_polled_but_not_committed_comes_again(self, broker: Broker) -> None:
        await broker.produce([b"a", b"b"])
        first = await broker.join("g3")
        assert len(await take(first, 2)) == 2
        await broker.leave(first)  # dies before its commit
        second = await broker.join("g3")
        assert [m.value for m in await take(second, 2)] == [b"a", b"b"]
        await broker.leave(second)


class InMemory:
    def __init__(self) -> None:
        self.broker = MemoryBroker()

    async def produce(self, values: Sequence[bytes]) -> None:
        for value in values:
            self.broker.produce(value)

    async def join(self, group: str) -> MemoryConsumer:
        return self.broker.consumer(group)

    async def leave(self, consumer: Consumer) -> None:
        pass


class RealKafka:
    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.suffix = uuid.uuid4().hex[:8]

    async def produce(self, values: Sequence[bytes]) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        await producer.start()
        try:
            for value in values:
                await producer.send_and_wait(self.topic, value, partition=0)
        finally:
            await producer.stop()

    async def join(self, group: str) -> KafkaGroupConsumer:
        consumer = KafkaGroupConsumer(self.bootstrap, f"{group}-{self.suffix}", self.topic,
                                      offset_reset="earliest")
        await consumer.start()
        return consumer

    async def leave(self, consumer: Consumer) -> None:
        assert isinstance(consumer, KafkaGroupConsumer)
        await consumer.stop()


class TestInMemoryBroker(ConsumerContract):
    @pytest.fixture
    def broker(self) -> InMemory:
        return InMemory()


class TestKafka(ConsumerContract):
    @pytest.fixture
    async def broker(self, endpoints: Endpoints) -> AsyncIterator[RealKafka]:
        bootstrap = endpoints.kafka_bootstrap
        topic = f"tuneplane.test.contract.{uuid.uuid4().hex[:8]}"
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 1, 1)])
            yield RealKafka(bootstrap, topic)
            await admin.delete_topics([topic])
        finally:
            await admin.close()
