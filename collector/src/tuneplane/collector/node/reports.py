"""Launch reports that must reach Node control.

A final report (finished, failed, refused) is written into the launch's directory before
it is sent and removed once control has it. One that could not be delivered (control
unreachable, the agent stopped) is sent again from the agent's heartbeat loop, also after
the agent restarts, so control never keeps a launch `running` that has ended.
"""

from __future__ import annotations

import logging
from pathlib import Path

import grpc

from tuneplane.collector.node.client import ControlClient, write_private
from tuneplane.node.v1 import node_pb2 as pb

log = logging.getLogger("tuneplane.node")
PENDING = "final-report.pb"
State = pb.LaunchReport.State
FINAL = {State.STATE_FINISHED, State.STATE_FAILED, State.STATE_REFUSED}


def send(client: ControlClient, launch_dir: Path, report: pb.LaunchReport, *,
         give_up_after: float) -> bool:
    """True once control has the report (or has the launch ended otherwise)."""
    final = report.state in FINAL
    if final:
        write_private(launch_dir / PENDING, report.SerializeToString())
    name = f"launch {report.launch_id}: {State.Name(report.state)}"
    try:
        attempt = client.report(report, give_up_after=give_up_after)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
            log.error("%s refused by control: %s", name, exc.details())
            (launch_dir / PENDING).unlink(missing_ok=True)
            return True
        log.warning("%s not reported yet (%s: %s)%s", name, exc.code().name, exc.details(),
                    "; kept and sent again" if final else "")
        return False
    (launch_dir / PENDING).unlink(missing_ok=True)
    detail = f" ({report.detail})" if report.detail else ""
    log.info("%s%s (attempt now %s)", name, detail, attempt)
    return True


def resend_pending(client: ControlClient, launches: Path, busy: set[int]) -> int:
    """Send the final reports still kept for launches no runner handles; how many went."""
    sent = 0
    for path in sorted(launches.glob(f"*/{PENDING}")):
        if not path.parent.name.isdigit() or int(path.parent.name) in busy:
            continue
        report = pb.LaunchReport.FromString(path.read_bytes())
        sent += send(client, path.parent, report, give_up_after=5.0)
    return sent
