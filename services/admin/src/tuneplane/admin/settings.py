"""What ``tuneplane-admin`` reads from its environment, parsed once at its start. Each
command needs only its part: a variable is required by the commands listed with it."""

from __future__ import annotations

from pathlib import Path

from tuneplane.common.kafka.topics import TopicSettings
from tuneplane.contract.settings import Needed, Settings, needed, section, setting
from tuneplane.contract.variables import (
    DATABASE_URL,
    GATEWAY_HOSTNAME,
    KAFKA_BOOTSTRAP,
    S3_BUCKET,
    S3_ENDPOINT,
    TELEMETRY_TRUST_BUNDLE,
    WEB_JWT_SECRET,
)

USER_COMMANDS = ("bootstrap-admin", "user-add", "user-token")
PROJECT_COMMANDS = ("project-create", "project-grant", "project-revoke", "project-members",
                    "project-retention", "retention", "user-disable", "user-password")
DATABASE_COMMANDS = ("init", "migrate", "gateway-ca", "run-create", "attempt-start",
                     "attempt-end", "run-show", "freeze-mapping", *USER_COMMANDS,
                     *PROJECT_COMMANDS, "lifecycle", "curves", "sign-in-link", "durability",
                     "run-export", "repack-chunks")


class AdminSettings(Settings):
    database_url: Needed[str] = needed(DATABASE_URL, needed_for=DATABASE_COMMANDS)
    kafka_bootstrap: Needed[str] = needed(KAFKA_BOOTSTRAP,
                                             needed_for=("init", "topics", "durability"))
    topics: TopicSettings = section(TopicSettings)
    s3_endpoint: Needed[str] = needed(S3_ENDPOINT, needed_for=("init", "bucket", "durability",
                                                                       "run-export"))
    s3_bucket: Needed[str] = needed(S3_BUCKET, needed_for=("init", "bucket", "durability",
                                                           "run-export"))
    jwt_secret: Needed[str] = needed(WEB_JWT_SECRET, needed_for=("token", "delivery-token",
                                                                *USER_COMMANDS))
    #: Set with an externally managed gateway certificate: ``gateway-ca`` prints it.
    trust_bundle: Path | None = setting(TELEMETRY_TRUST_BUNDLE, default=None)
    #: ``tls-init``'s name when no --hostname is given.
    gateway_hostname: str = setting(GATEWAY_HOSTNAME, default="localhost")
