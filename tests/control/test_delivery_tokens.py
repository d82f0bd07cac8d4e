"""Node control's deliver-only credentials on real PostgreSQL: an ended launch of the node
that reported batches left in its spool gets one for no more than it left, bound to the
node, for the tree first asked for only, within a week of its end; a launch still running,
another node's, one with nothing left or one reported delivered gets none; and a report of
what is left after a late delivery only shrinks it, keeping what the end said."""

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


def asked(launch_id: int, batches: int, root: str = ROOT,
          epoch: str = "epoch-1") -> pb.DeliveryRequest:
    return pb.DeliveryRequest(launch_id=launch_id, epoch=epoch, root=root, batches=batches)


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
    await expect(stub.IssueDeliveryToken(asked(launch_id, 5, epoch="e" * 65),
                                         metadata=auth(node.node_token), timeout=10),
                 grpc.StatusCode.INVALID_ARGUMENT, "the spool epoch is the word")
    # The first credential pinned its tree: the same is issued again, no other.
    again = await stub.IssueDeliveryToken(asked(launch_id, 5), metadata=auth(node.node_token),
                                          timeout=10)
    assert signer.verify_delivery(again.token, now=time.time()).root.hex() == ROOT
    for other in (asked(launch_id, 5, root="cd" * 32), asked(launch_id, 4),
                  asked(launch_id, 5, epoch="epoch-2")):
        await expect(stub.IssueDeliveryToken(other, metadata=auth(node.node_token), timeout=10),
                     grpc.StatusCode.FAILED_PRECONDITION, "covers the batches first asked for")
    await expect(stub.ReportLaunch(pb.LaunchReport(
        launch_id=launch_id, state=pb.LaunchReport.STATE_FINISHED, undelivered_batches=-3),
        metadata=auth(node.node_token), timeout=10),
        grpc.StatusCode.INVALID_ARGUMENT, "how many batches it left, not -3")
    # Reported again after the late delivery: what is left only shrinks, the end's detail
    # stays, and no credential is issued after it.
    await ended_with(stub, node.node_token, launch_id, 9, "more?", again=True)
    assert await undelivered(db, launch_id) == (5, "5 batches left in the spool")
    await ended_with(stub, node.node_token, launch_id, 0, "delivered late", again=True)
    assert await undelivered(db, launch_id) == (0, "5 batches left in the spool; delivered late")
    await ended_with(stub, node.node_token, launch_id, 0, "rewritten", again=True)
    assert await undelivered(db, launch_id) == (0, "5 batches left in the spool; delivered late")
    await expect(stub.IssueDeliveryToken(asked(launch_id, 1), metadata=auth(node.node_token),
                                         timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "its spool was reported delivered")


async def test_what_a_launch_left_is_delivered_within_a_week_of_its_end_only(
        stub: Stub, db: asyncpg.Connection, signer: TokenSigner, run_id: str) -> None:
    name = f"node-{uuid.uuid4().hex[:8]}"
    node = await enroll(stub, db, name)
    await new_run(db, run_id)
    _, (launch_id,) = await launches.create(db, run_id, name, ["rank-0"], ["true"], {})
    await ended_with(stub, node.node_token, launch_id, 3, "3 left")
    # Reported again with nothing left before any credential: no delivery, nothing shrinks.
    await ended_with(stub, node.node_token, launch_id, 0, "hidden", again=True)
    assert await undelivered(db, launch_id) == (3, "3 left")
    await db.execute("UPDATE launches SET ended_at = now() - interval '6 days 23 hours' "
                     "WHERE launch_id = $1", launch_id)
    issued = await stub.IssueDeliveryToken(asked(launch_id, 3), metadata=auth(node.node_token),
                                           timeout=10)
    assert 0 < issued.expires_at - time.time() <= 3600  # it stands no longer than the week
    await db.execute("UPDATE launches SET ended_at = now() - interval '8 days' "
                     "WHERE launch_id = $1", launch_id)
    await expect(stub.IssueDeliveryToken(asked(launch_id, 3), metadata=auth(node.node_token),
                                         timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "ended more than 7 days ago")


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
