"""gRPC calls as clients make them: bearer metadata, a batch pushed to ingest; and the call
context a servicer is called with in process, with the job control service's redemption."""

from __future__ import annotations

from typing import Any

import grpc

from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def push(stub: pb_grpc.TelemetryIngestAsyncStub, b: pb.Batch,
               token: str) -> pb.PushBatchReply:
    reply: pb.PushBatchReply = await stub.PushBatch(
        pb.PushBatchRequest(batch=b.SerializeToString()), metadata=auth(token), timeout=30)
    return reply


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code


class Context:
    """What a servicer asks of a call's context (no metadata: no credential)."""

    async def abort(self, code: grpc.StatusCode, details: str) -> Any:
        raise Aborted(code, details)

    def invocation_metadata(self) -> tuple[()]:
        return ()


async def redeem(service: SlurmJobControl, launch_id: int, job_id: str, node: int = 0,
                 restart: int = 0, hostname: str = "n") -> spb.RedeemReply:
    """A job's collector redeeming the launch's ticket for ``node`` of ``restart``."""
    start = spb.JobStart(ticket=service.issue_ticket(launch_id, 600), job_id=job_id,
                         restart=restart, node_index=node, hostname=hostname)
    return await service.Redeem(spb.RedeemRequest(start=start), Context())  # type: ignore[arg-type]
