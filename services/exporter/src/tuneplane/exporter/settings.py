"""What ``tuneplane-exporter`` reads from its environment, parsed once at its start; each
setting's flag, given, overrides it (``tuneplane.contract.flags``)."""

from __future__ import annotations

from pathlib import Path

from tuneplane.contract.parsers import port, positive, seconds
from tuneplane.contract.settings import Needed, Settings, Variable, needed, setting
from tuneplane.contract.variables import DATABASE_URL, KAFKA_BOOTSTRAP
from tuneplane.destinations.resource import SECRETS_ROOT
from tuneplane.exporter.kube.scope import DEFAULT_SECRET_PREFIX, RELEASE, SINK_SECRET_PREFIX

GROUP = "tuneplane-exporter"
#: Read by the exporter and by the destinations controller (which mounts the Secrets there).
SECRETS_ROOT_VARIABLE = Variable(
    "TUNEPLANE_TELEMETRY_SECRETS_ROOT",
    "where each sink's secret keys are mounted, one directory per sink")
#: Where the fleet's TelemetryDestinations are kept (``fleet.DestinationStore``).
STORES = ("postgresql", "kubernetes")


def store_name(raw: str) -> str:
    if raw not in STORES:
        raise ValueError(f"{raw!r} is not one of {', '.join(STORES)}")
    return raw


class ExporterSettings(Settings):
    database_url: str = setting(DATABASE_URL)
    kafka_bootstrap: str = setting(KAFKA_BOOTSTRAP)
    destinations: str = setting(
        "TUNEPLANE_DESTINATIONS_STORE", parse=store_name, default="postgresql",
        flag="--destinations",
        help="where TelemetryDestinations are kept: postgresql (the API resource, applied "
             "with `tuneplane destinations apply`) or kubernetes (the TelemetryDestination "
             "custom resource, read with the pod's service account)")
    release: Needed[str] = needed(RELEASE, needed_for=("--destinations kubernetes",))
    sink_secret_prefix: str = setting(SINK_SECRET_PREFIX, default=DEFAULT_SECRET_PREFIX)
    config_path: Path = setting(
        "TUNEPLANE_EXPORTER_CONFIG", parse=Path, default=Path("/var/lib/tuneplane/otelcol.yaml"),
        flag="--config-path",
        help="where the composed OpenTelemetry Collector configuration is written")
    otelcol: Path | None = setting(
        "TUNEPLANE_OTELCOL", parse=Path, default=None, flag="--otelcol",
        help="an OpenTelemetry Collector binary the exporter runs on the composed "
             "configuration; unset: the deployment runs the collector")
    otlp_endpoint: str = setting(
        "TUNEPLANE_EXPORTER_OTLP_ENDPOINT", default="127.0.0.1:4317", flag="--otlp-endpoint",
        help="the composed collector's OTLP gRPC receiver, where curves are sent")
    secrets_root: str = setting(SECRETS_ROOT_VARIABLE, default=SECRETS_ROOT,
                                flag="--secrets-root")
    poll_seconds: float = setting(
        "TUNEPLANE_EXPORTER_POLL_SECONDS", parse=seconds, default=2.0, flag="--poll-seconds",
        help="how often the exporter looks for changed TelemetryDestinations")
    group: str = setting(
        "TUNEPLANE_EXPORTER_GROUP", default=GROUP, flag="--group",
        help="the exporter's Kafka consumer group on the batches topic")
    metrics_port: int = setting(
        "TUNEPLANE_EXPORTER_METRICS_PORT", parse=port, default=0, flag="--metrics-port",
        help="port the exporter serves its Prometheus metrics on (`/metrics`, plain HTTP); "
             "0: not served")
    metrics_host: str = setting(
        "TUNEPLANE_EXPORTER_METRICS_HOST", default="0.0.0.0", flag="--metrics-host",
        help="address the exporter serves its metrics on (it has no other listener: all "
             "addresses by default, for a scraper on another host; 127.0.0.1 keeps them on "
             "this host)")
    dead_letters_per_minute: int = setting(
        "TUNEPLANE_EXPORTER_DEAD_LETTERS_PER_MINUTE", parse=positive, default=100,
        help="poison records the exporter steps over per minute before it stops instead")
