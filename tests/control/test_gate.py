"""A node's call before any database work: its token verified once and remembered until it
expires, and its call rate (a bucket per node). The last test floods one node of a running
control past its rate: it is refused with RESOURCE_EXHAUSTED and a message saying why,
while another node's calls pass."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import asyncpg
import grpc
import pytest

from tests.support.calls import auth
from tests.support.control import enroll
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, launch_env, start_control
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.control import gate
from tuneplane.control.calls import Policy
from tuneplane.control.cli import call_rate
from tuneplane.control.gate import (
    MAX_HOLD,
    CallBuckets,
    CallRate,
    NodeAdmission,
    NodeCaller,
    Refused,
)
from tuneplane.control.server import NodeControl
from tuneplane.controlplane import nodes
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc

SECRET = "a-test-secret-of-enough-length"
NOW = 1_700_000_000.0  # in the past: PyJWT refuses an issue time ahead of its clock


def test_a_bucket_allows_its_burst_then_its_rate_per_node() -> None:
    buckets = CallBuckets(CallRate(per_second=2.0, burst=3.0))
    assert [buckets.take("a", 0.0) for _ in range(3)] == [None, None, None]
    assert buckets.take("a", 0.0) == pytest.approx(0.5)  # one call comes back in 1/2 s
    assert buckets.take("b", 0.0) is None  # another node has its own bucket
    assert buckets.take("a", 0.25) == pytest.approx(0.25)
    assert buckets.take("a", 0.5) is None
    assert buckets.take("a", 0.5) is not None
    assert [buckets.take("a", 10.0) for _ in range(4)][-1] is not None  # full is the burst


def test_buckets_kept_are_bounded_by_forgetting_full_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "BUCKETS_KEPT", 2)
    buckets = CallBuckets(CallRate(per_second=1.0, burst=2.0))
    assert buckets.take("a", 0.0) is None
    assert buckets.take("b", 1.5) is None
    assert buckets.take("c", 2.0) is None  # "a" has refilled by now and is forgotten
    assert buckets.take("b", 2.0) is None
    assert buckets.take("b", 2.0) is not None


def test_call_rates_are_checked_and_the_setting_allows_four_seconds_at_once() -> None:
    with pytest.raises(ValueError, match="calls per second above 0"):
        CallRate(0.0, 1.0)
    assert call_rate(5.0) == CallRate(5.0, 20.0)
    assert call_rate(0.1) == CallRate(0.1, 1.0)
    assert call_rate(0) is None


def test_a_token_verifies_once_and_is_refused_once_expired() -> None:
    signer = TokenSigner(SECRET)
    admission = NodeAdmission(signer, None)
    token = signer.issue(TokenKind.NODE, "node-1", {}, now=NOW, ttl_seconds=60)
    caller = NodeCaller("node-1", int(NOW), int(NOW) + 60)
    assert admission.check(token, NOW, 0.0) == caller
    assert admission.check(token, NOW + 59, 0.0) == caller  # remembered
    expired = admission.check(token, NOW + 60, 0.0)
    assert expired == Refused(grpc.StatusCode.UNAUTHENTICATED,
                              "node token refused: token expired")
    workload = signer.issue(TokenKind.WORKLOAD, "r/1/m", {}, now=NOW, ttl_seconds=60)
    wrong = admission.check(workload, NOW, 0.0)
    assert isinstance(wrong, Refused)
    assert wrong.code == grpc.StatusCode.UNAUTHENTICATED
    assert admission.check(None, NOW, 0.0) == Refused(
        grpc.StatusCode.UNAUTHENTICATED,
        "missing node token: send 'authorization: Bearer <node token>'")


def test_a_node_past_its_rate_is_refused_and_held_until_its_next_call_would_pass() -> None:
    signer = TokenSigner(SECRET)
    admission = NodeAdmission(signer, CallRate(per_second=0.5, burst=1.0))
    token = signer.issue(TokenKind.NODE, "node-1", {}, now=NOW, ttl_seconds=60)
    other = signer.issue(TokenKind.NODE, "node-2", {}, now=NOW, ttl_seconds=60)
    assert isinstance(admission.check(token, NOW, 0.0), NodeCaller)
    refused = admission.check(token, NOW, 0.0)
    assert isinstance(refused, Refused)
    assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.message == ("node node-1 is over its call rate (0.5 calls/s, bursts of "
                               "1); retry with backoff")
    assert refused.hold == MAX_HOLD  # 2 s to the next call, held at most MAX_HOLD
    assert isinstance(admission.check(other, NOW, 0.0), NodeCaller)
    assert isinstance(admission.check(token, NOW + 2, 2.0), NodeCaller)


@pytest.fixture
def slow_control(initialised: Endpoints, ingest: Process, tls_dir: Path,
                 tmp_path: Path) -> Iterator[Process]:
    """Control allowing each node one call every 2 s (a burst of 2)."""
    process = start_control(tls_dir, free_port(), tmp_path / "control.log",
                            launch_env(ingest.port, tmp_path / "spool", tmp_path / ("0" * 64)),
                            "--node-calls-per-second", "0.5")
    yield process
    process.stop()


async def test_a_flooding_node_is_refused_while_another_nodes_calls_pass(
        slow_control: Process, tls_dir: Path, db: asyncpg.Connection) -> None:
    assert "0.5 calls/s per node" in slow_control.log.read_text()
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{slow_control.port}",
                                       credentials) as channel:
        stub = pb_grpc.NodeControlStub(channel)
        flooding, calm = [await enroll(stub, db, f"rate-{uuid.uuid4().hex[:8]}")
                          for _ in range(2)]

        async def beat(node: pb.EnrollReply) -> grpc.StatusCode:
            try:
                await stub.Heartbeat(pb.HeartbeatRequest(), metadata=auth(node.node_token),
                                     timeout=30)
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc.details()
                assert exc.details() == (f"node {flooding.node_id} is over its call rate "
                                         "(0.5 calls/s, bursts of 2); retry with backoff")
                return exc.code()
            return grpc.StatusCode.OK

        codes = await asyncio.gather(*(beat(flooding) for _ in range(8)))
        assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) >= 4  # 8 calls in < 8 s
        assert await beat(calm) == grpc.StatusCode.OK


class Aborted(Exception):
    pass


class Call:
    """A servicer context of one call: its token, and the abort it ends with."""

    def __init__(self, token: str) -> None:
        self._token = token
        self.code: grpc.StatusCode | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self._token}"),)

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self.code = code
        raise Aborted(details)


async def test_a_superseded_token_cannot_spend_the_call_rate_of_the_nodes_new_enrollment(
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    """A host whose credential was replaced (re-enrolled under its name: the node keeps its
    id) floods with its old tokens: the database refuses the first, and the rest are refused
    before they cost the node's new credential any of its rate."""
    signer = TokenSigner(initialised.jwt_secret)
    name = f"stale-{uuid.uuid4().hex[:8]}"
    enrolled = dt.datetime.fromtimestamp(NOW, dt.UTC)
    first = await nodes.enroll(db, await nodes.new_enrollment_token(
        db, name, created_by="test", now=enrolled, ttl=dt.timedelta(minutes=5)), "old",
        now=enrolled)
    old = [signer.issue(TokenKind.NODE, first.node_id, {}, now=NOW + i, ttl_seconds=86400)
           for i in range(3)]  # renewals the old host kept
    again = enrolled + dt.timedelta(seconds=10)
    second = await nodes.enroll(db, await nodes.new_enrollment_token(
        db, name, created_by="test", now=again, ttl=dt.timedelta(minutes=5)), "new", now=again)
    assert second.node_id == first.node_id
    new = signer.issue(TokenKind.NODE, first.node_id, {}, now=NOW + 10, ttl_seconds=86400)
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        control = NodeControl(signer, pool, Policy(pb.CollectorConfig(),
                                                   call_rate=CallRate(1.0, 2.0)),
                              clock=lambda: NOW + 20, monotonic=lambda: 0.0)

        async def beat(token: str) -> grpc.StatusCode:
            call = Call(token)
            try:
                await control.Heartbeat(pb.HeartbeatRequest(), call)  # type: ignore[arg-type]
            except Aborted:
                assert call.code is not None
                return call.code
            return grpc.StatusCode.OK

        codes = [await beat(token) for token in old * 3]
        assert set(codes) == {grpc.StatusCode.UNAUTHENTICATED}
        assert await beat(new) == grpc.StatusCode.OK
    finally:
        await pool.close()
