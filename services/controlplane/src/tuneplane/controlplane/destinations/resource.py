"""The TelemetryDestination resource (Kubernetes style): read, validated, with the path of
the bad field in every error.

The schema (``destination-v1.json``, fastjsonschema) says the shape; this module says
what a schema cannot: sink names unique, a bearer token needs the secret it is read from,
an endpoint that parses, settings Tuneplane composes not set twice through ``config``.
``config`` and ``spec.extensions`` are otherwise passed through unread.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import fastjsonschema

from tuneplane.controlplane.errors import Invalid

API_VERSION = "tuneplane.dev/v1"
KIND = "TelemetryDestination"
#: Where a sink's secret keys reach the collector, one directory per sink.
SECRETS_ROOT = "/etc/tuneplane/telemetry"
COMPONENT_ID = re.compile(r"^[a-z][a-z0-9_]*(/[^/\s]+)?$")

_validate = fastjsonschema.compile(json.loads(
    (resources.files("tuneplane.controlplane.destinations") / "destination-v1.json").read_text()))


class DestinationError(Invalid):
    """The resource breaks its contract; the message names the field's path."""


@dataclass(frozen=True, slots=True)
class Sink:
    name: str
    exporter: str
    endpoint: str | None
    secret: str | None
    bearer_key: str | None
    config: dict[str, Any]

    @property
    def exporter_id(self) -> str:
        return f"{self.exporter}/{self.name}"

    @property
    def authenticator_id(self) -> str:
        return f"bearertokenauth/{self.name}"

    def secret_dir(self, root: str = SECRETS_ROOT) -> str:
        """Where the sink's secret keys are mounted, one directory per sink name."""
        return f"{root}/{self.name}"


@dataclass(frozen=True, slots=True)
class Destination:
    name: str
    sinks: tuple[Sink, ...]
    extensions: dict[str, Any]
    document: dict[str, Any]


def check_endpoint(path: str, endpoint: str) -> None:
    """A URL with a scheme and host, or host:port; nothing else is guessed at."""
    if "://" in endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DestinationError(f"{path}: {endpoint!r} is not an http(s) URL with a host")
        try:
            parts.port  # noqa: B018  (raises on a bad port)
        except ValueError as exc:
            raise DestinationError(f"{path}: {endpoint!r}: {exc}") from None
        return
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise DestinationError(f"{path}: {endpoint!r} is neither an http(s) URL nor host:port")
    bare = host.strip("[]")
    if bare != host:
        try:
            ipaddress.IPv6Address(bare)
        except ValueError:
            raise DestinationError(f"{path}: {host!r} is not an IPv6 address") from None


def parse(document: Any, origin: str = "destination") -> Destination:
    try:
        _validate(document)
    except fastjsonschema.JsonSchemaValueException as exc:
        path = (exc.name or "data").removeprefix("data").lstrip(".") or "(document)"
        message = exc.message.removeprefix(exc.name or "").strip()
        raise DestinationError(f"{origin}: {path}: {message}") from None
    sinks = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(document["spec"]["sinks"]):
        where = f"spec.sinks[{i}]"
        if raw["name"] in seen:
            raise DestinationError(f"{origin}: {where}.name: {raw['name']!r} is already the "
                                   f"name of spec.sinks[{seen[raw['name']]}]")
        seen[raw["name"]] = i
        if "endpoint" in raw:
            check_endpoint(f"{origin}: {where}.endpoint", raw["endpoint"])
        bearer = raw.get("auth", {}).get("bearerToken")
        if bearer is not None and "secretRef" not in raw:
            raise DestinationError(f"{origin}: {where}.auth.bearerToken: needs {where}."
                                   "secretRef, the secret holding the token")
        config = raw.get("config", {})
        for key, composed in (("endpoint", "endpoint" in raw), ("auth", bearer is not None)):
            if composed and key in config:
                raise DestinationError(f"{origin}: {where}.config.{key}: set by {where}.{key}; "
                                       "give it once")
        sinks.append(Sink(raw["name"], raw["exporter"], raw.get("endpoint"),
                          raw.get("secretRef", {}).get("name"),
                          bearer["key"] if bearer else None, config))
    extensions = document["spec"].get("extensions", {})
    for key in extensions:
        if not COMPONENT_ID.match(key):
            raise DestinationError(f"{origin}: spec.extensions.{key}: not an OpenTelemetry "
                                   "component id (type or type/name)")
        if key.startswith("bearertokenauth/") and key.split("/", 1)[1] in seen:
            raise DestinationError(f"{origin}: spec.extensions.{key}: composed for sink "
                                   f"{key.split('/', 1)[1]!r}; name it otherwise")
    return Destination(document["metadata"]["name"], tuple(sinks), extensions, document)
