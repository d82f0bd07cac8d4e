"""The batches topic as ingest fills it, and consumer groups placed at its end."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaProducer

from tuneplane.common.kafka import topics
from tuneplane.common.kafka.committed import GroupPosition
from tuneplane.ingest.sink import partition_for
from tuneplane.projector.settings import CONSUMER_GROUP
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey


async def produce(bootstrap: str, batches: list[pb.Batch], *, late: bool = False) -> None:
    """Put batches on the topic exactly as ingest does (key, partition, acks=all; marked
    late as ingest marks a batch taken under a delivery token)."""
    await produce_payloads(bootstrap, [(BatchKey.from_proto(b.identity), b.SerializeToString())
                                       for b in batches], late=late)


async def produce_payloads(bootstrap: str, records: list[tuple[BatchKey, bytes]],
                           topic: str = topics.BATCHES, *, late: bool = False) -> None:
    """Put records on ``topic`` keyed and placed as ingest would, whatever their bytes (poison
    written around ingest, or into the dead-letter topic)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                enable_idempotence=True, max_request_size=8 << 20,
                                linger_ms=5)
    await producer.start()
    try:
        partitions = len(await producer.partitions_for(topic))
        sent = [await producer.send(topic, payload, key=key.kafka_key(),
                                    partition=partition_for(key, partitions),
                                    headers=[(topics.LATE_HEADER, b"1")] if late else None)
                for key, payload in records]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def group_at_end(bootstrap: str, group: str) -> dict[str, str]:
    """A projector group committed at the topic's end (no backlog of earlier runs); returns
    the settings that put a projector in it."""
    await topics.commit_group_at_end(bootstrap, group)
    return {"TUNEPLANE_PROJECTOR_GROUP": group}


async def projected_to_end(bootstrap: str, group: str = CONSUMER_GROUP,
                           timeout: float = 120.0) -> None:
    """Returns once ``group`` (the projectors) has committed past every batch on the topic
    now (``GroupPosition.passed``): no row of any batch produced before the call can arrive
    after this. The barrier for "nothing more arrives" checks (the batches' producers,
    collectors and ingest, are done by then)."""
    position = GroupPosition(bootstrap, group)
    await position.start()
    try:
        behind = await position.passed(await topics.topic_partitions(bootstrap),
                                       within=timeout)
        assert not behind, (f"group {group} still behind the topic's end after {timeout:.0f} s "
                            f"(partition: committed, end): {behind}")
    finally:
        await position.stop()

