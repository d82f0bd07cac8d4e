"""Admission of PushBatch calls: at most N in flight per workload token's member and M per
run (one more is answered RESOURCE_EXHAUSTED at once while another's call is served), and calls
refused on their metadata are answered before their message is read. Ingest's service runs
in this process on a sink that holds one member's batches until released, so the calls in
flight are known rather than timed."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing.synchronize
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from tests.support.calls import auth, push
from tests.support.truth import batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane.standing import AttemptFacts, NodeFacts
from tuneplane.ingest.gate import Admission
from tuneplane.ingest.inflight import CallsInFlight, TooManyCalls
from tuneplane.ingest.server import MAX_RECEIVE_BYTES, TelemetryIngest, create_server
from tuneplane.ingest.token_facts import Standing
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

LIMIT = 3
RUN_LIMIT = 4
SECRET = "inflight-test-secret-of-enough-length"
GREEDY = MemberKey("run-i", 1, "greedy")
OTHER = MemberKey("run-i", 1, "other")


class HeldSink:
    """Holds the batches ``holds`` picks (the greedy member's) until ``release``; the others
    pass at once. ``all_held`` is set once ``expect`` are held."""

    def __init__(self, holds: Callable[[BatchKey], bool] = lambda k: k.member == GREEDY,
                 expect: int = LIMIT) -> None:
        self._holds = holds
        self._expect = expect
        self.release = asyncio.Event()
        self.held: list[BatchKey] = []
        self.all_held = asyncio.Event()
        self.stored: list[BatchKey] = []

    async def put(self, key: BatchKey, payload: bytes, *, late: bool = False) -> None:
        if self._holds(key):
            self.held.append(key)
            if len(self.held) == self._expect:
                self.all_held.set()
            await self.release.wait()
        self.stored.append(key)


Flag = threading.Event | multiprocessing.synchronize.Event


class Busy:
    """A sink whose first batch keeps the event loop busy (as a replica at its CPU's limit)
    until ``released`` is set, ``seconds`` at most: calls arriving meanwhile wait in gRPC
    until it takes them up."""

    def __init__(self, seconds: float, started: Flag | None = None,
                 released: Flag | None = None) -> None:
        self.seconds = seconds
        self.started = started or threading.Event()  # (a process's own, to wait on there)
        self.released = released or threading.Event()
        self.stored: list[BatchKey] = []

    async def put(self, key: BatchKey, payload: bytes, *, late: bool = False) -> None:
        if not self.started.is_set():
            self.started.set()
            self.released.wait(self.seconds)  # the loop kept busy, on purpose
        self.stored.append(key)


class NoFacts:
    """Attempts the control plane never started: every admin token stands."""

    async def attempt(self, key: tuple[str, int]) -> AttemptFacts | None:
        return None

    async def node(self, node_id: str) -> NodeFacts | None:
        return None


@pytest.fixture
def sink() -> HeldSink:
    return HeldSink()


@contextlib.asynccontextmanager
async def started(sink: HeldSink | Busy, calls: CallsInFlight, *,
                  max_waiting_calls: int = 4096) -> AsyncIterator[int]:
    """Ingest's service in this process, on ``sink``, admitting by ``calls``: its port."""
    standing = Standing(NoFacts(), drain_seconds=30)
    service = TelemetryIngest(Admission(TokenSigner(SECRET), standing, calls), sink)
    server = create_server(service, max_concurrent_rpcs=64,
                           max_waiting_calls=max_waiting_calls)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield port
    finally:
        await server.stop(None)


@contextlib.asynccontextmanager
async def serving(sink: HeldSink, calls: CallsInFlight,
                  ) -> AsyncIterator[pb_grpc.TelemetryIngestAsyncStub]:
    """Ingest's service in this process, on ``sink``, admitting by ``calls``."""
    async with started(sink, calls) as port, grpc.aio.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 << 20)],
    ) as channel:
        yield pb_grpc.TelemetryIngestStub(channel)


@pytest.fixture
async def stub(sink: HeldSink) -> AsyncIterator[pb_grpc.TelemetryIngestAsyncStub]:
    async with serving(sink, CallsInFlight(LIMIT)) as stub:
        yield stub


def token(member: MemberKey) -> str:
    return TokenSigner(SECRET).issue_workload(member, now=time.time(), ttl_seconds=600)


async def test_one_member_past_its_calls_in_flight_is_turned_away_and_others_are_served(
        stub: pb_grpc.TelemetryIngestAsyncStub, sink: HeldSink) -> None:
    greedy = token(GREEDY)
    held = [asyncio.create_task(push(stub, batch(GREEDY, sequence=s), greedy))
            for s in range(1, LIMIT + 1)]
    await sink.all_held.wait()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.PushBatch(pb.PushBatchRequest(batch=batch(GREEDY, sequence=99)
                                                 .SerializeToString()),
                             metadata=auth(greedy), timeout=30)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"member {GREEDY} already has {LIMIT} PushBatch calls in flight" in (
        caught.value.details() or "")
    # a renewed token of the same member is the same member
    renewed = TokenSigner(SECRET).issue_workload(GREEDY, now=time.time() - 1, ttl_seconds=900)
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await push(stub, batch(GREEDY, sequence=98), renewed)
    assert again.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    other = await push(stub, batch(OTHER), token(OTHER))
    assert other.outcome == pb.PushBatchReply.OUTCOME_DURABLE
    assert len(sink.held) == LIMIT
    assert not any(t.done() for t in held)
    sink.release.set()
    assert [r.outcome for r in await asyncio.gather(*held)] == \
        [pb.PushBatchReply.OUTCOME_DURABLE] * LIMIT
    after = await push(stub, batch(GREEDY, sequence=99), greedy)  # its slots came back
    assert after.outcome == pb.PushBatchReply.OUTCOME_DURABLE
    assert sorted(k.sequence for k in sink.stored if k.member == GREEDY) == [1, 2, 3, 99]


async def test_a_run_of_many_members_past_its_calls_in_flight_leaves_other_runs_served(
        ) -> None:
    wide = [MemberKey("run-wide", 1, f"rank-{i}") for i in range(RUN_LIMIT + 1)]
    sink = HeldSink(holds=lambda k: k.member.run_id == "run-wide", expect=RUN_LIMIT)
    async with serving(sink, CallsInFlight(LIMIT, RUN_LIMIT)) as stub:
        held = [asyncio.create_task(push(stub, batch(m), token(m))) for m in wide[:-1]]
        await sink.all_held.wait()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await push(stub, batch(wide[-1]), token(wide[-1]))
        other = await push(stub, batch(OTHER), token(OTHER))
        assert not any(t.done() for t in held)
        sink.release.set()
        outcomes = [r.outcome for r in await asyncio.gather(*held)]
        after = await push(stub, batch(wide[-1], sequence=2), token(wide[-1]))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (f"run 'run-wide' already has {RUN_LIMIT} PushBatch calls in flight across its "
            f"members (at most {RUN_LIMIT} per run)") in (caught.value.details() or "")
    assert other.outcome == pb.PushBatchReply.OUTCOME_DURABLE
    assert outcomes == [pb.PushBatchReply.OUTCOME_DURABLE] * RUN_LIMIT
    assert after.outcome == pb.PushBatchReply.OUTCOME_DURABLE


def test_calls_are_counted_per_run_across_its_members() -> None:
    calls = CallsInFlight(2, run_limit=3)
    first, second = MemberKey("run-r", 1, "a"), MemberKey("run-r", 2, "b")
    with calls.held(first), calls.held(first), calls.held(second):
        with pytest.raises(TooManyCalls, match="at most 3 per run"), calls.held(second):
            pass
        with calls.held(OTHER):
            assert (calls.of_run("run-r"), calls.of_run(OTHER.run_id)) == (3, 1)
    assert (calls.of_run("run-r"), calls.of(first), calls.of(second)) == (0, 0, 0)
    with pytest.raises(ValueError, match="per run must be 1 or more"):
        CallsInFlight(2, run_limit=0)


def test_calls_are_counted_per_member_and_given_back() -> None:
    calls = CallsInFlight(2)
    with calls.held(GREEDY), calls.held(GREEDY):
        with pytest.raises(TooManyCalls, match="at most 2 per workload token"), \
                calls.held(GREEDY):
            pass
        with calls.held(OTHER):
            assert (calls.of(GREEDY), calls.of(OTHER)) == (2, 1)
    assert (calls.of(GREEDY), calls.of(OTHER)) == (0, 0)
    with pytest.raises(ValueError, match="1 or more"):
        CallsInFlight(0)


async def test_a_call_refused_on_its_metadata_is_answered_before_its_message_is_read(
        stub: pb_grpc.TelemetryIngestAsyncStub, sink: HeldSink) -> None:
    # Larger than gRPC lets ingest receive: reading it would answer RESOURCE_EXHAUSTED.
    oversized = pb.PushBatchRequest(batch=b"\0" * (MAX_RECEIVE_BYTES + 1024))
    forged = TokenSigner("another-secret-of-enough-length").issue_workload(
        OTHER, now=time.time(), ttl_seconds=60)
    for metadata, words in ((None, "missing workload token"),
                            (auth(forged), "not a valid workload token")):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.PushBatch(oversized, metadata=metadata, timeout=30)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert words in (caught.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as read:  # the control: admitted, then read
        await stub.PushBatch(oversized, metadata=auth(token(OTHER)), timeout=30)
    assert read.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in (read.value.details() or "")
    assert not sink.stored


def pushed_from_another_thread(port: int, members: int, sink: Busy) -> list[str]:
    """Once the sink is busy, one call per member from threads of their own (this
    process's event loop is the busy one): the status each got. The sink is released a
    second after the last call was sent, however long sending them took."""
    assert sink.started.wait(10)
    sent = threading.Semaphore(0)

    def release_when_sent() -> None:
        for _ in range(members):
            sent.acquire()
        time.sleep(2.0)  # the last call reaches the replica
        sink.released.set()
    threading.Thread(target=release_when_sent, daemon=True).start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.TelemetryIngestStub(channel)

        def one(index: int) -> str:
            member = MemberKey("run-w", 1, f"m{index}")
            sent.release()
            try:
                stub.PushBatch(pb.PushBatchRequest(batch=batch(member).SerializeToString()),
                               metadata=auth(token(member)), timeout=30)
            except grpc.RpcError as exc:
                return str(exc.code().name)
            return "OK"
        with ThreadPoolExecutor(members) as threads:
            return list(threads.map(one, range(members)))


@pytest.mark.parametrize(("max_waiting_calls", "cancelled"), [(4, True), (4096, False)])
async def test_calls_arriving_while_the_replica_is_busy_wait_for_it_never_cancelled_unseen(
        max_waiting_calls: int, cancelled: bool) -> None:
    """Beyond ``max_waiting_calls`` gRPC cancels calls before ingest sees them (the fault,
    asserted); within it every call is answered by ingest itself."""
    sink = Busy(seconds=30.0)
    async with started(sink, CallsInFlight(LIMIT), max_waiting_calls=max_waiting_calls) as port:
        first = MemberKey("run-w", 1, "first")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:  # keeps the loop busy
            kept = pb_grpc.TelemetryIngestStub(channel).PushBatch.future(
                pb.PushBatchRequest(batch=batch(first).SerializeToString()),
                metadata=auth(token(first)), timeout=30)
            codes = await asyncio.to_thread(pushed_from_another_thread, port, 24, sink)
            assert kept.result() is not None
    assert ("CANCELLED" in codes) is cancelled, codes
    if not cancelled:
        assert codes == ["OK"] * 24
        assert len(sink.stored) == 25
