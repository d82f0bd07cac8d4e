"""What the gateway's gRPC listeners read for TLS: the shared identity kept in PostgreSQL,
or the CA chain of an externally managed certificate. A section of the settings of each
service that listens (ingest, control)."""

from __future__ import annotations

from pathlib import Path

from tuneplane.contract.parsers import seconds
from tuneplane.contract.settings import Needed, Settings, needed, setting
from tuneplane.contract.variables import (
    DATABASE_URL,
    GATEWAY_HOSTNAME,
    SECRET_ENC_KEY,
    TELEMETRY_TRUST_BUNDLE,
)

#: The listener modes that need settings: without --certificate or --tls-dir, and with it.
SHARED_IDENTITY = "the shared gateway identity"
EXTERNAL_CERTIFICATE = "--certificate"


class GatewaySettings(Settings):
    database_url: Needed[str] = needed(DATABASE_URL, needed_for=(SHARED_IDENTITY,))
    hostname: Needed[str] = needed(GATEWAY_HOSTNAME, needed_for=(SHARED_IDENTITY,))
    secret_enc_key: Needed[str] = needed(SECRET_ENC_KEY, needed_for=(SHARED_IDENTITY,))
    trust_bundle: Needed[Path] = needed(TELEMETRY_TRUST_BUNDLE,
                                        needed_for=(EXTERNAL_CERTIFICATE,))
    identity_check_seconds: float = setting(
        "TUNEPLANE_GATEWAY_IDENTITY_CHECK_SECONDS", parse=seconds, default=3600.0,
        flag="--identity-check-seconds",
        help="how often a listener re-reads the shared gateway identity from PostgreSQL and "
             "renews it when due (30 days before expiry); new connections get the renewed "
             "certificate without a restart")
