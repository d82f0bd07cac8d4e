"""Pool gauges are read from the pool when scraped and say nothing of a pool not (or no
longer) watched; a gauge by partition holds exactly the partitions last set (one a process
no longer consumes loses its series)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from tuneplane.common.metrics.gauges import PoolGauges, set_by_partition


class Pool:
    def __init__(self) -> None:
        self.size, self.idle = 0, 0

    def get_size(self) -> int:
        return self.size

    def get_idle_size(self) -> int:
        return self.idle

    def get_max_size(self) -> int:
        return 8


def test_the_pools_use_is_read_at_each_scrape() -> None:
    registry = CollectorRegistry()
    gauges = PoolGauges("tp_test", registry)
    assert registry.get_sample_value("tp_test_db_pool_connections") is None
    pool = Pool()
    gauges.watch(pool)
    pool.size, pool.idle = 3, 1
    assert registry.get_sample_value("tp_test_db_pool_connections") == 3
    assert registry.get_sample_value("tp_test_db_pool_idle_connections") == 1
    assert registry.get_sample_value("tp_test_db_pool_max_connections") == 8
    pool.idle = 3
    assert registry.get_sample_value("tp_test_db_pool_idle_connections") == 3
    gauges.forget()
    assert registry.get_sample_value("tp_test_db_pool_connections") is None
    text = generate_latest(registry).decode()
    assert "# TYPE tp_test_db_pool_connections gauge" in text  # declared, with no sample


def test_partitions_no_longer_consumed_lose_their_series() -> None:
    registry = CollectorRegistry()
    lag = Gauge("tp_test_lag_records", "lag", ["partition"], registry=registry)
    set_by_partition(lag, {0: 5, 3: 7})
    set_by_partition(lag, {3: 0, 4: 2})

    def held(partition: str) -> float | None:
        return registry.get_sample_value("tp_test_lag_records", {"partition": partition})

    assert (held("0"), held("3"), held("4")) == (None, 0, 2)
    set_by_partition(lag, {})
    assert (held("3"), held("4")) == (None, None)
