"""The faust-streaming worker: the projector's pipeline on the agent's stream.

Each group of batches is decoded (the pure projection), written in one PostgreSQL
transaction, then acknowledged; faust commits acknowledged offsets afterwards, so an
offset is committed only after its transaction. A crash before the commit replays the
batches and the ledger drops them.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import asyncpg
import faust

from tuneplane.common import objectstore
from tuneplane.common.kafka import topics
from tuneplane.common.kafka.pipeline import Group
from tuneplane.common.kafka.poison import DeadLetterLimit, PoisonPolicy
from tuneplane.projector import metrics
from tuneplane.projector.faust_consumer import FaustConsumer, FaustDeadLetters
from tuneplane.projector.pipeline import group_write, projector_pipeline
from tuneplane.projector.projection import Projection
from tuneplane.projector.settings import ProjectorSettings
from tuneplane.projector.writer import PostgresWriter, S3ObjectStore

log = logging.getLogger("tuneplane.projector")

#: How often a worker counts the dead-letter topic's records.
DLQ_LOOK_SECONDS = 30.0


def object_store(settings: ProjectorSettings) -> S3ObjectStore | None:
    if settings.s3_endpoint and settings.s3_bucket:
        return S3ObjectStore(objectstore.s3_client(settings.s3_endpoint), settings.s3_bucket)
    return None


def lazy_writer(settings: ProjectorSettings) -> Callable[[], Awaitable[PostgresWriter]]:
    """The writer, its pool created on first use inside the worker's event loop."""
    made: list[PostgresWriter] = []

    async def writer() -> PostgresWriter:
        if not made:
            pool = await asyncpg.create_pool(settings.database_url, min_size=1,
                                             max_size=settings.pool_size)
            metrics.POOL.watch(pool)
            made.append(PostgresWriter(pool, object_store(settings),
                                       max_series=settings.max_series))
        return made[0]
    return writer


def observe(group: Group[Projection], seconds: float, lags: dict[int, int]) -> None:
    for projection, fresh in group.written:
        metrics.BATCHES.labels("applied" if fresh else "duplicate").inc()
        if fresh:
            metrics.POINTS.inc(projection.points)
            metrics.RICH.inc(len(projection.rich))
    metrics.BATCHES.labels("dead_letter").inc(group.poison)
    metrics.DLQ.inc(group.poison)
    metrics.LATENCY.observe(seconds)
    metrics.lags(lags)


async def count_dead_letters(bootstrap: str) -> None:
    """The records the dead-letter topic holds, as a gauge (kept as it was when Kafka does
    not answer: the next look says)."""
    try:
        held = await topics.records_held(bootstrap, topics.BATCHES_DLQ)
    except Exception as exc:  # a figure missed, never a worker stopped: say it and go on
        log.warning("could not count the dead-letter topic's records: %r", exc)
        return
    metrics.DLQ_HELD.set(sum(held.values()))


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
    writer = lazy_writer(settings)
    poison = PoisonPolicy(FaustDeadLetters(dlq), settings.dead_letters_per_minute,
                          runs=settings.poison_runs)

    async def write(projections: Sequence[Projection]) -> Sequence[bool]:
        return await group_write(await writer(), retry=True)(projections)

    async def look_at_dead_letters() -> None:
        await count_dead_letters(settings.kafka_bootstrap)
    app.timer(interval=DLQ_LOOK_SECONDS)(look_at_dead_letters)

    @app.agent(batches)
    async def project_batches(stream: faust.StreamT[bytes]) -> AsyncIterator[int]:
        consumer = FaustConsumer(app, stream, settings.group_batches, within=0.2)
        pipeline = projector_pipeline(consumer, write, poison, settings.group_batches)
        while True:
            started = time.perf_counter()
            try:
                group = await pipeline.run_once()
            except DeadLetterLimit as exc:
                log.critical("%s; stopping with nothing of this group committed", exc)
                logging.shutdown()
                os._exit(70)  # fail-stop: a person looks before anything more is committed
            observe(group, time.perf_counter() - started, consumer.lags())
            yield len(group.written)

    return app
