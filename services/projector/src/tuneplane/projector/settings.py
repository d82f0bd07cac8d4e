"""What ``tuneplane-projector`` reads from its environment, parsed once at its start.

Field for field the ``ProjectorSettings`` of :mod:`tuneplane.projector.app`, which ``cli``
still builds from ``os.environ`` itself: wiring this in replaces that one (and its
``settings()`` in ``cli``) with ``ProjectorSettings.from_environ(os.environ)``.
"""

from __future__ import annotations

from tuneplane.contract.parsers import port, positive
from tuneplane.contract.settings import Settings, setting
from tuneplane.contract.variables import (
    DATABASE_URL,
    DEFAULT_MAX_SERIES,
    DEFAULT_PROJECTOR_GROUP,
    KAFKA_BOOTSTRAP,
    PROJECTOR_GROUP,
    S3_BUCKET,
    S3_ENDPOINT,
    TELEMETRY_MAX_SERIES,
)

CONSUMER_GROUP = DEFAULT_PROJECTOR_GROUP


class ProjectorSettings(Settings):
    database_url: str = setting(DATABASE_URL)
    kafka_bootstrap: str = setting(KAFKA_BOOTSTRAP)
    pool_size: int = setting(
        "TUNEPLANE_PROJECTOR_DB_POOL", parse=positive, default=4,
        help="database connections of each projector worker")
    s3_endpoint: str | None = setting(S3_ENDPOINT, default=None)
    s3_bucket: str | None = setting(S3_BUCKET, default=None)
    group_batches: int = setting(
        "TUNEPLANE_PROJECTOR_GROUP_BATCHES", parse=positive, default=64,
        help="batches a projector writes in one PostgreSQL transaction at most")
    dead_letters_per_minute: int = setting(
        "TUNEPLANE_PROJECTOR_DEAD_LETTERS_PER_MINUTE", parse=positive, default=100,
        help="poison batches a projector sends to the dead-letter topic per minute before it "
             "stops instead")
    max_series: int = setting(TELEMETRY_MAX_SERIES, default=DEFAULT_MAX_SERIES)
    poison_runs: int = setting(
        "TUNEPLANE_PROJECTOR_POISON_RUNS", parse=positive, default=10,
        help="distinct runs whose poison, past the per-minute limit, stops a projector (a "
             "bad deploy); one run's poison alone never does")
    group_id: str = setting(PROJECTOR_GROUP, default=CONSUMER_GROUP)
    metrics_port: int = setting(
        "TUNEPLANE_PROJECTOR_METRICS_PORT", parse=port, default=0, flag="--metrics-port",
        help="port a projector worker serves its Prometheus metrics on (`/metrics`, plain "
             "HTTP); 0: not served")
    metrics_host: str = setting(
        "TUNEPLANE_PROJECTOR_METRICS_HOST", default="0.0.0.0", flag="--metrics-host",
        help="address a projector worker serves its metrics on (it has no other listener: all "
             "addresses by default, for a scraper on another host; 127.0.0.1 keeps them on "
             "this host)")
    offset_reset: str = setting(
        "TUNEPLANE_PROJECTOR_OFFSET_RESET", default="earliest",
        help="where a new consumer group starts in the batches topic (`earliest` or `latest`)")
