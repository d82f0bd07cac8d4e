"""The faust-streaming application: consume batches in groups, project, write, then commit.

Faust acks the events of a group when the agent asks for the next group, and commits
acked offsets afterwards, so an offset is committed only after its PostgreSQL
transaction. A crash before the commit replays the batches and the ledger drops them.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import faust
from botocore.exceptions import BotoCoreError
from tenacity import (
    AsyncRetrying,
    before_sleep_log,
    retry_if_exception_type,
    wait_exponential_jitter,
)

from tuneplane.common import objectstore
from tuneplane.common.db import TRANSIENT_ERRORS
from tuneplane.common.kafka import topics
from tuneplane.projector import metrics
from tuneplane.projector.deadletters import DeadLetterGuard, DeadLetterLimit
from tuneplane.projector.projection import PoisonBatch, Projection, RecordMeta, project
from tuneplane.projector.writer import PostgresWriter, S3ObjectStore

log = logging.getLogger("tuneplane.projector")

CONSUMER_GROUP = "tuneplane-projector"
#: Failures that pass: PostgreSQL or S3 restarting. The group is retried, never skipped.
TRANSIENT = (*TRANSIENT_ERRORS, BotoCoreError,
             # statements prepared against tables a rebuild swapped out: re-prepared on retry
             asyncpg.InvalidCachedStatementError, asyncpg.UndefinedTableError)


@dataclass(frozen=True, slots=True)
class ProjectorSettings:
    database_url: str
    kafka_bootstrap: str
    pool_size: int
    s3_endpoint: str | None = None
    s3_bucket: str | None = None
    group_batches: int = 64
    dead_letters_per_minute: int = 100
    group_id: str = CONSUMER_GROUP
    offset_reset: str = "earliest"


def object_store(settings: ProjectorSettings) -> S3ObjectStore | None:
    if settings.s3_endpoint and settings.s3_bucket:
        return S3ObjectStore(objectstore.s3_client(settings.s3_endpoint), settings.s3_bucket)
    return None


def make_writer_factory(settings: ProjectorSettings) -> Any:
    state: dict[str, PostgresWriter] = {}

    async def writer() -> PostgresWriter:
        if "writer" not in state:
            pool = await asyncpg.create_pool(settings.database_url, min_size=1,
                                             max_size=settings.pool_size)
            state["writer"] = PostgresWriter(pool, object_store(settings))
        return state["writer"]
    return writer


def create_app(settings: ProjectorSettings) -> faust.App:
    app = faust.App(
        settings.group_id,
        broker=[f"kafka://{host}" for host in settings.kafka_bootstrap.split(",")],
        datadir=tempfile.mkdtemp(prefix="tuneplane-projector-"),
        web_enabled=False,
        topic_replication_factor=1,
        topic_allow_declare=False,
        topic_disable_leader=True,
        consumer_auto_offset_reset=settings.offset_reset,
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
    writer = make_writer_factory(settings)
    guard = DeadLetterGuard(settings.dead_letters_per_minute)

    async def dead_letter(message: Any, reason: PoisonBatch) -> None:
        try:
            guard.admit(time.monotonic())
        except DeadLetterLimit as exc:
            log.critical("%s; last poison at %s/%s: %s", exc, message.partition, message.offset,
                         reason)
            logging.shutdown()
            os._exit(70)  # fail-stop: nothing of this group is committed
        log.error("poison batch at %s/%s to the DLQ: %s", message.partition, message.offset,
                  reason)
        # Same partition number as its source, so the DLQ mirrors the topic's layout.
        delivered = await dlq.send(key=message.key, value=message.value,
                                   partition=message.partition, headers={
            "reason": str(reason).encode(), "partition": str(message.partition).encode(),
            "offset": str(message.offset).encode()})
        await delivered
        metrics.DLQ.inc()
        metrics.BATCHES.labels("dead_letter").inc()

    async def write(projections: list[Projection]) -> list[bool]:
        async for attempt in AsyncRetrying(retry=retry_if_exception_type(TRANSIENT),
                                           wait=wait_exponential_jitter(initial=0.2, max=5.0),
                                           before_sleep=before_sleep_log(log, logging.WARNING)):
            with attempt:
                applied: list[bool] = await (await writer()).write_group(projections)
                return applied
        raise AssertionError("unreachable: retries forever")

    @app.agent(batches)
    async def project_batches(stream: faust.StreamT[bytes]) -> AsyncIterator[Any]:
        lag: dict[int, int] = {}
        groups = stream.take_events(settings.group_batches, within=0.2)  # type: ignore[attr-defined]
        async for events in groups:
            started = time.perf_counter()
            projections = []
            for event in events:
                message = event.message
                try:
                    projections.append(project(message.value, RecordMeta(
                        message.partition, message.offset, message.key)))
                except PoisonBatch as exc:
                    await dead_letter(message, exc)
            applied = await write(projections) if projections else []
            for projection, fresh in zip(projections, applied, strict=True):
                metrics.BATCHES.labels("applied" if fresh else "duplicate").inc()
                if fresh:
                    metrics.POINTS.inc(projection.points)
                    metrics.RICH.inc(len(projection.rich))
            metrics.LATENCY.observe(time.perf_counter() - started)
            for event in events:
                highwater = app.consumer.highwater(event.message.tp)
                if highwater is not None:
                    lag[event.message.partition] = max(0, highwater - event.message.offset - 1)
            metrics.LAG.set(sum(lag.values()))
            yield len(projections)

    return app
