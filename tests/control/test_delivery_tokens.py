"""Node control's deliver-only credentials on real PostgreSQL: an ended launch of the node
that reported batches left in its spool gets one for no more than it left, bound to the
node; a launch still running, another node's, or one with nothing left gets none; and a
report of what is left after a late delivery only shrinks it."""

from __future__ import annotations

import time
import uuid
from typing import TypeAlias

import asyncpg
import grpc

from tests.control.test_server import expect
from tests.support.calls import auth
from tests.support.control import enroll, new_run
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import launches
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

Stub: TypeAlias = "pb_grpc.NodeControlAsyncStub"
ROOT = "ab" * 32


def asked(launch_id: int, batches: int, root: str = ROOT) -> pb.DeliveryRequest:
    return pb.DeliveryRequest(launch_id=launch_id, epoch="epoch-1", root=root, batches=batches)


async def ended_with(stub: Stub, token: str, launch_id: int, left: int, detail: str = "", *,
                     again: bool = False) -> None:
    """Reported running, then finished with ``left`` batches in its spool (``again``: only
    the end, reported once more)."""
    states = [pb.LaunchReport.STATE_FINISHED]
    if not again:
        states.insert(0, pb.LaunchReport.STATE_RUNNING)
    for state in states:
        await stub.ReportLaunch(pb.LaunchReport(launch_id=launch_id, state=state,
                                                undelivered_batches=left, detail=detail),
                                metadata=auth(token), timeout=10)


async def undelivered(db: asyncpg.Connection, launch_id: int) -> tuple[int, str]:
    row = await db.fetchrow("SELECT undelivered, detail FROM launches WHERE launch_id = $1",
                            launch_id)
    assert row is not None
    return int(row["undelivered"]), str(row["detail"])


async def test_an_ended_launch_gets_a_credential_for_no_more_than_it_left(
        stub: Stub, db: asyncpg.Connection, signer: TokenSigner, run_id: str) -> None:
    name = f"node-{uuid.uuid4().hex[:8]}"
    node = await enroll(stub, db, name)
    await new_run(db, run_id)
    _, (launch_id,) = await launches.create(db, run_id, name, ["rank-0"], ["true"], {})
    await ended_with(stub, node.node_token, launch_id, 5, "5 batches left in the spool")
    issued = await stub.IssueDeliveryToken(asked(launch_id, 5), metadata=auth(node.node_token),
                                           timeout=10)
    claims = signer.verify_delivery(issued.token, now=time.time())
    assert claims.member == MemberKey(run_id, 1, "rank-0")
    assert (claims.epoch, claims.root.hex(), claims.batches) == ("epoch-1", ROOT, 5)
    assert claims.node == node.node_id  # revoking the node ends it at ingest
    assert 0 < issued.expires_at - time.time() <= 86400
    await expect(stub.IssueDeliveryToken(asked(launch_id, 6), metadata=auth(node.node_token),
                                         timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "reported 5 batches left in its spool")
    await expect(stub.IssueDeliveryToken(asked(launch_id, 5, root="xyz"),
                                         metadata=auth(node.node_token), timeout=10),
                 grpc.StatusCode.INVALID_ARGUMENT, "the root is the 64 hex digits")
    # Reported again after the late delivery: what is left only shrinks.
    await ended_with(stub, node.node_token, launch_id, 9, "more?", again=True)
    assert await undelivered(db, launch_id) == (5, "5 batches left in the spool")
    await ended_with(stub, node.node_token, launch_id, 0, "delivered late", again=True)
    assert await undelivered(db, launch_id) == (0, "delivered late")
    await expect(stub.IssueDeliveryToken(asked(launch_id, 1), metadata=auth(node.node_token),
                                         timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "reported no batches left")


async def test_a_running_launch_or_another_nodes_gets_no_delivery_credential(
        stub: Stub, db: asyncpg.Connection, run_id: str) -> None:
    owner, other = (f"node-{uuid.uuid4().hex[:8]}" for _ in range(2))
    node = await enroll(stub, db, owner)
    intruder = await enroll(stub, db, other)
    await new_run(db, run_id)
    _, (launch_id,) = await launches.create(db, run_id, owner, ["rank-0"], ["true"], {})
    await stub.ReportLaunch(pb.LaunchReport(launch_id=launch_id,
                                            state=pb.LaunchReport.STATE_RUNNING),
                            metadata=auth(node.node_token), timeout=10)
    await expect(stub.IssueDeliveryToken(asked(launch_id, 1), metadata=auth(node.node_token),
                                         timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "has not ended (running)")
    await ended_with(stub, node.node_token, launch_id, 3)
    await expect(stub.IssueDeliveryToken(asked(launch_id, 3),
                                         metadata=auth(intruder.node_token), timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "not assigned to this node")
