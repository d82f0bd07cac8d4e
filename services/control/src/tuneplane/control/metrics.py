"""Node control's Prometheus metrics (declared names; counters are exposed with ``_total``):
each call answered, by method and outcome (its status code), its time, and the database
pool's use. A node over its call rate is answered RESOURCE_EXHAUSTED; a busy pool or an
unreachable database UNAVAILABLE."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from tuneplane.common.metrics.calls import Answered
from tuneplane.common.metrics.gauges import PoolGauges

#: Seconds: a heartbeat is one statement; a call held for its node's rate waits up to 1 s;
#: one waiting for a pooled connection up to 5 s.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

RPCS = Counter("tuneplane_control_rpcs",
               "Node control calls answered, by service, method and outcome (status code)",
               ["service", "method", "code"])
RPC_SECONDS = Histogram("tuneplane_control_rpc_duration_seconds",
                        "Time from a call's arrival to its answer, by method",
                        ["service", "method"], buckets=BUCKETS)
POOL = PoolGauges("tuneplane_control")


def observe(call: Answered) -> None:
    """A call answered (``tuneplane.common.metrics.calls``)."""
    RPCS.labels(call.service, call.method, call.code).inc()
    RPC_SECONDS.labels(call.service, call.method).observe(call.seconds)
