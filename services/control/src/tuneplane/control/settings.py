"""What ``tuneplane-control`` reads from its environment, parsed once at its start: its
database, and for ``serve`` what every launch's collector is told."""

from __future__ import annotations

import re
from pathlib import Path

from tuneplane.common.gateway.settings import GatewaySettings
from tuneplane.contract.settings import Needed, Settings, Variable, needed, section, setting
from tuneplane.contract.variables import (
    DATABASE_URL,
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_SPOOL_BYTES,
    TELEMETRY_DRAIN_SECONDS,
    TELEMETRY_SPOOL_BYTES,
    TELEMETRY_SPOOL_ROOT,
    TELEMETRY_TARGET,
    WEB_JWT_SECRET,
)

DIGEST = re.compile(r"^[0-9a-f]{64}$")
SERVE = ("serve",)


def artifact_directory(raw: str) -> Path:
    artifact = Path(raw)
    if not DIGEST.match(artifact.name):
        raise ValueError(f"{artifact} must name a content-addressed artifact directory "
                         "(<sha256 of its manifest>, as `tuneplane-collector artifact build` "
                         "prints it)")
    return artifact


COLLECTOR_ARTIFACT = Variable(
    "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT", "the collector artifact directory on execution "
    "hosts (`<dir>/<sha256 of its manifest>`), the same path on every host",
    parse=artifact_directory)


class ControlSettings(Settings):
    database_url: str = setting(DATABASE_URL)
    jwt_secret: Needed[str] = needed(WEB_JWT_SECRET, needed_for=SERVE)
    telemetry_target: Needed[str] = needed(TELEMETRY_TARGET, needed_for=SERVE)
    spool_root: Needed[Path] = needed(TELEMETRY_SPOOL_ROOT, needed_for=SERVE)
    collector_artifact: Needed[Path] = needed(COLLECTOR_ARTIFACT, needed_for=SERVE)
    spool_bytes: int = setting(TELEMETRY_SPOOL_BYTES, default=DEFAULT_SPOOL_BYTES,
                               shown="268435456 (256 MiB)")
    drain_seconds: int = setting(TELEMETRY_DRAIN_SECONDS, default=DEFAULT_DRAIN_SECONDS)
    gateway: GatewaySettings = section(GatewaySettings)
