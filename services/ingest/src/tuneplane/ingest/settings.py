"""What ``tuneplane-ingest`` reads from its environment, parsed once at its start; a setting
with a flag is overridden by it (``tuneplane.contract.flags``)."""

from __future__ import annotations

from tuneplane.common.gateway.settings import GatewaySettings
from tuneplane.contract.parsers import port, positive, seconds
from tuneplane.contract.settings import Settings, section, setting
from tuneplane.contract.variables import (
    DATABASE_URL,
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_MAX_SERIES,
    DEFAULT_PROJECTOR_GROUP,
    KAFKA_BOOTSTRAP,
    PROJECTOR_GROUP,
    TELEMETRY_DRAIN_SECONDS,
    TELEMETRY_MAX_SERIES,
    WEB_JWT_SECRET,
)


class IngestSettings(Settings):
    kafka_bootstrap: str = setting(KAFKA_BOOTSTRAP)
    jwt_secret: str = setting(WEB_JWT_SECRET)
    database_url: str = setting(DATABASE_URL)
    drain_seconds: int = setting(TELEMETRY_DRAIN_SECONDS, default=DEFAULT_DRAIN_SECONDS)
    db_pool: int = setting(
        "TUNEPLANE_INGEST_DB_POOL", parse=positive, default=2,
        help="database connections of each ingest replica, for the attempt and node lookups "
             "that say whether a workload token still stands (cached a few seconds)")
    calls_per_token: int = setting(
        "TUNEPLANE_INGEST_CALLS_PER_TOKEN", parse=positive, default=8,
        help="PushBatch calls one workload token's member may have in flight at once; more "
             "are answered RESOURCE_EXHAUSTED at once (collectors retry them)")
    calls_per_run: int = setting(
        "TUNEPLANE_INGEST_CALLS_PER_RUN", parse=positive, default=64,
        help="PushBatch calls the members of one run may have in flight at once, together "
             "(a run of many members cannot take every call slot); more are answered "
             "RESOURCE_EXHAUSTED at once (collectors retry them)")
    max_series: int = setting(TELEMETRY_MAX_SERIES, default=DEFAULT_MAX_SERIES)
    max_concurrent_rpcs: int = setting(
        "TUNEPLANE_INGEST_MAX_CONCURRENT_RPCS", parse=positive, default=256,
        flag="--max-concurrent-rpcs",
        help="calls in flight on one ingest replica before it answers RESOURCE_EXHAUSTED")
    max_waiting_calls: int = setting(
        "TUNEPLANE_INGEST_MAX_WAITING_CALLS", parse=positive, default=4096,
        flag="--max-waiting-calls",
        help="calls arrived on one ingest replica that gRPC holds while the replica is busy, "
             "before the replica takes them up (and answers each, RESOURCE_EXHAUSTED when "
             "over its bounds); beyond them gRPC cancels calls unseen (CANCELLED, which "
             "collectors resend), so set it above the collectors a replica serves; each "
             "waiting call holds up to 64 KiB of its message")
    kafka_timeout: float = setting(
        "TUNEPLANE_INGEST_KAFKA_TIMEOUT", parse=seconds, default=15.0, flag="--kafka-timeout",
        help="seconds ingest waits for Kafka to hold a batch before it answers UNAVAILABLE "
             "(the collector keeps the batch and retries)")
    projector_group: str = setting(PROJECTOR_GROUP, default=DEFAULT_PROJECTOR_GROUP)
    checkpoint_wait: float = setting(
        "TUNEPLANE_INGEST_CHECKPOINT_WAIT", parse=seconds, default=20.0,
        help="seconds GetCheckpoints waits for the projectors to hold every batch of the "
             "member Kafka holds before it answers UNAVAILABLE (the collector asks again)")
    metrics_port: int = setting(
        "TUNEPLANE_INGEST_METRICS_PORT", parse=port, default=0, flag="--metrics-port",
        help="port ingest serves its Prometheus metrics on (`/metrics`, plain HTTP, on "
             "--host), never the telemetry port; 0: not served")
    gateway: GatewaySettings = section(GatewaySettings)
