"""Composition: every TelemetryDestination → one OpenTelemetry Collector configuration.

Pure and deterministic: destinations in name order, sinks in their order, passthrough
``config`` and ``extensions`` emitted as given (same keys, order and values) but for file
fields, made paths in the sink's directory (``passthrough``). Per sink: exporter
``<exporter>/<sink>``; with ``auth.bearerToken``, an extension ``bearertokenauth/<sink>``
reading the token from the sink's secret directory (the collector re-reads the file when
it changes, so a rotated token needs no restart). With no destination nothing is
composed at all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tuneplane.destinations.passthrough import (
    Refused,
    component_id,
    resolve,
    values,
)
from tuneplane.destinations.resource import SECRETS_ROOT, Destination, DestinationError

#: Where the exporter service sends OTLP to the composed collector.
RECEIVER_ENDPOINT = "127.0.0.1:4317"


def check_together(destinations: Sequence[Destination]) -> None:
    """Sink names (and so exporter, authenticator and secret directory) and extension ids
    are unique across all destinations; an extension is not named for another
    destination's sink, and a destination names no other destination's extension (a
    value read as the collector reads a component id, ``component_id``)."""
    sinks: dict[str, str] = {}
    extensions: dict[str, str] = {}
    ordered = sorted(destinations, key=lambda d: d.name)
    for destination in ordered:
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
    owned = {cid: d.name for d in ordered for cid in d.owners()}
    for destination in ordered:
        for key in destination.extensions:
            name = key.partition("/")[2]
            other = sinks.get(name, destination.name)
            if other != destination.name:
                raise DestinationError(f"destination {destination.name!r}: extension {key!r} "
                                       f"is named for sink {name!r} of destination {other!r}")
        for path, _, _, settings in destination.passthrough():
            for where, _, text in values(settings, path):
                other = owned.get(component_id(text), destination.name)
                if other != destination.name:
                    raise DestinationError(
                        f"destination {destination.name!r}: {where}: {text!r} is an extension "
                        f"of destination {other!r}; a destination names only its own")


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
        for i, sink in enumerate(destination.sinks):
            exporter: dict[str, Any] = {}
            if sink.endpoint is not None:
                exporter["endpoint"] = sink.endpoint
            if sink.bearer_key is not None:
                exporter["auth"] = {"authenticator": sink.authenticator_id}
                extensions[sink.authenticator_id] = {
                    "filename": f"{sink.secret_dir(secrets_root)}/{sink.bearer_key}"}
            exporter.update(within(destination, sink.config, sink.exporter, sink.name,
                                   f"spec.sinks[{i}].config", secrets_root))
            exporters[sink.exporter_id] = exporter
        for key, value in destination.extensions.items():
            extensions[key] = within(destination, value, key.partition("/")[0],
                                     destination.owner(key), f"spec.extensions.{key}",
                                     secrets_root)
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


def within(destination: Destination, settings: Any, component: str, sink: str | None,
           path: str, secrets_root: str) -> Any:
    """Passthrough settings with their file fields in the sink's directory."""
    directory = None if sink is None else f"{secrets_root}/{sink}"
    try:
        return resolve(settings, component, directory, secrets_root, path)
    except Refused as exc:
        raise DestinationError(f"destination {destination.name!r}: {exc}") from None


def dumps(config: dict[str, Any]) -> str:
    """The configuration as the collector reads it (JSON is YAML), byte-stable."""
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"
