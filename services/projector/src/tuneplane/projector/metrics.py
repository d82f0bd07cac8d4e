"""The projector's Prometheus metrics (declared names, one registry per process; counters
are exposed with ``_total``: ``tuneplane_projector_points_total``, whose rate is the points
projected per second)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from tuneplane.common.metrics.gauges import PoolGauges, set_by_partition

BATCHES = Counter("tuneplane_projector_batches", "Batches consumed, by outcome",
                  ["outcome"])  # applied | duplicate | dead_letter
POINTS = Counter("tuneplane_projector_points", "Scalar points written to PostgreSQL")
RICH = Counter("tuneplane_projector_rich_records", "Rich records written (bytes to S3)")
DLQ = Counter("tuneplane_projector_dlq", "Batches sent to the dead-letter topic")
LAG = Gauge("tuneplane_projector_consumer_lag",
            "Records behind the high watermark, summed over this process's partitions")
PARTITION_LAG = Gauge("tuneplane_projector_consumer_lag_records",
                      "Records behind the high watermark, by partition this process consumes",
                      ["partition"])
DLQ_HELD = Gauge("tuneplane_projector_dlq_records",
                 "Records the dead-letter topic holds (end less start offsets, over its "
                 "partitions): redrive them after a fix, then trim it")
LATENCY = Histogram("tuneplane_projector_projection_seconds",
                    "Time to project and write one group of batches",
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
POOL = PoolGauges("tuneplane_projector")


def lags(by_partition: dict[int, int]) -> None:
    """Each partition's lag as this process last saw it, and their sum."""
    set_by_partition(PARTITION_LAG, by_partition)
    LAG.set(sum(by_partition.values()))
