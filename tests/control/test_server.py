"""Node control on real PostgreSQL: enrollment, node-only credentials, launches, renewal."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from pathlib import Path
from typing import TypeAlias

import asyncpg
import grpc
import pytest

from tests.support.calls import auth
from tests.support.control import WORKLOAD_TTL, enroll, enrollment_token, new_run
from tests.support.environment import Endpoints
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane import errors, launches, nodes
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

Stub: TypeAlias = "pb_grpc.NodeControlAsyncStub"


def node_name() -> str:
    return f"node-{uuid.uuid4().hex[:8]}"


async def expect(call: object, code: grpc.StatusCode, words: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    assert caught.value.code() == code, caught.value.details()
    assert words in (caught.value.details() or "")


async def test_an_enrollment_token_enrolls_once(stub: Stub, db: asyncpg.Connection) -> None:
    token = await enrollment_token(db, node_name())
    reply = await stub.Enroll(pb.EnrollRequest(enrollment_token=token), timeout=10)
    assert reply.node_id.startswith("node-")
    assert reply.node_token_expires_at > time.time() + 86400
    await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(reply.node_token), timeout=10)
    await expect(stub.Enroll(pb.EnrollRequest(enrollment_token=token), timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, "was already used at")


async def test_expired_or_unknown_enrollment_tokens_are_refused(
        stub: Stub, db: asyncpg.Connection) -> None:
    name = node_name()
    expired = await enrollment_token(db, name, ttl=dt.timedelta(seconds=-1))
    await expect(stub.Enroll(pb.EnrollRequest(enrollment_token=expired), timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, f"enrollment token for node {name} expired")
    for token in ("tpe_made-up", ""):
        await expect(stub.Enroll(pb.EnrollRequest(enrollment_token=token), timeout=10),
                     grpc.StatusCode.UNAUTHENTICATED, "enrollment token is unknown")


@pytest.mark.parametrize("kind", [TokenKind.WORKLOAD, TokenKind.USER])
async def test_workload_and_user_tokens_are_refused_on_node_control(
        stub: Stub, signer: TokenSigner, kind: TokenKind) -> None:
    other = signer.issue(kind, "node-x", {"run": "r", "attempt": 1, "member": "m"},
                         now=time.time(), ttl_seconds=60)
    for call in (stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(other), timeout=10),
                 stub.RenewWorkloadToken(pb.RenewRequest(launch_id=1), metadata=auth(other),
                                         timeout=10)):
        await expect(call, grpc.StatusCode.UNAUTHENTICATED, "node token refused")


async def test_missing_expired_and_superseded_node_tokens_are_refused(
        stub: Stub, db: asyncpg.Connection, signer: TokenSigner) -> None:
    await expect(stub.Heartbeat(pb.HeartbeatRequest(), timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, "missing node token")
    name = node_name()
    first = await enroll(stub, db, name)
    expired = signer.issue(TokenKind.NODE, first.node_id, {}, now=time.time() - 120,
                           ttl_seconds=60)
    await expect(stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(expired), timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, "token expired")
    unknown = signer.issue(TokenKind.NODE, "node-never", {}, now=time.time(), ttl_seconds=60)
    await expect(stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(unknown), timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, "not enrolled")
    time.sleep(1.1)  # a later second: the re-enrollment replaces the first credential
    second = await enroll(stub, db, name)
    assert second.node_id == first.node_id
    await expect(stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(first.node_token),
                                timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, "replaced by a later enrollment")
    await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(second.node_token), timeout=10)
    assert (await nodes.revoke(db, name, now=dt.datetime.now(dt.UTC))).node
    await expect(stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(second.node_token),
                                timeout=10),
                 grpc.StatusCode.UNAUTHENTICATED, "was revoked")


async def test_a_launch_is_delivered_until_running_and_ends_its_attempt(
        stub: Stub, db: asyncpg.Connection, signer: TokenSigner, run_id: str,
        tls_dir: Path) -> None:
    name = node_name()
    node = await enroll(stub, db, name)
    await new_run(db, run_id)
    attempt, ids = await launches.create(db, run_id, name, ["rank-0", "rank-1"],
                                         ["python", "train.py"], {"LR": "0.1"})
    assert attempt == 1
    beat = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                timeout=10)
    assert [launch.launch_id for launch in beat.launches] == ids
    first = beat.launches[0]
    assert (first.run_id, first.attempt, first.member) == (run_id, 1, "rank-0")
    assert list(first.command) == ["python", "train.py"]
    assert dict(first.environment) == {"LR": "0.1"}
    assert first.collector.trust_bundle_pem == (tls_dir / "ca.pem").read_text()
    assert first.collector.telemetry_target.startswith("localhost:")
    assert first.collector.integration_json
    claims = signer.verify_workload(first.token.token, now=time.time())
    assert claims.member == MemberKey(run_id, 1, "rank-0")
    assert first.token.expires_at - time.time() <= WORKLOAD_TTL
    # Delivered again until reported running (a lost reply loses no launch).
    again = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                 timeout=10)
    assert [launch.launch_id for launch in again.launches] == ids
    for launch_id in ids:
        await stub.ReportLaunch(pb.LaunchReport(launch_id=launch_id,
                                                state=pb.LaunchReport.STATE_RUNNING),
                                metadata=auth(node.node_token), timeout=10)
    quiet = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                 timeout=10)
    assert not quiet.launches
    renewed = await stub.RenewWorkloadToken(pb.RenewRequest(launch_id=ids[1]),
                                            metadata=auth(node.node_token), timeout=10)
    assert signer.verify_workload(renewed.token, now=time.time()).member == MemberKey(
        run_id, 1, "rank-1")
    done = await stub.ReportLaunch(pb.LaunchReport(launch_id=ids[0],
                                                   state=pb.LaunchReport.STATE_FINISHED),
                                   metadata=auth(node.node_token), timeout=10)
    assert done.attempt_state == "running"  # rank-1 still runs
    done = await stub.ReportLaunch(
        pb.LaunchReport(launch_id=ids[1], state=pb.LaunchReport.STATE_FAILED, exit_code=3,
                        detail="training command exited with 3"),
        metadata=auth(node.node_token), timeout=10)
    assert done.attempt_state == "failed"
    await expect(stub.RenewWorkloadToken(pb.RenewRequest(launch_id=ids[1]),
                                         metadata=auth(node.node_token), timeout=10),
                 grpc.StatusCode.FAILED_PRECONDITION, "has ended (failed)")
    # The retry is attempt 2, launched the same way.
    assert (await launches.create(db, run_id, name, ["rank-0", "rank-1"], ["python"], {}))[0] == 2


async def test_a_launch_reported_waiting_stays_delivered_with_its_reason(
        stub: Stub, db: asyncpg.Connection, run_id: str) -> None:
    name = node_name()
    node = await enroll(stub, db, name)
    await new_run(db, run_id)
    _, (launch_id,) = await launches.create(db, run_id, name, ["rank-0"], ["true"], {})
    await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token), timeout=10)
    reason = "waiting for a free run-as user: all 2 are busy"
    reply = await stub.ReportLaunch(pb.LaunchReport(
        launch_id=launch_id, state=pb.LaunchReport.STATE_WAITING, detail=reason),
        metadata=auth(node.node_token), timeout=10)
    assert reply.attempt_state == "running"
    (listed,) = await launches.listing(db, run_id)
    assert (listed["state"], listed["detail"]) == ("delivered", reason)
    again = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                 timeout=10)
    assert [launch.launch_id for launch in again.launches] == [launch_id]  # not lost
    await stub.ReportLaunch(pb.LaunchReport(launch_id=launch_id,
                                            state=pb.LaunchReport.STATE_RUNNING),
                            metadata=auth(node.node_token), timeout=10)
    (listed,) = await launches.listing(db, run_id)
    assert (listed["state"], listed["detail"]) == ("running", "")
    await stub.ReportLaunch(pb.LaunchReport(  # late: changes nothing
        launch_id=launch_id, state=pb.LaunchReport.STATE_WAITING, detail=reason),
        metadata=auth(node.node_token), timeout=10)
    (listed,) = await launches.listing(db, run_id)
    assert (listed["state"], listed["detail"]) == ("running", "")


async def test_a_node_cannot_touch_another_nodes_launch(
        stub: Stub, db: asyncpg.Connection, run_id: str) -> None:
    owner, other = node_name(), node_name()
    await enroll(stub, db, owner)
    intruder = await enroll(stub, db, other)
    await new_run(db, run_id)
    _, (launch_id,) = await launches.create(db, run_id, owner, ["rank-0"], ["true"], {})
    beat = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(intruder.node_token),
                                timeout=10)
    assert not beat.launches
    for call in (
            stub.RenewWorkloadToken(pb.RenewRequest(launch_id=launch_id),
                                    metadata=auth(intruder.node_token), timeout=10),
            stub.ReportLaunch(pb.LaunchReport(launch_id=launch_id,
                                              state=pb.LaunchReport.STATE_FINISHED),
                              metadata=auth(intruder.node_token), timeout=10)):
        await expect(call, grpc.StatusCode.FAILED_PRECONDITION, "not assigned to this node")


async def test_launches_are_checked_when_created(db: asyncpg.Connection, stub: Stub,
                                                 run_id: str) -> None:
    name = node_name()
    await enroll(stub, db, name)
    await new_run(db, run_id)
    with pytest.raises(errors.LaunchError, match="rank-7 own no source"):
        await launches.create(db, run_id, name, ["rank-0", "rank-7"], ["true"], {})
    with pytest.raises(errors.LaunchError, match="no enrolled node 'nowhere'"):
        await launches.create(db, run_id, "nowhere", ["rank-0"], ["true"], {})
    with pytest.raises(errors.LaunchError, match="needs a command"):
        await launches.create(db, run_id, name, ["rank-0"], [], {})
    assert await db.fetchval("SELECT count(*) FROM attempts WHERE run_id = $1", run_id) == 0


async def test_the_last_of_launches_ending_at_once_ends_the_attempt(
        stub: Stub, db: asyncpg.Connection, initialised: Endpoints, run_id: str) -> None:
    """Reports of one attempt's launches committed together: exactly one sees them all
    ended and ends the attempt (tried on several attempts, each from two connections)."""
    import asyncio
    name = node_name()
    node = await enroll(stub, db, name)
    await new_run(db, run_id)
    others = [await asyncpg.connect(initialised.database_url) for _ in range(2)]
    try:
        for attempt in range(1, 6):
            _, ids = await launches.create(db, run_id, name, ["rank-0", "rank-1"], ["true"], {})
            states = await asyncio.gather(*(launches.report(
                conn, node.node_id, launch_id, "finished", exit_code=0, detail="",
                undelivered=0, now=dt.datetime.now(dt.UTC))
                for conn, launch_id in zip(others, ids, strict=True)))
            assert sorted(states) == ["finished", "running"], (attempt, states)
            assert await db.fetchval("SELECT state FROM attempts WHERE run_id = $1 AND "
                                     "attempt = $2", run_id, attempt) == "finished"
    finally:
        for conn in others:
            await conn.close()
