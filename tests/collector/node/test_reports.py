"""A launch's final report reaches control even when control is away when it ends: kept in
the launch directory and sent again from the heartbeat loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import grpc

from tuneplane.collector.node import reports
from tuneplane.collector.node.client import ControlClient
from tuneplane.node.v1 import node_pb2 as pb


class Answer(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class Control:
    """Stands in for the client: refuses while ``down``, records what it was given."""

    def __init__(self) -> None:
        self.down: grpc.StatusCode | None = grpc.StatusCode.UNAVAILABLE
        self.received: list[pb.LaunchReport] = []

    def report(self, report: pb.LaunchReport, *, give_up_after: float) -> str:
        if self.down is not None:
            raise Answer(self.down, "control is away")
        self.received.append(report)
        return "finished"


def finished(launch_id: int) -> pb.LaunchReport:
    return pb.LaunchReport(launch_id=launch_id, state=pb.LaunchReport.STATE_FINISHED,
                           detail="done", undelivered_batches=0)


def test_a_final_report_control_missed_is_kept_and_sent_again(tmp_path: Path) -> None:
    control = Control()
    client = cast(ControlClient, control)
    launch_dir = tmp_path / "launches" / "7"
    launch_dir.mkdir(parents=True)
    assert not reports.send(client, launch_dir, finished(7), give_up_after=0.1)
    kept = launch_dir / reports.PENDING
    assert pb.LaunchReport.FromString(kept.read_bytes()) == finished(7)
    assert kept.stat().st_mode & 0o077 == 0
    assert reports.resend_pending(client, tmp_path / "launches", busy=set()) == 0
    control.down = None
    assert reports.resend_pending(client, tmp_path / "launches", busy={7}) == 0  # still runs
    assert reports.resend_pending(client, tmp_path / "launches", busy=set()) == 1
    assert control.received == [finished(7)]
    assert not kept.exists()


def test_a_running_report_is_not_kept(tmp_path: Path) -> None:
    control = Control()
    running = pb.LaunchReport(launch_id=3, state=pb.LaunchReport.STATE_RUNNING)
    assert not reports.send(cast(ControlClient, control), tmp_path, running, give_up_after=0.1)
    assert not (tmp_path / reports.PENDING).exists()


def test_a_report_control_refuses_for_good_is_dropped(tmp_path: Path) -> None:
    control: Any = Control()
    control.down = grpc.StatusCode.FAILED_PRECONDITION
    assert reports.send(cast(ControlClient, control), tmp_path, finished(9), give_up_after=0.1)
    assert not (tmp_path / reports.PENDING).exists()
