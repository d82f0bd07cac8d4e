"""What ``tuneplane-destinations`` (the TelemetryDestination controller and its admission
webhook) reads from its environment; the Helm chart sets every one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuneplane.contract.parsers import positive, seconds
from tuneplane.contract.settings import Settings, setting
from tuneplane.destinations.resource import SECRETS_ROOT
from tuneplane.exporter.kube.scope import DEFAULT_SECRET_PREFIX, RELEASE, SINK_SECRET_PREFIX
from tuneplane.exporter.settings import SECRETS_ROOT_VARIABLE


def json_object(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


class ControllerSettings(Settings):
    namespace: str = setting(
        "TUNEPLANE_KUBE_NAMESPACE",
        help="the release's namespace: the collector's Deployment and the sinks' Secrets")
    owner: str = setting(
        "TUNEPLANE_DESTINATIONS_OWNER",
        help="the controller's own Deployment, which owns the collector's objects")
    otelcol_name: str = setting(
        "TUNEPLANE_OTELCOL_NAME",
        help="name of the collector's Deployment and of the ConfigMap holding its "
             "configuration")
    template: dict[str, Any] = setting(
        "TUNEPLANE_OTELCOL_TEMPLATE", parse=json_object,
        help="the collector's Deployment as the chart makes it (JSON); the controller sets "
             "its replicas, the sinks' Secrets and the configuration's digest")
    listen: str = setting(
        "TUNEPLANE_OTELCOL_LISTEN", default="0.0.0.0:4317",
        help="the composed collector's OTLP gRPC receiver inside its pod (the exporter "
             "reaches it through its Service)")
    secrets_root: str = setting(SECRETS_ROOT_VARIABLE, default=SECRETS_ROOT)
    release: str = setting(RELEASE)
    sink_secret_prefix: str = setting(SINK_SECRET_PREFIX, default=DEFAULT_SECRET_PREFIX)
    webhook_port: int = setting(
        "TUNEPLANE_WEBHOOK_PORT", parse=positive, default=8443,
        help="port of the admission webhook (HTTPS) the API server asks before storing a "
             "TelemetryDestination")
    webhook_cert: Path = setting(
        "TUNEPLANE_WEBHOOK_TLS_CERT", parse=Path,
        default=Path("/etc/tuneplane/webhook-tls/tls.crt"),
        help="the webhook's certificate (PEM), which the chart makes and the API server is "
             "given the CA of")
    webhook_key: Path = setting(
        "TUNEPLANE_WEBHOOK_TLS_KEY", parse=Path,
        default=Path("/etc/tuneplane/webhook-tls/tls.key"),
        help="the webhook certificate's private key (PEM)")
    resync_seconds: float = setting(
        "TUNEPLANE_DESTINATIONS_RESYNC_SECONDS", parse=seconds, default=30.0,
        help="how often the controller composes again without a change seen")
