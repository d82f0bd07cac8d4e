"""One launch run to its end by the agent: a training command that cannot start (even for
a reason the launch itself carries) is reported failed, never left running; a collector
that keeps exiting is restarted, but not in a hot loop; a launch with no free run-as user
waits, reported waiting; what a launch leaves running as its user ends with it."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from tests.support.users import public_place, system_user
from tuneplane.collector.node.client import ControlClient
from tuneplane.collector.node.host import Host
from tuneplane.collector.node.launch import LaunchRunner
from tuneplane.collector.node.pool import UserPool
from tuneplane.collector.node.processes import processes_of
from tuneplane.collector.node.runas import resolve
from tuneplane.node.v1 import node_pb2 as pb

SAME_USER = resolve(None, allow_same_user=True)


class Control:
    """Stands in for the client: records reports, renews nothing."""

    def __init__(self) -> None:
        self.received: list[pb.LaunchReport] = []

    def report(self, report: pb.LaunchReport, *, give_up_after: float) -> str:
        self.received.append(report)
        return "failed"

    def renew(self, launch_id: int) -> pb.WorkloadToken:
        raise AssertionError("no renewal expected")

    def states(self) -> list[pb.LaunchReport.State.ValueType]:
        return [report.state for report in self.received]


def node_host(tmp_path: Path, users: UserPool, work: Path | None = None) -> Host:
    (tmp_path / "state" / "launches").mkdir(parents=True, mode=0o700)
    (tmp_path / "state").chmod(0o700)
    work = work or tmp_path / "work"
    work.mkdir(mode=0o711)
    return Host(tmp_path / "state", work, users)


def runner(artifact_dir: Path, host: Host, control: Control, *, command: list[str],
           environment: dict[str, str] | None = None, schema: dict[str, object] | None = None,
           stopping: threading.Event | None = None) -> LaunchRunner:
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
            spool_root=str(host.state_dir.parent / "spool"), spool_bytes=1 << 20,
            drain_seconds=1, artifact_path=str(artifact_dir),
            artifact_digest=artifact_dir.name, integration_json=json.dumps(artifact)),
        token=pb.WorkloadToken(token="t", expires_at=2**40))
    return LaunchRunner(launch, cast(ControlClient, control), host.state_dir / "launches" / "7",
                        host, stopping or threading.Event())


def run_launch(artifact_dir: Path, tmp_path: Path, *, command: list[str],
               environment: dict[str, str] | None = None,
               schema: dict[str, object] | None = None) -> Control:
    control = Control()
    host = node_host(tmp_path, UserPool([SAME_USER]))
    runner(artifact_dir, host, control, command=command, environment=environment,
           schema=schema).run()
    return control


def until(condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


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
    refusals = log.count("channels[0].schema is not a usable JSON Schema: \"(unclosed\" is "
                         "not a \"regex\"")
    assert 3 <= refusals <= 5, log


def test_a_launch_with_no_free_user_is_reported_waiting_and_runs_once_one_is_released(
        collector_artifact: Path, tmp_path: Path) -> None:
    users = UserPool([SAME_USER])
    host, control = node_host(tmp_path, users), Control()
    assert users.take(99) is SAME_USER  # another launch holds the only user
    thread = threading.Thread(target=runner(collector_artifact, host, control,
                                            command=["true"]).run)
    thread.start()
    until(lambda: control.received, "waiting report")
    (waiting,) = control.received
    assert (waiting.state, waiting.detail) == (
        pb.LaunchReport.STATE_WAITING, "waiting for a free run-as user: the only one is busy")
    assert not (host.state_dir / "launches" / "7").exists()  # nothing of it made yet
    assert not (host.work_root / "7").exists()
    users.release(99)
    thread.join(timeout=60)
    assert control.states() == [pb.LaunchReport.STATE_WAITING, pb.LaunchReport.STATE_RUNNING,
                                pb.LaunchReport.STATE_FINISHED]
    assert users.take(100) is SAME_USER  # given back at the end


def test_a_waiting_launch_the_agent_stops_makes_nothing_and_leaves_its_turn(
        collector_artifact: Path, tmp_path: Path) -> None:
    users, stopping = UserPool([SAME_USER]), threading.Event()
    host, control = node_host(tmp_path, users), Control()
    users.take(99)
    thread = threading.Thread(target=runner(collector_artifact, host, control,
                                            command=["true"], stopping=stopping).run)
    thread.start()
    until(lambda: control.received, "waiting report")
    stopping.set()
    thread.join(timeout=10)
    assert control.states() == [pb.LaunchReport.STATE_WAITING]
    assert not (host.state_dir / "launches" / "7").exists()  # a later life takes it afresh
    users.release(99)
    assert users.take(8) is SAME_USER  # nobody waits in front


def test_what_a_launch_leaves_running_as_its_user_ends_before_the_user_is_given_back(
        collector_artifact: Path, tmp_path: Path) -> None:
    with system_user() as user, public_place() as place:
        run_as = resolve(user.pw_name, allow_same_user=False)
        users, control = UserPool([run_as]), Control()
        host = node_host(tmp_path, users, place / "work")
        # A daemon in a session of its own: the end of the training command's group
        # does not reach it.
        runner(collector_artifact, host, control, command=[
            "/bin/sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 1"]).run()
        assert control.states() == [pb.LaunchReport.STATE_RUNNING,
                                    pb.LaunchReport.STATE_FINISHED]
        assert processes_of(user.pw_uid) == []
        workdir = host.work_root / "7"  # the agent's again: the user's next launch stays out
        assert (workdir.stat().st_uid, workdir.stat().st_mode & 0o777) == (os.geteuid(), 0o700)
        assert users.take(8) is run_as
