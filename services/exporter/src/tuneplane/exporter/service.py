"""The exporter: watches the fleet's TelemetryDestinations and, while there is at least
one, consumes the batches topic in its own group and sends curves as OTLP metrics to the
composed collector.

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
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import grpc
from aiokafka import AIOKafkaConsumer
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as otlp_grpc
from tenacity import AsyncRetrying, retry_if_exception, wait_exponential_jitter

from tuneplane.common.kafka import topics
from tuneplane.contract.errors import retryable
from tuneplane.controlplane.destinations import store
from tuneplane.controlplane.destinations.compose import dumps, render
from tuneplane.controlplane.destinations.resource import SECRETS_ROOT
from tuneplane.exporter.collector import ComposedCollector
from tuneplane.exporter.otlp import points, to_request
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

log = logging.getLogger("tuneplane.exporter")
GROUP = "tuneplane-exporter"


@dataclass(frozen=True, slots=True)
class ExporterSettings:
    database_url: str
    kafka_bootstrap: str
    config_path: Path
    otelcol: Path | None = None
    otlp_endpoint: str = "127.0.0.1:4317"
    secrets_root: str = SECRETS_ROOT
    poll_seconds: float = 2.0
    group: str = GROUP


class Exporter:
    def __init__(self, settings: ExporterSettings) -> None:
        self.settings = settings
        self.collector = ComposedCollector(settings.config_path, settings.otelcol,
                                           settings.config_path.with_suffix(".log"))
        self.exported_points = 0
        self._consumer: AIOKafkaConsumer | None = None
        self._generation: int | None = None

    async def _recompose(self, conn: asyncpg.Connection) -> None:
        generation = await store.fleet_generation(conn)
        if generation != self._generation:
            config = render(await store.load_all(conn),
                            receiver_endpoint=self.settings.otlp_endpoint,
                            secrets_root=self.settings.secrets_root)
            self.collector.apply(None if config is None else dumps(config))
            self._generation = generation
        else:
            self.collector.apply(self.collector.text)  # restarts a collector that died

    async def _switch(self, conn: asyncpg.Connection) -> None:
        on = self.collector.text is not None
        if on and self._consumer is None:
            epoch = await store.export_epoch(conn)
            if await store.group_epoch(conn, self.settings.group) != epoch:
                # Export turned on (again) since this group last consumed: start now.
                await topics.commit_group_at_end(self.settings.kafka_bootstrap,
                                                 self.settings.group)
                await store.set_group_epoch(conn, self.settings.group, epoch)
                where = "from its end"
            else:  # a restart within the same epoch: nothing produced meanwhile is skipped
                where = "from the group's committed offsets"
            self._consumer = AIOKafkaConsumer(
                topics.BATCHES, bootstrap_servers=self.settings.kafka_bootstrap,
                group_id=self.settings.group, enable_auto_commit=False,
                auto_offset_reset="latest", max_partition_fetch_bytes=16 << 20)
            await self._consumer.start()
            log.info("export on: consuming %s %s in group %s", topics.BATCHES, where,
                     self.settings.group)
        elif not on and self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
            log.info("export off: no destination; consumer stopped, nothing buffered")

    async def _send(self, stub: otlp_grpc.MetricsServiceStub, payload: bytes,
                    stop: asyncio.Event) -> None:
        request = to_request(pb.Batch.FromString(payload))
        count = points(request)
        if not count:
            return  # rich records and markers only: nothing to export as metrics
        async for attempt in AsyncRetrying(retry=retry_if_exception(retryable),
                                           wait=wait_exponential_jitter(initial=0.2, max=5),
                                           reraise=True):
            with attempt:
                if stop.is_set():
                    raise asyncio.CancelledError
                await stub.Export(request, timeout=30)
        self.exported_points += count

    async def _pump(self, stub: otlp_grpc.MetricsServiceStub, stop: asyncio.Event) -> None:
        assert self._consumer is not None
        loop = asyncio.get_running_loop()
        until = loop.time() + self.settings.poll_seconds
        while loop.time() < until and not stop.is_set():
            fetched = await self._consumer.getmany(timeout_ms=500, max_records=256)
            for records in fetched.values():
                for record in records:
                    assert record.value is not None
                    await self._send(stub, record.value, stop)
            if fetched:
                await self._consumer.commit()

    async def run(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(self.settings.database_url)
        channel = grpc.aio.insecure_channel(self.settings.otlp_endpoint)
        stub = otlp_grpc.MetricsServiceStub(channel)  # type: ignore[no-untyped-call]
        try:
            while not stop.is_set():
                await self._recompose(conn)
                await self._switch(conn)
                if self._consumer is not None:
                    await self._pump(stub, stop)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), self.settings.poll_seconds)
        finally:
            if self._consumer is not None:
                await self._consumer.stop()
            self.collector.stop()
            await channel.close()
            await conn.close()
