"""Ingest's Prometheus metrics (declared names; counters are exposed with ``_total``).

Every call answered, by method and status code, and its time; how long Kafka took to hold a
batch; the batches and points made durable; the PushBatch calls that made nothing durable,
by reason (their status code, or CONFLICT: a batch identity resent with other bytes); the
database pool's use.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from tuneplane.common.metrics.calls import Answered
from tuneplane.common.metrics.gauges import PoolGauges

#: Seconds: a call answered from memory takes microseconds, one that waited on Kafka many
#: milliseconds, one that timed out the Kafka timeout (15 s by default).
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0)

RPCS = Counter("tuneplane_ingest_rpcs", "gRPC calls answered, by method and status code",
               ["service", "method", "code"])
RPC_SECONDS = Histogram("tuneplane_ingest_rpc_duration_seconds",
                        "Time from a call's arrival to its answer, by method",
                        ["service", "method"], buckets=BUCKETS)
PRODUCE_SECONDS = Histogram("tuneplane_ingest_kafka_produce_duration_seconds",
                            "Time Kafka took to hold a batch (acks=all), for the batches it "
                            "held", buckets=BUCKETS)
BATCHES = Counter("tuneplane_ingest_accepted_batches",
                  "Batches made durable (Kafka holds them), by delivery: live, or late "
                  "(under a deliver-only credential)", ["delivery"])
POINTS = Counter("tuneplane_ingest_accepted_points",
                 "Scalar points of the batches made durable")
DUPLICATES = Counter("tuneplane_ingest_duplicate_batches",
                     "Batches sent again after Kafka held them (answered DUPLICATE_SAFE)")
REFUSED = Counter("tuneplane_ingest_refused_batches",
                  "PushBatch calls that made nothing durable, by reason: the status code "
                  "(RESOURCE_EXHAUSTED, INVALID_ARGUMENT, PERMISSION_DENIED, "
                  "UNAUTHENTICATED, UNAVAILABLE, ...) or CONFLICT", ["reason"])
#: The pool of the lookups that say whether a workload token still stands.
POOL = PoolGauges("tuneplane_ingest")

PUSH_BATCH = "PushBatch"
CONFLICT = "CONFLICT"


def observe(call: Answered) -> None:
    """A call answered (``tuneplane.common.metrics.calls``)."""
    RPCS.labels(call.service, call.method, call.code).inc()
    RPC_SECONDS.labels(call.service, call.method).observe(call.seconds)
    if call.method == PUSH_BATCH and call.code != "OK":
        REFUSED.labels(call.code).inc()


def durable(points: int, *, late: bool) -> None:
    BATCHES.labels("late" if late else "live").inc()
    POINTS.inc(points)
