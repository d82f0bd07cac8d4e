"""What ``tuneplane-collector run`` reads from its environment, parsed once at its start.
On a node, the agent sets these for each launch; by hand, flags may stand in for them."""

from __future__ import annotations

from pathlib import Path

from tuneplane.collector import failpoints
from tuneplane.contract.settings import Needed, Settings, Variable, needed, setting
from tuneplane.contract.variables import (
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_SPOOL_BYTES,
    TELEMETRY_DRAIN_SECONDS,
    TELEMETRY_SPOOL_BYTES,
    TELEMETRY_SPOOL_ROOT,
    TELEMETRY_TARGET,
    TELEMETRY_TRUST_BUNDLE,
)

FAILPOINTS = Variable(
    "TUNEPLANE_COLLECTOR_FAILPOINTS", "fault tests only: `POINT=N,...` makes the collector "
    "SIGKILL itself the Nth time it passes POINT (read, seal, send, ack, delete)",
    parse=failpoints.parse)

MOUNT_TABLE = Variable(
    "TUNEPLANE_COLLECTOR_MOUNT_TABLE", "the mount table a Slurm job's collector judges its "
    "spool root's filesystem from (a shared one is refused): for hosts whose /proc is "
    "masked, and fault tests", parse=Path)


class CollectorSettings(Settings):
    spool_root: Needed[Path] = needed(TELEMETRY_SPOOL_ROOT, needed_for=("run without --spool",))
    target: Needed[str] = needed(TELEMETRY_TARGET, needed_for=("run without --target",))
    trust_bundle: Needed[Path] = needed(TELEMETRY_TRUST_BUNDLE,
                                        needed_for=("run without --ca-file",))
    spool_bytes: int = setting(TELEMETRY_SPOOL_BYTES, default=DEFAULT_SPOOL_BYTES,
                               shown="268435456 (256 MiB)")
    drain_seconds: int = setting(TELEMETRY_DRAIN_SECONDS, default=DEFAULT_DRAIN_SECONDS)
    failpoints: dict[str, int] = setting(FAILPOINTS, default_factory=dict)
    mount_table: Path = setting(MOUNT_TABLE, default=Path("/proc/self/mountinfo"))
