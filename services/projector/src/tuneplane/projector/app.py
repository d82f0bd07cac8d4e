"""The faust-streaming application: consume batches, project, write, then let faust commit.

Faust acks an event when the agent moves past it and commits acked offsets
afterwards, so an offset is committed only after its PostgreSQL transaction.
A crash before the commit replays the batch, and the ledger drops it.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import faust

from tuneplane.common import topics
from tuneplane.projector.projection import PoisonBatch, RecordMeta, project
from tuneplane.projector.writer import PostgresWriter

log = logging.getLogger("tuneplane.projector")

CONSUMER_GROUP = "tuneplane-projector"


@dataclass(frozen=True, slots=True)
class ProjectorSettings:
    database_url: str
    kafka_bootstrap: str
    pool_size: int


def create_app(settings: ProjectorSettings) -> faust.App:
    app = faust.App(
        CONSUMER_GROUP,
        broker=[f"kafka://{host}" for host in settings.kafka_bootstrap.split(",")],
        datadir=tempfile.mkdtemp(prefix="tuneplane-projector-"),
        web_enabled=False,
        topic_replication_factor=1,
        topic_allow_declare=False,
        topic_disable_leader=True,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        broker_commit_interval=1.0,
        # A killed worker's partitions move to the others after this long.
        broker_session_timeout=10.0,
        broker_heartbeat_interval=2.0,
    )
    batches = app.topic(topics.BATCHES, key_type=bytes, value_type=bytes,
                        key_serializer="raw", value_serializer="raw", internal=False)
    dlq = app.topic(topics.BATCHES_DLQ, key_type=bytes, value_type=bytes,
                    key_serializer="raw", value_serializer="raw", internal=False)
    state: dict[str, PostgresWriter] = {}

    async def writer() -> PostgresWriter:
        if "writer" not in state:
            pool = await asyncpg.create_pool(settings.database_url, min_size=1,
                                             max_size=settings.pool_size)
            state["writer"] = PostgresWriter(pool)
        return state["writer"]

    @app.agent(batches)
    async def project_batches(stream: faust.StreamT[bytes]) -> AsyncIterator[Any]:
        async for event in stream.events():
            message = event.message
            meta = RecordMeta(message.partition, message.offset, message.key)
            try:
                projection = project(message.value, meta)
            except PoisonBatch as exc:
                log.error("poison batch at %s/%s to DLQ: %s", meta.partition, meta.offset, exc)
                delivered = await dlq.send(key=message.key, value=message.value,
                                           headers={"reason": str(exc).encode()})
                await delivered
                continue
            applied = await (await writer()).write(projection)
            log.debug("batch %s %s", projection.key, "projected" if applied else "duplicate")
            yield applied

    return app
