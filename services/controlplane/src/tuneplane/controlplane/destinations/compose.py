"""Composition: every TelemetryDestination → one OpenTelemetry Collector configuration.

Pure and deterministic: destinations in name order, sinks in their order, passthrough
``config`` and ``extensions`` emitted exactly as given (same keys, order and values).
Per sink: exporter ``<exporter>/<sink>``; with ``auth.bearerToken``, an extension
``bearertokenauth/<sink>`` reading the token from the sink's secret directory (the
collector re-reads the file when it changes, so a rotated token needs no restart). With
no destination nothing is composed at all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tuneplane.controlplane.destinations.resource import SECRETS_ROOT, Destination, DestinationError

#: Where the exporter service sends OTLP to the composed collector.
RECEIVER_ENDPOINT = "127.0.0.1:4317"


def check_together(destinations: Sequence[Destination]) -> None:
    """Sink names (and so exporter, authenticator and secret directory) and extension ids
    are unique across all destinations."""
    sinks: dict[str, str] = {}
    extensions: dict[str, str] = {}
    composed = {s.authenticator_id for d in destinations for s in d.sinks if s.bearer_key}
    for destination in sorted(destinations, key=lambda d: d.name):
        for sink in destination.sinks:
            other = sinks.setdefault(sink.name, destination.name)
            if other != destination.name:
                raise DestinationError(f"destination {destination.name!r}: sink {sink.name!r} "
                                       f"is already a sink of destination {other!r}")
        for key in destination.extensions:
            other = extensions.setdefault(key, destination.name)
            if other != destination.name:
                raise DestinationError(f"destination {destination.name!r}: extension {key!r} "
                                       f"is already declared by destination {other!r}")
        clash = composed & set(destination.extensions)
        if clash:
            raise DestinationError(f"destination {destination.name!r}: extension "
                                   f"{sorted(clash)[0]!r} is composed for a sink")


def render(destinations: Sequence[Destination], *, receiver_endpoint: str = RECEIVER_ENDPOINT,
           secrets_root: str = SECRETS_ROOT) -> dict[str, Any] | None:
    """The collector configuration; None (nothing at all) without destinations. A sink's
    secret keys are files under ``<secrets_root>/<sink>/``."""
    if not destinations:
        return None
    check_together(destinations)
    ordered = sorted(destinations, key=lambda d: d.name)
    extensions: dict[str, Any] = {}
    exporters: dict[str, Any] = {}
    for destination in ordered:
        for sink in destination.sinks:
            exporter: dict[str, Any] = {}
            if sink.endpoint is not None:
                exporter["endpoint"] = sink.endpoint
            if sink.bearer_key is not None:
                exporter["auth"] = {"authenticator": sink.authenticator_id}
                extensions[sink.authenticator_id] = {
                    "filename": f"{sink.secret_dir(secrets_root)}/{sink.bearer_key}"}
            exporter.update(sink.config)
            exporters[sink.exporter_id] = exporter
        extensions.update(destination.extensions)
    service: dict[str, Any] = {}
    if extensions:
        service["extensions"] = list(extensions)
    service["pipelines"] = {"metrics": {"receivers": ["otlp"], "exporters": list(exporters)}}
    config: dict[str, Any] = {
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": receiver_endpoint}}}}}
    if extensions:
        config["extensions"] = extensions
    config["exporters"] = exporters
    config["service"] = service
    return config


def dumps(config: dict[str, Any]) -> str:
    """The configuration as the collector reads it (JSON is YAML), byte-stable."""
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"
