"""One launch run to its end by the agent: a training command that cannot start (even for
a reason the launch itself carries) is reported failed, never left running; a collector
that keeps exiting is restarted, but not in a hot loop."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import cast

import pytest

from tuneplane.collector.node.client import ControlClient
from tuneplane.collector.node.host import Host
from tuneplane.collector.node.launch import LaunchRunner
from tuneplane.collector.node.runas import resolve
from tuneplane.node.v1 import node_pb2 as pb


class Control:
    """Stands in for the client: records reports, renews nothing."""

    def __init__(self) -> None:
        self.received: list[pb.LaunchReport] = []

    def report(self, report: pb.LaunchReport, *, give_up_after: float) -> str:
        self.received.append(report)
        return "failed"

    def renew(self, launch_id: int) -> pb.WorkloadToken:
        raise AssertionError("no renewal expected")


def run_launch(artifact_dir: Path, tmp_path: Path, *, command: list[str],
               environment: dict[str, str] | None = None,
               schema: dict[str, object] | None = None) -> Control:
    (tmp_path / "state" / "launches" / "7").mkdir(parents=True, mode=0o700)
    (tmp_path / "state").chmod(0o700)
    (tmp_path / "work").mkdir(mode=0o711)
    host = Host(tmp_path / "state", tmp_path / "work", resolve(None, allow_same_user=True))
    artifact: dict[str, object] = {"version": 1, "sources": [
        {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}
    if schema is not None:
        artifact["channels"] = [{"id": "c", "path": "c.jsonl", "owner": "rank-0",
                                 "max_record_bytes": 64, "max_bytes_per_minute": 64,
                                 "schema": schema}]
    launch = pb.Launch(
        launch_id=7, run_id="run-a", attempt=1, member="rank-0", command=command,
        environment=environment or {},
        collector=pb.CollectorConfig(
            telemetry_target="127.0.0.1:9", trust_bundle_pem="CA PEM\n",
            spool_root=str(tmp_path / "spool"), spool_bytes=1 << 20, drain_seconds=1,
            artifact_path=str(artifact_dir), artifact_digest=artifact_dir.name,
            integration_json=json.dumps(artifact)),
        token=pb.WorkloadToken(token="t", expires_at=2**40))
    control = Control()
    LaunchRunner(launch, cast(ControlClient, control), host.state_dir / "launches" / "7", host,
                 threading.Event()).run()
    return control


@pytest.mark.parametrize(("environment", "words"), [
    ({"BAD": "a\0b"}, "embedded null byte"),
    ({"A=B": "c"}, "illegal environment variable name"),
])
def test_a_training_command_that_cannot_start_is_reported_failed(
        collector_artifact: Path, tmp_path: Path, environment: dict[str, str],
        words: str) -> None:
    control = run_launch(collector_artifact, tmp_path, command=["true"],
                         environment=environment)
    (report,) = control.received
    assert report.state == pb.LaunchReport.STATE_FAILED
    assert report.exit_code == 127
    assert report.detail.startswith("training command could not start: ")
    assert words in report.detail


def test_a_collector_that_keeps_exiting_is_restarted_with_growing_pauses(
        collector_artifact: Path, tmp_path: Path) -> None:
    """A channel schema the collector cannot compile (the agent never compiles one): the
    collector exits at once, each time; over 5 s it starts 4 times (0, 1, 3 s...), not 15."""
    control = run_launch(collector_artifact, tmp_path, command=["sleep", "5"],
                         schema={"type": "string", "pattern": "(unclosed"})
    assert [r.state for r in control.received] == [pb.LaunchReport.STATE_RUNNING,
                                                   pb.LaunchReport.STATE_FINISHED]
    log = (tmp_path / "state" / "launches" / "7" / "collector.log").read_text()
    refusals = log.count("channels[0].schema is not a usable JSON Schema: error: missing ), "
                         "unterminated subpattern")
    assert 3 <= refusals <= 5, log
