"""The project's Kafka topics, created with explicit settings (never broker defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from tuneplane.common.kafka import message
from tuneplane.contract.parsers import positive
from tuneplane.contract.settings import Settings, setting
from tuneplane.telemetry.v1.limits import TOPIC_MAX_MESSAGE_BYTES

#: The system of record: every durable batch, keyed by its batch identity.
BATCHES = "tuneplane.telemetry.batches.v1"
#: Batches the projector could not decode or project, with the reason in a header.
BATCHES_DLQ = "tuneplane.telemetry.batches.v1.dlq"
#: The header (value ``b"1"``) of a batch ingest took under a delivery token: delivered late.
LATE_HEADER = message.LATE_HEADER


class TopicSettings(Settings):
    """How the project creates its topics: 3/2 replication in production, 1/1 on one broker."""

    partitions: int = setting(
        "TUNEPLANE_TOPIC_PARTITIONS", parse=positive, default=12,
        help="partitions of the batches topic and its dead-letter topic when `tuneplane-admin "
             "init` creates them; bounds how many projector workers share the load")
    replication: int = setting(
        "TUNEPLANE_TOPIC_REPLICATION", parse=positive, default=1,
        help="replication factor of the topics `tuneplane-admin init` creates (3 in production)")
    min_insync: int = setting(
        "TUNEPLANE_TOPIC_MIN_INSYNC", parse=positive, shown="min(2, TUNEPLANE_TOPIC_REPLICATION)",
        derive=lambda earlier: min(2, earlier["replication"]),
        help="`min.insync.replicas` of the topics `tuneplane-admin init` creates")


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]


def topic_specs(settings: TopicSettings) -> list[TopicSpec]:
    common = {
        "min.insync.replicas": str(settings.min_insync),
        "unclean.leader.election.enable": "false",
        "max.message.bytes": str(TOPIC_MAX_MESSAGE_BYTES),
        "cleanup.policy": "delete",
    }
    return [
        # retention -1: the batches topic is replayed to rebuild read models; what is
        # archived below (`tuneplane-projector archive --trim`) leaves it segment by
        # segment, so segments are small enough to go (64 MiB).
        TopicSpec(BATCHES, settings.partitions, {**common, "retention.ms": "-1",
                                                 "segment.bytes": str(64 << 20)}),
        TopicSpec(BATCHES_DLQ, settings.partitions, {**common, "retention.ms": "-1"}),
    ]


async def ensure_topics(bootstrap: str, settings: TopicSettings) -> list[str]:
    """Create missing topics; returns the names created. Existing topics are left as they are."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    await admin.start()
    created: list[str] = []
    try:
        existing = set(await admin.list_topics())
        for spec in topic_specs(settings):
            if spec.name in existing:
                continue
            try:
                await admin.create_topics([NewTopic(
                    spec.name, spec.partitions, settings.replication, topic_configs=spec.config)])
                created.append(spec.name)
            except TopicAlreadyExistsError:
                pass  # another replica created it first
    finally:
        await admin.close()
    return created


async def topic_partitions(bootstrap: str, topic: str = BATCHES) -> list[TopicPartition]:
    """The topic's partitions, in order (as the cluster's metadata says now)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        return [TopicPartition(topic, p) for p in sorted(await producer.partitions_for(topic))]
    finally:
        await producer.stop()


async def commit_group_at_end(bootstrap: str, group: str, topic: str = BATCHES) -> None:
    """Commit ``group``'s offsets at the topic's current end: consumers joining it take only
    what is produced from now on (an exporter turning on, a benchmark's own projectors)."""
    partitions = await topic_partitions(bootstrap, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(partitions)
        await consumer.commit(dict(await consumer.end_offsets(partitions)))
    finally:
        await consumer.stop()


async def records_held(bootstrap: str, topic: str) -> dict[int, int]:
    """Records each partition of ``topic`` holds now, by partition: its end offset less its
    start (which retention and a trim move). The dead-letter topic's is what waits there for
    a person: batches to redrive after a fix, then trim away."""
    partitions = await topic_partitions(bootstrap, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        starts = await consumer.beginning_offsets(partitions)
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    return {tp.partition: max(0, ends[tp] - starts[tp]) for tp in partitions}
