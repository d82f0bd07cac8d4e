"""The TelemetryDestination resource (Kubernetes style): read, validated, with the path of
the bad field in every error.

The schema (``destination-v1.json``, fastjsonschema) says the shape; ``limits`` the size
(nesting and bytes, checked first); this module says what a schema cannot: sink names
unique, a bearer token needs the secret it is read from, an endpoint that parses, settings
Tuneplane composes not set twice through ``config``, a ``debug`` sink that does not print
the points it is sent, and (where the backend asks, Kubernetes) a ``secretRef`` naming
only a sink's Secret, by its name's prefix.
``config`` and ``spec.extensions`` are passed through, but for what would reach past
their sink (``passthrough``): expansions, files outside the sink's directory, another
sink's extensions.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import fastjsonschema

from tuneplane.destinations import limits
from tuneplane.destinations.passthrough import Refused, check, check_text
from tuneplane.destinations.redaction import redacted

API_VERSION = "tuneplane.dev/v1"
KIND = "TelemetryDestination"
#: Where a sink's secret keys reach the collector, one directory per sink.
SECRETS_ROOT = "/etc/tuneplane/telemetry"
COMPONENT_ID = re.compile(r"^[a-z][a-z0-9_]*(/[^/\s]+)?$")
#: The ``debug`` exporter's verbosity that prints no data point (``normal`` prints one line
#: per point, its attributes and value; ``detailed`` all of it): every tenant's curves
#: would be in the collector's log.
DEBUG_VERBOSITY = "basic"

#: The resource's JSON Schema (``destination-v1.json``); the CRD is made from it too.
SCHEMA: dict[str, Any] = json.loads(
    (resources.files("tuneplane.destinations") / "destination-v1.json").read_text())
_validate = fastjsonschema.compile(SCHEMA)


class DestinationError(ValueError):
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

    def owner(self, extension: str) -> str | None:
        """The sink an extension belongs to: the one it is named for (``<type>/<sink>``);
        None for one the destination's sinks share."""
        name = extension.partition("/")[2]
        return name if any(sink.name == name for sink in self.sinks) else None

    def owners(self) -> dict[str, str | None]:
        """Every extension composed for or declared by the destination, with its owner."""
        return {**{s.authenticator_id: s.name for s in self.sinks if s.bearer_key},
                **{key: self.owner(key) for key in self.extensions}}

    def passthrough(self) -> Iterator[tuple[str, str, str | None, Any]]:
        """(path, component type, owning sink or None, settings) of each part passed
        through to the collector."""
        for i, sink in enumerate(self.sinks):
            yield f"spec.sinks[{i}].config", sink.exporter, sink.name, sink.config
        for key, value in self.extensions.items():
            yield f"spec.extensions.{key}", key.partition("/")[0], self.owner(key), value


def check_endpoint(path: str, endpoint: str) -> None:
    """A URL with a scheme and host, or host:port; nothing else is guessed at. Errors show
    it without its user information."""
    shown = redacted(endpoint)
    if "://" in endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DestinationError(f"{path}: {shown!r} is not an http(s) URL with a host")
        try:
            parts.port  # noqa: B018  (raises on a bad port)
        except ValueError as exc:
            raise DestinationError(f"{path}: {shown!r}: {exc}") from None
        return
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise DestinationError(f"{path}: {shown!r} is neither an http(s) URL nor host:port")
    bare = host.strip("[]")
    if bare != host:
        try:
            ipaddress.IPv6Address(bare)
        except ValueError:
            raise DestinationError(f"{path}: {host!r} is not an IPv6 address") from None


def parse(document: Any, origin: str = "destination", *,
          secret_prefix: str | None = None) -> Destination:
    """The destination ``document`` holds, or DestinationError naming the field.
    ``secret_prefix``: what every ``secretRef`` name starts with (the Kubernetes backend:
    a sink reads only the Secrets made for sinks, never the release's own); None: not
    checked (PostgreSQL: the Secrets mounted are the deployment's, not the resource's)."""
    too_big = limits.refusal(document)
    if too_big is not None:
        raise DestinationError(f"{origin}: {too_big}")
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
            check_plain(origin, f"{where}.endpoint", raw["endpoint"])
            check_endpoint(f"{origin}: {where}.endpoint", raw["endpoint"])
        bearer = raw.get("auth", {}).get("bearerToken")
        if bearer is not None and "secretRef" not in raw:
            raise DestinationError(f"{origin}: {where}.auth.bearerToken: needs {where}."
                                   "secretRef, the secret holding the token")
        if bearer is not None and bearer["key"] in (".", ".."):
            raise DestinationError(f"{origin}: {where}.auth.bearerToken.key: {bearer['key']!r} "
                                   "is not a file in the sink's directory")
        if "secretRef" in raw and secret_prefix is not None:
            check_secret_ref(origin, f"{where}.secretRef.name", raw["secretRef"]["name"],
                             secret_prefix)
        config = raw.get("config", {})
        if raw["exporter"] == "debug":
            check_debug(origin, f"{where}.config.verbosity", config)
        for key, composed in (("endpoint", "endpoint" in raw), ("auth", bearer is not None)):
            if composed and key in config:
                raise DestinationError(f"{origin}: {where}.config.{key}: set by {where}.{key}; "
                                       "give it once")
        sinks.append(Sink(raw["name"], raw["exporter"], raw.get("endpoint"),
                          raw.get("secretRef", {}).get("name"),
                          bearer["key"] if bearer else None, config))
    extensions = document["spec"].get("extensions", {})
    for key in extensions:
        check_plain(origin, f"spec.extensions.{key}", key)
        if not COMPONENT_ID.match(key):
            raise DestinationError(f"{origin}: spec.extensions.{key}: not an OpenTelemetry "
                                   "component id (type or type/name)")
        if key.startswith("bearertokenauth/") and key.split("/", 1)[1] in seen:
            raise DestinationError(f"{origin}: spec.extensions.{key}: composed for sink "
                                   f"{key.split('/', 1)[1]!r}; name it otherwise")
    destination = Destination(document["metadata"]["name"], tuple(sinks), extensions, document)
    owners = destination.owners()
    try:
        for path, component, scope, settings in destination.passthrough():
            check(settings, path, component, scope, owners, SECRETS_ROOT)
    except Refused as exc:
        raise DestinationError(f"{origin}: {exc}") from None
    return destination


def check_plain(origin: str, where: str, text: str) -> None:
    """A field Tuneplane composes itself, checked as passthrough text is."""
    try:
        check_text(where, text)
    except Refused as exc:
        raise DestinationError(f"{origin}: {exc}") from None


def check_secret_ref(origin: str, where: str, name: str, prefix: str) -> None:
    """A sink's Secret is one made for sinks: its name starts with ``prefix``."""
    if not name.startswith(prefix):
        raise DestinationError(
            f"{origin}: {where}: {name!r} does not start with {prefix!r}; a sink reads only "
            f"Secrets named {prefix}<name> (no other Secret of the release's namespace, its "
            "own among them, is sent anywhere)")


def check_debug(origin: str, where: str, config: dict[str, Any]) -> None:
    """A ``debug`` sink prints no data point into the collector's log."""
    if "verbosity" not in config:
        return  # the debug exporter's default is basic
    verbosity = config["verbosity"]
    if not isinstance(verbosity, str) or verbosity.lower() != DEBUG_VERBOSITY:
        raise DestinationError(
            f"{origin}: {where}: {verbosity!r} is refused; a debug sink takes verbosity "
            f"{DEBUG_VERBOSITY!r} only (normal and detailed print every point it is sent, "
            "every tenant's curves, into the collector's log)")
