"""The environment variables more than one deployable reads, declared once: the name and
meaning compose, the Helm chart and every settings class agree on. A variable only one
deployable reads is declared beside its settings class."""

from __future__ import annotations

from pathlib import Path

from tuneplane.contract.parsers import positive
from tuneplane.contract.settings import Variable

DEFAULT_SPOOL_BYTES = 256 * 1024 * 1024
DEFAULT_DRAIN_SECONDS = 30
DEFAULT_MAX_SERIES = 100_000

DEFAULT_PROJECTOR_GROUP = "tuneplane-projector"

# The gateway's stores and shared secrets.
DATABASE_URL = Variable(
    "TUNEPLANE_DATABASE_URL", "PostgreSQL URL (`postgresql://user:password@host/db`): read "
    "models, runs, users, nodes, destinations and the shared gateway identity", secret=True)
KAFKA_BOOTSTRAP = Variable(
    "TUNEPLANE_KAFKA_BOOTSTRAP", "Kafka bootstrap servers (`host:port,...`) holding the "
    "batches topic")
PROJECTOR_GROUP = Variable(
    "TUNEPLANE_PROJECTOR_GROUP", "Kafka consumer group of the projector workers: those of one "
    "group share the topic's partitions; ingest reads its committed offsets to know the read "
    "models hold a member's batches before it answers GetCheckpoints")
S3_ENDPOINT = Variable(
    "TUNEPLANE_S3_ENDPOINT", "S3-compatible endpoint URL for rich records (credentials: the "
    "standard AWS variables, read by boto3)")
S3_BUCKET = Variable("TUNEPLANE_S3_BUCKET", "the bucket rich records are kept in")
WEB_JWT_SECRET = Variable(
    "TUNEPLANE_WEB_JWT_SECRET", "secret every token kind's signing key is derived from (at "
    "least 16 characters); the same on every replica", secret=True)
SECRET_ENC_KEY = Variable(
    "TUNEPLANE_SECRET_ENC_KEY", "key sealing the shared gateway identity's private keys in "
    "PostgreSQL (at least 16 characters); the same on every replica", secret=True)
GATEWAY_HOSTNAME = Variable(
    "TUNEPLANE_GATEWAY_HOSTNAME", "name the gateway's TLS certificate covers")

# What collectors on execution hosts are told (by Node control, or by hand).
TELEMETRY_TARGET = Variable(
    "TUNEPLANE_TELEMETRY_TARGET", "telemetry listener address collectors dial (`host:8444`)")
TELEMETRY_TRUST_BUNDLE = Variable(
    "TUNEPLANE_TELEMETRY_TRUST_BUNDLE", "CA chain (PEM file) that signs the gateway "
    "certificate: collectors verify ingest with it; with an externally managed certificate "
    "the listeners hand it to collectors", parse=Path)
TELEMETRY_SPOOL_ROOT = Variable(
    "TUNEPLANE_TELEMETRY_SPOOL_ROOT", "host-local directory on execution hosts under which "
    "each member's spool is kept (`<root>/<run>/<attempt>/<member>`)", parse=Path)
TELEMETRY_SPOOL_BYTES = Variable(
    "TUNEPLANE_TELEMETRY_SPOOL_BYTES", "spool size in bytes at which a collector pauses "
    "reading", parse=positive)
TELEMETRY_DRAIN_SECONDS = Variable(
    "TUNEPLANE_TELEMETRY_DRAIN_SECONDS", "seconds a stopping collector keeps sending before "
    "it leaves the rest spooled; ingest and the reporting path refuse an ended attempt's "
    "workload tokens from 30 s past this after its end (the same value everywhere)",
    parse=positive)

# Bounds the gateway holds every attempt to.
TELEMETRY_MAX_SERIES = Variable(
    "TUNEPLANE_TELEMETRY_MAX_SERIES", "distinct series one attempt may have, across its "
    "members: ingest refuses a batch that would pass it (INVALID_ARGUMENT naming the chunk), "
    "and the projector dead-letters one that still does (ingest's count lags projection)",
    parse=positive)
