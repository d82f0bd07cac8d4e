"""Gauges that mirror something that changes under them, so that they never show what is no
longer there: a service's PostgreSQL pool, read from the pool when Prometheus scrapes (the
connections open, those idle, the most it opens: a service whose pool is exhausted answers
late or UNAVAILABLE, these say so before); and a gauge by Kafka partition (a consumer's
lag), set as a whole, so that a partition the process no longer consumes (a rebalance moved
it, its consumer stopped) loses its series instead of keeping its last value."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

#: Each gauge's name after ``<prefix>_db_pool_``, and its meaning.
GAUGES = {"connections": "PostgreSQL connections the pool holds open",
          "idle_connections": "Open PostgreSQL connections of the pool free to take",
          "max_connections": "PostgreSQL connections the pool opens at most"}


class SizedPool(Protocol):
    """What is read of an asyncpg pool (``asyncpg.Pool`` is one)."""

    def get_size(self) -> int: ...

    def get_idle_size(self) -> int: ...

    def get_max_size(self) -> int: ...


class PoolGauges(Collector):
    """``<prefix>_db_pool_connections``, ``_idle_connections`` and ``_max_connections`` of
    the pool ``watch`` was last handed (no samples before, nor after ``forget``)."""

    def __init__(self, prefix: str, registry: CollectorRegistry | None = REGISTRY) -> None:
        self._prefix = prefix
        self._pool: SizedPool | None = None
        if registry is not None:
            registry.register(self)

    def watch(self, pool: SizedPool) -> None:
        self._pool = pool

    def forget(self) -> None:
        self._pool = None

    def collect(self) -> Iterator[Metric]:
        # Read from the scrape's thread: integer reads of the pool, no call into its loop.
        pool = self._pool
        read = {} if pool is None else {"connections": pool.get_size(),
                                        "idle_connections": pool.get_idle_size(),
                                        "max_connections": pool.get_max_size()}
        for name, meaning in GAUGES.items():
            family = GaugeMetricFamily(f"{self._prefix}_db_pool_{name}", meaning)
            if name in read:
                family.add_metric([], float(read[name]))
            yield family


def set_by_partition(gauge: Gauge, values: Mapping[int, int]) -> None:
    """``gauge`` (labelled ``partition`` alone) holds exactly ``values``, by partition."""
    held = {sample.labels["partition"] for metric in gauge.collect()
            for sample in metric.samples}
    for gone in held - {str(p) for p in values}:
        gauge.remove(gone)
    for partition, value in values.items():
        gauge.labels(str(partition)).set(value)
