"""Revoking a node ends what was issued through it: its credential, its unused enrollment
tokens, and at ingest the workload tokens Node control issued for its launches (they name
the node). Enrolling it again takes a new enrollment token from an admin, and what was
issued before that stays refused."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeAlias

import asyncpg
import grpc
import pytest

from tests.support.calls import auth, push
from tests.support.control import cli, enroll, enrollment_token, new_run
from tests.support.environment import Endpoints
from tests.support.processes import Process
from tests.support.truth import batch
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane import launches, nodes
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1 import telemetry_pb2 as tpb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as tpb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

Stub: TypeAlias = "pb_grpc.NodeControlAsyncStub"
Ingest: TypeAlias = "tpb_grpc.TelemetryIngestAsyncStub"


@pytest.fixture
async def telemetry(ingest: Process, tls_dir: Path) -> AsyncIterator[Ingest]:
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{ingest.port}", credentials) as channel:
        yield tpb_grpc.TelemetryIngestStub(channel)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def launched(stub: Stub, db: asyncpg.Connection, node: pb.EnrollReply,
                   name: str) -> pb.Launch:
    """A run launched on the node, as its next heartbeat hands it over (with its token)."""
    run_id = await new_run(db, unique("rev"))
    await launches.create(db, run_id, name, ["rank-0"], ["true"], {})
    beat = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                timeout=10)
    (launch,) = beat.launches
    return launch


async def refused(call: object, code: grpc.StatusCode, words: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    assert caught.value.code() == code, caught.value.details()
    assert words in (caught.value.details() or ""), caught.value.details()


async def test_workload_tokens_issued_through_a_revoked_node_are_refused_by_ingest(
        stub: Stub, telemetry: Ingest, db: asyncpg.Connection, signer: TokenSigner) -> None:
    revoked_name, kept_name = unique("node"), unique("node")
    revoked, kept = await enroll(stub, db, revoked_name), await enroll(stub, db, kept_name)
    doomed, alive = (await launched(stub, db, revoked, revoked_name),
                     await launched(stub, db, kept, kept_name))
    claims = signer.verify_workload(doomed.token.token, now=time.time())
    assert claims.node == revoked.node_id  # Node control names the node it issues through
    assert (await nodes.revoke(db, revoked_name, now=dt.datetime.now(dt.UTC))).node
    member = MemberKey(doomed.run_id, doomed.attempt, doomed.member)
    await refused(push(telemetry, batch(member), doomed.token.token),
                  grpc.StatusCode.PERMISSION_DENIED,
                  f"was issued through node {revoked.node_id}, which was revoked")
    await refused(stub.RenewWorkloadToken(pb.RenewRequest(launch_id=doomed.launch_id),
                                          metadata=auth(revoked.node_token), timeout=10),
                  grpc.StatusCode.UNAUTHENTICATED, "was revoked")
    other = MemberKey(alive.run_id, alive.attempt, alive.member)
    reply = await push(telemetry, batch(other), alive.token.token)
    assert reply.outcome == tpb.PushBatchReply.OUTCOME_DURABLE


async def test_re_enrolling_a_revoked_node_takes_a_new_token_and_ends_what_came_before(
        stub: Stub, telemetry: Ingest, db: asyncpg.Connection, signer: TokenSigner) -> None:
    name = unique("node")
    first_token = await enrollment_token(db, name)
    node = await stub.Enroll(pb.EnrollRequest(enrollment_token=first_token), timeout=10)
    spare = await enrollment_token(db, name)  # issued, never used
    result = await nodes.revoke(db, name, now=dt.datetime.now(dt.UTC))
    assert (result.node, result.cancelled) == (True, 1)
    await refused(stub.Enroll(pb.EnrollRequest(enrollment_token=spare), timeout=10),
                  grpc.StatusCode.UNAUTHENTICATED, "cancelled when the node was revoked")
    await refused(stub.Enroll(pb.EnrollRequest(enrollment_token=first_token), timeout=10),
                  grpc.StatusCode.UNAUTHENTICATED, "already used")
    await refused(stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                 timeout=10), grpc.StatusCode.UNAUTHENTICATED, "was revoked")

    again = await enroll(stub, db, name)  # an admin's new enrollment token
    assert again.node_id == node.node_id
    before = time.time() - 60  # credentials issued before the revocation
    old_node_token = signer.issue(TokenKind.NODE, node.node_id, {}, now=before,
                                  ttl_seconds=3600)
    await refused(stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(old_node_token),
                                 timeout=10),
                  grpc.StatusCode.UNAUTHENTICATED, "replaced by a later enrollment")
    launch = await launched(stub, db, again, name)
    member = MemberKey(launch.run_id, launch.attempt, launch.member)
    old_workload = signer.issue_workload(member, now=before, ttl_seconds=3600,
                                         node=node.node_id)
    await refused(push(telemetry, batch(member), old_workload),
                  grpc.StatusCode.PERMISSION_DENIED, "before its latest enrollment")
    reply = await push(telemetry, batch(member), launch.token.token)
    assert reply.outcome == tpb.PushBatchReply.OUTCOME_DURABLE


def test_node_revoke_cancels_enrollment_tokens_of_a_node_never_enrolled(
        initialised: Endpoints) -> None:
    name = unique("node")
    issued = cli("enrollment-token", "--node", name)
    assert issued.returncode == 0, issued.stderr
    done = cli("node-revoke", name)
    assert done.returncode == 0, done.stderr
    assert f"node {name}: not enrolled; 1 unused enrollment token(s) cancelled" in done.stdout
    again = cli("node-revoke", name)
    assert again.returncode == 2
    assert f"no enrolled node {name!r} to revoke, nor unused enrollment tokens" in again.stderr
