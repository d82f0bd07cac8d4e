"""What a deployment of each deployable must set: the settings its class requires, for the
command and modes it is run with (compose services, Helm workloads)."""

from __future__ import annotations

from collections.abc import Iterable

from tuneplane.admin.settings import AdminSettings
from tuneplane.common.gateway.settings import EXTERNAL_CERTIFICATE, SHARED_IDENTITY
from tuneplane.contract.settings import Settings, describe
from tuneplane.control.settings import ControlSettings
from tuneplane.exporter.kube.settings import ControllerSettings
from tuneplane.exporter.settings import ExporterSettings
from tuneplane.ingest.settings import IngestSettings
from tuneplane.projector.settings import ProjectorSettings
from tuneplane.web.settings import WebSettings

#: Image (compose build target, Helm image suffix) → its settings class and the command its
#: entrypoint runs (Dockerfile).
IMAGES: dict[str, tuple[type[Settings], str]] = {
    "admin": (AdminSettings, ""),  # the command comes from the deployment's arguments
    "ingest": (IngestSettings, "serve"),
    "control": (ControlSettings, "serve"),
    "projector": (ProjectorSettings, "worker"),
    "web": (WebSettings, "serve"),
    "exporter": (ExporterSettings, "serve"),
}


#: Commands a deployment runs in place of its image's entrypoint → their settings class.
COMMANDS: dict[str, tuple[type[Settings], str]] = {
    "tuneplane-destinations": (ControllerSettings, "serve"),
}


def listener_mode(args: Iterable[str]) -> set[str]:
    """The listener mode the gateway's TLS flags select (see tuneplane.common.gateway)."""
    flags = {arg.split("=", 1)[0] for arg in args}
    if "--certificate" in flags:
        return {EXTERNAL_CERTIFICATE}
    return set() if "--tls-dir" in flags else {SHARED_IDENTITY}


def required(image: str, args: list[str], entrypoint: list[str] | None = None) -> set[str]:
    """The variables a container of ``image`` run with ``args`` (and ``entrypoint``, when
    it replaces the image's) must have set."""
    settings, command = COMMANDS[entrypoint[0]] if entrypoint and entrypoint[0] in COMMANDS \
        else IMAGES[image]
    uses = {command or (args[0] if args else ""), *listener_mode(args)}
    return {d.variable.name for d in describe(settings) if d.needed_by(uses)}


def defaults(image: str) -> dict[str, str]:
    """The defaults of the image's settings, by variable (as text)."""
    settings, _ = IMAGES[image]
    return {d.variable.name: d.default for d in describe(settings) if d.default}
