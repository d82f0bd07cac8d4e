"""The exporter: watches the fleet's TelemetryDestinations (in PostgreSQL, or as Kubernetes
custom resources labelled for its release: ``fleet``, ``kube.scope``) and, while at least
one is composed, consumes the batches topic in its own group and sends curves as OTLP
metrics to the composed collector.

With no destination nothing is composed, no consumer runs and nothing is buffered.
Creating the first one turns export on for the whole fleet from that moment (a new
export epoch): the group starts at the topic's end, not at a backlog built while export
was off. An exporter restarted within an epoch resumes from the group's committed
offsets, so nothing produced while it was down is skipped. Offsets are committed only
after the collector accepted the batch's metrics (at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import asyncpg
import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as otlp_grpc
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from tenacity import AsyncRetrying, retry_if_exception, wait_exponential_jitter

from tuneplane.common.kafka import topics
from tuneplane.common.kafka.adapter import KafkaGroupConsumer
from tuneplane.common.kafka.message import InvalidMessage, Message
from tuneplane.common.kafka.pipeline import Pipeline
from tuneplane.common.kafka.poison import PoisonPolicy, StepOver
from tuneplane.common.metrics.gauges import set_by_partition
from tuneplane.contract.errors import retryable
from tuneplane.controlplane.destinations import store
from tuneplane.controlplane.destinations.fleet import DestinationStore, usable
from tuneplane.destinations.compose import dumps, render
from tuneplane.exporter import metrics
from tuneplane.exporter.otelcol import ComposedCollector
from tuneplane.exporter.otlp import points, to_requests
from tuneplane.exporter.settings import ExporterSettings
from tuneplane.telemetry.v1.validation import InvalidBatch, parse, validate

log = logging.getLogger("tuneplane.exporter")


@dataclass(frozen=True, slots=True)
class ToExport:
    """A batch as the exporter sends it: whose it is, and its metrics requests."""

    run_id: str
    attempt: int
    requests: list[ExportMetricsServiceRequest]


#: The runs and attempts of ``$1`` whose deletion stands (attempt 0: the whole run): their
#: batches are not exported.
DELETED = """
SELECT run_id, attempt FROM deletions WHERE run_id = ANY($1::text[]) AND undone_at IS NULL
"""


class Exporter:
    def __init__(self, settings: ExporterSettings, environ: Mapping[str, str]) -> None:
        """``environ``: the exporter's environment; the collector it runs gets only what
        ``collector_environment`` keeps of it."""
        self.settings = settings
        self.collector = ComposedCollector(settings.config_path, settings.otelcol,
                                           settings.config_path.with_suffix(".log"), environ)
        self.exported_points = 0
        self._consumer: KafkaGroupConsumer | None = None
        self._pipeline: Pipeline[ToExport] | None = None
        self._conn: asyncpg.Connection | None = None
        self._poison = PoisonPolicy(StepOver("exporter"), settings.dead_letters_per_minute)
        self._refused: dict[str, str] = {}
        self._stop = asyncio.Event()
        self._stub: otlp_grpc.MetricsServiceStub | None = None
        self._looked = False  # whether the first look at the destinations was said

    async def _recompose(self, destinations: DestinationStore) -> int:
        """Composes what ``destinations`` hold (restarting the collector it runs only on a
        change, or when it died); returns the export epoch."""
        fleet = usable(await destinations.documents(), secret_prefix=destinations.secret_prefix,
                       secrets_root=self.settings.secrets_root)
        for name, why in fleet.refused.items():
            if self._refused.get(name) != why:
                log.warning("destination %s is not exported: %s", name, why)
        self._refused = fleet.refused
        metrics.DESTINATIONS.labels("composed").set(len(fleet.usable))
        metrics.DESTINATIONS.labels("refused").set(len(fleet.refused))
        config = render(fleet.usable, receiver_endpoint=self.settings.otlp_endpoint,
                        secrets_root=self.settings.secrets_root)
        self.collector.apply(None if config is None else dumps(config))
        return await destinations.export_epoch(config is not None)

    async def _switch(self, conn: asyncpg.Connection, epoch: int) -> None:
        on = self.collector.text is not None
        if on and self._pipeline is None:
            if await store.group_epoch(conn, self.settings.group) != epoch:
                # Export turned on (again) since this group last consumed: start now.
                await topics.commit_group_at_end(self.settings.kafka_bootstrap,
                                                 self.settings.group)
                await store.set_group_epoch(conn, self.settings.group, epoch)
                where = "from its end"
            else:  # a restart within the same epoch: nothing produced meanwhile is skipped
                where = "from the group's committed offsets"
            consumer = KafkaGroupConsumer(self.settings.kafka_bootstrap, self.settings.group,
                                          offset_reset="latest")
            await consumer.start()
            self._consumer = consumer
            self._pipeline = Pipeline(consumer, decode, self._export, self._poison,
                                      max_records=256, within=0.5)
            log.info("export on: consuming %s %s in group %s", topics.BATCHES, where,
                     self.settings.group)
        elif not on and self._consumer is not None:
            await self._consumer.stop()
            self._consumer = self._pipeline = None
            set_by_partition(metrics.LAG, {})
            log.info("export off: no destination; consumer stopped, nothing buffered")
        elif not on and not self._looked:
            log.info("export off: no destination; nothing consumed")
        self._looked = True
        metrics.ENABLED.set(1 if self._pipeline is not None else 0)

    async def _destinations(self, conn: asyncpg.Connection) -> DestinationStore:
        if self.settings.destinations == "kubernetes":
            from tuneplane.exporter.kube.resources import KubernetesDestinations
            from tuneplane.exporter.kube.scope import selector
            return await KubernetesDestinations.connect(
                conn, selector(self.settings.release.get()), self.settings.sink_secret_prefix)
        return store.PostgresDestinations(conn)

    async def _export(self, batches: Sequence[ToExport]) -> list[bool]:
        """The write step: each batch's metrics to the collector, retried while it says
        it is busy or restarting; offsets are committed only after this returns. A request
        the collector refuses for good makes the pipeline send the group again batch by
        batch and step over the one refused. A batch of a deleted run or attempt is not
        sent."""
        assert self._stub is not None, "run() sets the collector's stub before consuming"
        assert self._conn is not None, "run() connects before consuming"
        deleted = {(r["run_id"], r["attempt"]) for r in await self._conn.fetch(
            DELETED, sorted({b.run_id for b in batches}))}
        kept = [b for b in batches if (b.run_id, 0) not in deleted
                and (b.run_id, b.attempt) not in deleted]
        metrics.BATCHES.labels("deleted").inc(len(batches) - len(kept))
        for request in (request for batch in kept for request in batch.requests):
            count = points(request)
            if not count:
                continue  # rich records and markers only: nothing to export as metrics
            try:
                async for attempt in AsyncRetrying(retry=retry_if_exception(retryable),
                                                   wait=wait_exponential_jitter(initial=0.2,
                                                                                max=5),
                                                   reraise=True):
                    with attempt:
                        if self._stop.is_set():
                            raise asyncio.CancelledError
                        await self._send(request)
            except grpc.aio.AioRpcError as exc:  # refused for good: this batch alone
                raise InvalidMessage(f"the collector refused it: {exc.code().name}: "
                                     f"{exc.details()}") from exc
            self.exported_points += count
            metrics.POINTS.inc(count)
        metrics.BATCHES.labels("exported").inc(len(kept))
        return [True] * len(batches)

    async def _send(self, request: ExportMetricsServiceRequest) -> None:
        """One export request to the collector, timed and counted by how it was answered."""
        assert self._stub is not None
        started = time.perf_counter()
        try:
            await self._stub.Export(request, timeout=30)
        except grpc.aio.AioRpcError as exc:
            metrics.REQUESTS.labels("retried" if retryable(exc) else "refused").inc()
            raise
        finally:
            metrics.REQUEST_SECONDS.observe(time.perf_counter() - started)
        metrics.REQUESTS.labels("accepted").inc()

    async def _pump(self) -> None:
        assert self._pipeline is not None
        loop = asyncio.get_running_loop()
        until = loop.time() + self.settings.poll_seconds
        while loop.time() < until and not self._stop.is_set():
            group = await self._pipeline.run_once()
            metrics.BATCHES.labels("poison").inc(group.poison)
            if self._consumer is not None:
                set_by_partition(metrics.LAG, await self._consumer.lags())

    async def run(self, stop: asyncio.Event) -> None:
        """Export until ``stop`` is set; raises DeadLetterLimit on a flood of poison."""
        self._stop = stop
        conn = self._conn = await asyncpg.connect(self.settings.database_url)
        destinations = await self._destinations(conn)
        channel = grpc.aio.insecure_channel(self.settings.otlp_endpoint)
        self._stub = otlp_grpc.MetricsServiceStub(channel)  # type: ignore[no-untyped-call]
        try:
            while not stop.is_set():
                await self._switch(conn, await self._recompose(destinations))
                if self._pipeline is not None:
                    await self._pump()
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), self.settings.poll_seconds)
        finally:
            if self._consumer is not None:
                await self._consumer.stop()
            self.collector.stop()
            await channel.close()
            await conn.close()


def decode(message: Message) -> ToExport:
    """The pure step: a batch record → its metrics requests, or InvalidMessage."""
    try:
        batch = parse(message.value)
        validate(batch, len(message.value))
    except InvalidBatch as exc:
        raise InvalidMessage(str(exc)) from None
    return ToExport(batch.identity.run_id, batch.identity.attempt, to_requests(batch))
