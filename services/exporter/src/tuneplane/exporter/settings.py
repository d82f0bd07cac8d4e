"""What ``tuneplane-exporter`` reads from its environment, parsed once at its start;
``cli`` then replaces the fields whose flags were given (``--config-path``, ``--otelcol``,
``--secrets-root``, and ``--otlp-endpoint``, ``--poll-seconds``, ``--group``, which no
variable sets).
"""

from __future__ import annotations

from pathlib import Path

from tuneplane.contract.parsers import positive
from tuneplane.contract.settings import Settings, setting
from tuneplane.contract.variables import DATABASE_URL, KAFKA_BOOTSTRAP
from tuneplane.controlplane.destinations.resource import SECRETS_ROOT

GROUP = "tuneplane-exporter"


class ExporterSettings(Settings):
    database_url: str = setting(DATABASE_URL)
    kafka_bootstrap: str = setting(KAFKA_BOOTSTRAP)
    config_path: Path = setting(
        "TUNEPLANE_EXPORTER_CONFIG", parse=Path, default=Path("/var/lib/tuneplane/otelcol.yaml"),
        help="where the composed OpenTelemetry Collector configuration is written "
             "(`--config-path`)")
    otelcol: Path | None = setting(
        "TUNEPLANE_OTELCOL", parse=Path, default=None,
        help="an OpenTelemetry Collector binary the exporter runs on the composed "
             "configuration (`--otelcol`); unset: the deployment runs the collector")
    otlp_endpoint: str = "127.0.0.1:4317"  # --otlp-endpoint
    secrets_root: str = setting(
        "TUNEPLANE_TELEMETRY_SECRETS_ROOT", default=SECRETS_ROOT,
        help="where each sink's secret keys are mounted, one directory per sink "
             "(`--secrets-root`)")
    poll_seconds: float = 2.0  # --poll-seconds
    group: str = GROUP  # --group
    dead_letters_per_minute: int = setting(
        "TUNEPLANE_EXPORTER_DEAD_LETTERS_PER_MINUTE", parse=positive, default=100,
        help="poison records the exporter steps over per minute before it stops instead")
