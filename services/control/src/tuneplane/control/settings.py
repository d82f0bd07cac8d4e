"""What ``tuneplane-control`` reads from its environment, parsed once at its start: its
database, for ``serve`` what every launch's collector is told, and what of its environment
its Slurm backend hands on: to Slurm's client commands (where they and the cluster's
configuration are) and to the Slurm jobs' collectors (their ``TUNEPLANE_COLLECTOR_*``
settings), nothing else. The settings of ``serve`` with a flag are overridden by it
(``tuneplane.contract.flags``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from tuneplane.common.gateway.settings import GatewaySettings
from tuneplane.contract.parsers import nice_increment, port, positive, rate, seconds
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
from tuneplane.control.gate import DEFAULT_RATE

DIGEST = re.compile(r"^[0-9a-f]{64}$")
COLLECTOR_PREFIX = "TUNEPLANE_COLLECTOR_"
#: Of control's environment, what Slurm's client commands need: where they and the cluster's
#: configuration are, and the locale. Nothing else of control's (its database URL, its
#: signing secret) reaches sbatch or a job.
SLURM_CLIENT = ("PATH", "LANG", "LC_ALL", "TZ", "SLURM_CONF")
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
    max_concurrent_rpcs: int = setting(
        "TUNEPLANE_CONTROL_MAX_CONCURRENT_RPCS", parse=positive, default=64,
        flag="--max-concurrent-rpcs",
        help="calls in flight on Node control before it answers RESOURCE_EXHAUSTED")
    db_pool: int = setting(
        "TUNEPLANE_CONTROL_DB_POOL", parse=positive, default=8, flag="--db-pool-size",
        help="database connections of one control process (its own pool: never ingest's)")
    node_calls_per_second: float = setting(
        "TUNEPLANE_CONTROL_NODE_CALLS_PER_SECOND", parse=rate, default=DEFAULT_RATE.per_second,
        flag="--node-calls-per-second",
        help="calls one node may make per second on average, four seconds' worth at once; "
             "past it a call is refused with RESOURCE_EXHAUSTED before any database work, "
             "answered when the node's next call would be admitted (at most 1 s later; agents "
             "retry with backoff). An agent beats every heartbeat and reports each launch a "
             "few times (0: no limit)")
    nice: int = setting(
        "TUNEPLANE_CONTROL_NICE", parse=nice_increment, default=10, flag="--nice",
        help="how much lower control's CPU priority is than what started it (0 to 19), so "
             "telemetry sharing the host's CPU wins under a flood of node calls (0 keeps it)")
    workload_token_ttl: int = setting(
        "TUNEPLANE_CONTROL_WORKLOAD_TOKEN_TTL", parse=positive, default=900,
        flag="--workload-token-ttl",
        help="seconds a workload token lives; agents and Slurm collectors renew it at half")
    heartbeat_seconds: int = setting(
        "TUNEPLANE_CONTROL_HEARTBEAT_SECONDS", parse=positive, default=5,
        flag="--heartbeat-seconds", help="how often node agents are told to beat")
    slurm_poll_seconds: float = setting(
        "TUNEPLANE_CONTROL_SLURM_POLL_SECONDS", parse=seconds, default=2.0,
        flag="--slurm-poll-seconds",
        help="with --slurm: how often Slurm launches are submitted and their jobs looked at")
    metrics_port: int = setting(
        "TUNEPLANE_CONTROL_METRICS_PORT", parse=port, default=0, flag="--metrics-port",
        help="port `serve` serves its Prometheus metrics on (`/metrics`, plain HTTP, on "
             "--host), never the Node control port; 0: not served")
    #: Control's ``TUNEPLANE_COLLECTOR_*`` settings, handed to Slurm jobs' collectors only.
    collector_environment: dict[str, str] = dataclasses.field(default_factory=dict)
    #: What Slurm's client commands (sbatch, squeue) are run with of control's environment.
    slurm_client_environment: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_environ(cls, env: Mapping[str, str],
                     flags: Mapping[str, str] | None = None) -> Self:
        found = super().from_environ(env, flags)
        return dataclasses.replace(
            found, collector_environment={k: v for k, v in env.items()
                                          if k.startswith(COLLECTOR_PREFIX)},
            slurm_client_environment={k: env[k] for k in SLURM_CLIENT if k in env})
