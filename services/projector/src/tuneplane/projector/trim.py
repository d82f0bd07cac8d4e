"""Trimming the topic below its archive (``tuneplane-projector archive --trim``): each
partition's log start moved with Kafka's DeleteRecords to the archived end, never past the
committed offset of a group that must not miss a record, under the archive lock and the
trim lock (no replay reads meanwhile)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from aiokafka.errors import KafkaError
from aiokafka.structs import OffsetAndMetadata, TopicPartition
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential_jitter

from tuneplane.projector.archiver import ARCHIVE_LOCK, TRIM_LOCK, archived_ends, exclusive

#: How long a trim waits for Kafka to answer for a group (its coordinator elected).
COORDINATOR_WAIT = 120.0


async def trim(bootstrap: str, conn: asyncpg.Connection, *, topic: str,
               keep_groups: Sequence[str], if_consumed: Sequence[str] = ()) -> dict[int, int]:
    """Move each partition's log start to its archived end, but not past any of
    ``keep_groups``' committed offsets (a group without one holds it where it is), nor past
    ``if_consumed``' (groups that start at the topic's end when they first consume, as the
    exporter's: one that never committed holds nothing back); under the
    archive lock, exclusively (no replay reads meanwhile)."""
    await exclusive(conn)
    try:
        await exclusive(conn, TRIM_LOCK)
        try:
            return await _trim(bootstrap, conn, topic, keep_groups, if_consumed)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", TRIM_LOCK)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ARCHIVE_LOCK)


async def _trim(bootstrap: str, conn: asyncpg.Connection, topic: str,
                keep_groups: Sequence[str], if_consumed: Sequence[str]) -> dict[int, int]:
    ends = await archived_ends(conn, topic)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        limits = dict(ends)
        for group in (*keep_groups, *if_consumed):
            committed = await offsets_of(admin, group)
            if group in if_consumed and not committed:
                continue
            for partition in list(limits):
                at = committed.get(TopicPartition(topic, partition))
                limits[partition] = min(limits[partition], at.offset if at else 0)
        wanted = {TopicPartition(topic, p): RecordsToDelete(before_offset=o)
                  for p, o in limits.items() if o > 0}
        if not wanted:
            return {}
        moved = await admin.delete_records(wanted)
        return {tp.partition: int(low) for tp, low in moved.items()}
    finally:
        await admin.close()


def retriable(exc: BaseException) -> bool:
    return isinstance(exc, KafkaError) and bool(exc.retriable)


async def offsets_of(admin: AIOKafkaAdminClient,
                     group: str) -> dict[TopicPartition, OffsetAndMetadata]:
    """The group's committed offsets, asked again while Kafka says to (a broker that has
    just started has no group coordinator for a while)."""
    async for attempt in AsyncRetrying(retry=retry_if_exception(retriable),
                                       stop=stop_after_delay(COORDINATOR_WAIT),
                                       wait=wait_exponential_jitter(0.2, 5.0), reraise=True):
        with attempt:
            found: dict[TopicPartition, OffsetAndMetadata] = \
                await admin.list_consumer_group_offsets(group)
            return found
    raise AssertionError("unreachable: the last attempt's failure is raised")
