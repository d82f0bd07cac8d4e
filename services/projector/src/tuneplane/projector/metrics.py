"""The projector's Prometheus metrics (declared names, one registry per process)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

BATCHES = Counter("tuneplane_projector_batches", "Batches consumed, by outcome",
                  ["outcome"])  # applied | duplicate | dead_letter
POINTS = Counter("tuneplane_projector_points", "Scalar points written to PostgreSQL")
RICH = Counter("tuneplane_projector_rich_records", "Rich records written (bytes to S3)")
DLQ = Counter("tuneplane_projector_dlq", "Batches sent to the dead-letter topic")
LAG = Gauge("tuneplane_projector_consumer_lag",
            "Records behind the high watermark, summed over this process's partitions")
LATENCY = Histogram("tuneplane_projector_projection_seconds",
                    "Time to project and write one group of batches",
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
