"""The node agent's side of Node control: its saved credential and the calls it makes."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_delay,
    wait_exponential_jitter,
)

from tuneplane.contract.errors import BROKEN_CALL_CODES, RETRYABLE_CODES
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc

log = logging.getLogger("tuneplane.node")
STATE_FILE = "node.json"
#: Answers after which the same call may succeed later.
TRANSIENT = RETRYABLE_CODES | BROKEN_CALL_CODES


def write_private(path: Path, data: str | bytes) -> None:
    """Replace ``path`` atomically with a 0600 file (readers see old or new, never half)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(slots=True)
class NodeState:
    """What enrollment leaves in the agent's state directory (``node.json``, 0600)."""

    control: str
    ca_file: str
    node_id: str
    token: str
    server_name: str = ""

    @classmethod
    def load(cls, state_dir: Path) -> NodeState:
        path = state_dir / STATE_FILE
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            raise SystemExit(f"tuneplane-node: {path} not found; enroll first "
                             "(`tuneplane-node enroll`)") from None
        except (ValueError, TypeError) as exc:
            raise SystemExit(f"tuneplane-node: {path} is not a node state file: {exc}") from None

    def save(self, state_dir: Path) -> None:
        write_private(state_dir / STATE_FILE, json.dumps(asdict(self), indent=2))


def transient(exc: BaseException) -> bool:
    return isinstance(exc, grpc.RpcError) and exc.code() in TRANSIENT


def open_channel(control: str, ca_file: Path, server_name: str = "") -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(root_certificates=ca_file.read_bytes())
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    return grpc.secure_channel(control, credentials, options=options)


class ControlClient:
    def __init__(self, state: NodeState, *, timeout: float = 15.0) -> None:
        self.state = state
        self._timeout = timeout
        self._channel = open_channel(state.control, Path(state.ca_file), state.server_name)
        self._stub = pb_grpc.NodeControlStub(self._channel)

    def _metadata(self) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {self.state.token}"),)

    def heartbeat(self, running: list[int]) -> pb.HeartbeatReply:
        reply: pb.HeartbeatReply = self._stub.Heartbeat(
            pb.HeartbeatRequest(running_launch_ids=running), timeout=self._timeout,
            metadata=self._metadata())
        return reply

    def renew(self, launch_id: int) -> pb.WorkloadToken:
        token: pb.WorkloadToken = self._stub.RenewWorkloadToken(
            pb.RenewRequest(launch_id=launch_id), timeout=self._timeout,
            metadata=self._metadata())
        return token

    def report(self, report: pb.LaunchReport, *, give_up_after: float = 600.0) -> str:
        """Report until control has it (retrying transient failures); its attempt state."""
        for attempt in Retrying(retry=retry_if_exception(transient),
                                wait=wait_exponential_jitter(initial=0.5, max=15),
                                stop=stop_after_delay(give_up_after), reraise=True,
                                before_sleep=before_sleep_log(log, logging.WARNING)):
            with attempt:
                reply: pb.LaunchReportReply = self._stub.ReportLaunch(
                    report, timeout=self._timeout, metadata=self._metadata())
        return reply.attempt_state

    def close(self) -> None:
        self._channel.close()


def enroll(control: str, ca_file: Path, enrollment_token: str, hostname: str,
           server_name: str = "") -> NodeState:
    with open_channel(control, ca_file, server_name) as channel:
        reply: pb.EnrollReply = pb_grpc.NodeControlStub(channel).Enroll(
            pb.EnrollRequest(enrollment_token=enrollment_token, hostname=hostname,
                             agent_version="0.1.0"), timeout=30)
    return NodeState(control, str(ca_file.resolve()), reply.node_id, reply.node_token,
                     server_name)
