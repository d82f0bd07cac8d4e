"""What the collector binary (collector/binary) reads from its environment, declared for
the settings table (scripts/gen-settings-doc) and for the node agent and control, which set
these for each launch. The binary parses them itself (``src/settings.rs``, ``src/slurm``);
``tests/contract/test_collector_settings.py`` holds the two to the same names."""

from __future__ import annotations

from pathlib import Path

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
    "TUNEPLANE_COLLECTOR_FAILPOINTS", "fault tests only, in a build with the `failpoints` "
    "feature: `POINT=N,...` makes the collector SIGKILL itself the Nth time it passes POINT "
    "(read, seal, send, ack, delete); a release build refuses it")

MOUNT_TABLE = Variable(
    "TUNEPLANE_COLLECTOR_MOUNT_TABLE", "the mount table a collector judges its spool root's "
    "filesystem from (a shared one is refused): for hosts whose /proc is masked, and fault "
    "tests", parse=Path)

READER_SECONDS = Variable(
    "TUNEPLANE_COLLECTOR_READER_SECONDS", "how long the reader a collector runs as the "
    "training user (`run --read-as`) may take to answer before it is killed and replaced: "
    "raise it where sources sit on a slow filesystem", parse=int)

RETRY_SECONDS = Variable(
    "TUNEPLANE_COLLECTOR_RETRY_SECONDS", "how long one round of sending retries a failing "
    "batch before the collector leaves it to the next round (it never gives up on a batch)",
    parse=int)

METRICS_TEXTFILE_DIR = Variable(
    "TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR", "node_exporter's textfile-collector directory: "
    "each running collector writes its spool's figures there "
    "(`tuneplane-collector-<hash>.prom`, every 15 s; removed once all is delivered); unset: "
    "none are written. A node agent's collectors inherit it from the agent", parse=Path)

#: What a Slurm job's collector learns of its job from the step's environment.
SLURM_JOB_ID = Variable("SLURM_JOB_ID", "set by Slurm in a job step: the job a Slurm job's "
                        "collector serves")
SLURM_NODEID = Variable("SLURM_NODEID", "set by Slurm in a job step: the node of the job "
                        "(0, 1, ...) a Slurm job's collector runs on", parse=int)
SLURM_RESTART_COUNT = Variable("SLURM_RESTART_COUNT", "set by Slurm in a requeued job: which "
                               "start of the job it is (unset: the first)", parse=int)
SLURM_CONTROL_CA = Variable("TUNEPLANE_SLURM_CONTROL_CA", "set by a Slurm job's script: the "
                            "CA certificates (PEM) of control, where its collectors redeem "
                            "the job's ticket")


class CollectorSettings(Settings):
    """``tuneplane-collector run`` and ``slurm-node``; ``read``, ``check``, ``spool`` and
    ``artifact`` read none of these."""

    spool_root: Needed[Path] = needed(TELEMETRY_SPOOL_ROOT, needed_for=("run without --spool",))
    target: Needed[str] = needed(TELEMETRY_TARGET, needed_for=("run without --target",))
    trust_bundle: Needed[Path] = needed(TELEMETRY_TRUST_BUNDLE,
                                        needed_for=("run without --ca-file",))
    spool_bytes: int = setting(TELEMETRY_SPOOL_BYTES, default=DEFAULT_SPOOL_BYTES,
                               shown="268435456 (256 MiB)")
    drain_seconds: int = setting(TELEMETRY_DRAIN_SECONDS, default=DEFAULT_DRAIN_SECONDS)
    reader_seconds: int = setting(READER_SECONDS, default=10)
    retry_seconds: int = setting(RETRY_SECONDS, default=5)
    failpoints: str = setting(FAILPOINTS, default="")
    mount_table: Path = setting(MOUNT_TABLE, default=Path("/proc/self/mountinfo"))
    metrics_textfile_dir: Path | None = setting(METRICS_TEXTFILE_DIR, default=None,
                                                flag="--metrics-textfile-dir")
    slurm_job_id: str | None = setting(SLURM_JOB_ID, default=None)
    slurm_node_id: int | None = setting(SLURM_NODEID, default=None)
    slurm_restart_count: int = setting(SLURM_RESTART_COUNT, default=0)
    slurm_control_ca: str = setting(SLURM_CONTROL_CA, default="")
