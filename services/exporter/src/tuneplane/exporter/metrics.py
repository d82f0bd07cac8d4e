"""The exporter's Prometheus metrics (declared names; counters are exposed with ``_total``):
whether export is on and for how many destinations, the batches consumed and what became of
them, the OTLP requests sent to the composed collector (accepted, retried, refused) and
their time, the points it accepted, and the consumer group's lag by partition (the records
waiting for export: the exporter buffers nothing else)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

ENABLED = Gauge("tuneplane_exporter_export_enabled",
                "1 while a destination is composed and the batches topic is consumed, else 0")
DESTINATIONS = Gauge("tuneplane_exporter_destinations",
                     "TelemetryDestinations, by state: composed, or refused (see the log)",
                     ["state"])
BATCHES = Counter("tuneplane_exporter_batches",
                  "Batches consumed, by outcome: exported, deleted (their run or attempt is "
                  "deleted: not sent), poison (stepped over)", ["outcome"])
REQUESTS = Counter("tuneplane_exporter_otlp_requests",
                   "OTLP export requests to the composed collector, by outcome: accepted, "
                   "retried (it was busy or restarting), refused (for good)", ["outcome"])
REQUEST_SECONDS = Histogram("tuneplane_exporter_otlp_request_duration_seconds",
                            "Time the composed collector took to answer an export request",
                            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                                     2.5, 5.0, 10.0, 30.0))
POINTS = Counter("tuneplane_exporter_exported_points",
                 "Curve points the composed collector accepted")
LAG = Gauge("tuneplane_exporter_consumer_lag_records",
            "Records of the batches topic behind its end, by partition this exporter consumes",
            ["partition"])

