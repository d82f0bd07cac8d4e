"""What a topic holds (end less start offsets, a trim moving the start) and a group
consumer's lag by partition, on a scratch topic of the real Kafka: the figures the
projector's dead-letter gauge and the exporter's lag gauge are made of."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete

from tests.common.kafka.test_consumer_contract import take
from tests.support.environment import Endpoints
from tuneplane.common.kafka.adapter import KafkaGroupConsumer
from tuneplane.common.kafka.topics import records_held


@pytest.fixture
async def topic(endpoints: Endpoints) -> AsyncIterator[str]:
    """A scratch topic of two partitions: three records on 0, two on 1."""
    name = f"tuneplane.test.held.{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=endpoints.kafka_bootstrap)
    await admin.start()
    producer = AIOKafkaProducer(bootstrap_servers=endpoints.kafka_bootstrap, acks="all")
    try:
        await admin.create_topics([NewTopic(name, 2, 1)])
        await producer.start()
        for partition, count in ((0, 3), (1, 2)):
            for n in range(count):
                await producer.send_and_wait(name, b"%d" % n, partition=partition)
        yield name
        await admin.delete_topics([name])
    finally:
        await producer.stop()
        await admin.close()


async def test_a_topic_holds_its_end_less_its_start(endpoints: Endpoints, topic: str) -> None:
    assert await records_held(endpoints.kafka_bootstrap, topic) == {0: 3, 1: 2}
    admin = AIOKafkaAdminClient(bootstrap_servers=endpoints.kafka_bootstrap)
    await admin.start()
    try:  # a trim, as `tuneplane-projector archive --trim` makes one
        await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(2)})
    finally:
        await admin.close()
    assert await records_held(endpoints.kafka_bootstrap, topic) == {0: 1, 1: 2}


async def test_a_group_consumers_lag_is_what_it_has_not_polled(endpoints: Endpoints,
                                                                topic: str) -> None:
    consumer = KafkaGroupConsumer(endpoints.kafka_bootstrap, f"held-{uuid.uuid4().hex[:8]}",
                                  topic, offset_reset="earliest")
    await consumer.start()
    try:
        first = await take(consumer, 1)  # polled one at most
        (one,) = first
        lags = await consumer.lags()
        assert lags[one.partition] == {0: 3, 1: 2}[one.partition] - 1
        assert len(await take(consumer, 4)) == 4
        assert await consumer.lags() == {0: 0, 1: 0}
    finally:
        await consumer.stop()
