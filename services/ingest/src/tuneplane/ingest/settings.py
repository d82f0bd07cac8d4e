"""What ``tuneplane-ingest`` reads from its environment, parsed once at its start."""

from __future__ import annotations

from tuneplane.common.gateway.settings import GatewaySettings
from tuneplane.contract.settings import Settings, section, setting
from tuneplane.contract.variables import KAFKA_BOOTSTRAP, WEB_JWT_SECRET


class IngestSettings(Settings):
    kafka_bootstrap: str = setting(KAFKA_BOOTSTRAP)
    jwt_secret: str = setting(WEB_JWT_SECRET)
    gateway: GatewaySettings = section(GatewaySettings)
