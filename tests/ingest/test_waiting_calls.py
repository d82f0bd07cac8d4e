"""Calls waiting for a busy ingest replica are read before their token is checked: what gRPC
buffers for them is bounded by their number (a stream's 64 KiB window each), not by their
messages, and each is still answered by ingest itself once it is taken up. The replica runs
in a process of its own, so that its memory is its own."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from pathlib import Path

import grpc

from tests.ingest.test_admission import SECRET, Busy, Flag, NoFacts, token
from tests.support.calls import auth
from tests.support.truth import batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.ingest.gate import Admission
from tuneplane.ingest.inflight import CallsInFlight
from tuneplane.ingest.server import TelemetryIngest, create_server
from tuneplane.ingest.token_facts import Standing
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

WAITING = 64  # calls of MESSAGE bytes each, sent while the replica is busy
MESSAGE = 4_000_000
#: How long the replica stays busy at most, if the test never releases it.
BUSY_AT_MOST = 120.0


def serve_busy(ports: multiprocessing.Queue[int], busy: Flag, release: Flag) -> None:
    """Ingest's service on a sink whose first batch keeps the loop busy."""
    async def serve() -> None:
        admission = Admission(TokenSigner(SECRET), Standing(NoFacts(), drain_seconds=30),
                              CallsInFlight(3))
        server = create_server(TelemetryIngest(admission, Busy(BUSY_AT_MOST, busy, release)),
                               max_concurrent_rpcs=256)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        ports.put(port)
        await server.wait_for_termination()
    asyncio.run(serve())


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def test_waiting_calls_hold_their_window_not_their_message_and_are_answered() -> None:
    context = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue[int] = context.Queue()
    busy, release = context.Event(), context.Event()
    replica = context.Process(target=serve_busy, args=(ports, busy, release))
    replica.start()
    try:
        port = ports.get(timeout=60)
        assert replica.pid is not None
        target = f"127.0.0.1:{port}"
        first = MemberKey("run-w", 1, "first")
        channels = [grpc.insecure_channel(target) for _ in range(8)]
        kept = pb_grpc.TelemetryIngestStub(channels[0]).PushBatch.future(
            pb.PushBatchRequest(batch=batch(first).SerializeToString()),
            metadata=auth(token(first)), timeout=60)
        assert busy.wait(60), "the replica never took up the first batch"
        before = rss_mib(replica.pid)
        junk = pb.PushBatchRequest(batch=b"x" * MESSAGE)  # no token that stands
        waiting = [
            pb_grpc.TelemetryIngestStub(channels[i % 8]).PushBatch.future(
                junk, metadata=auth("nonsense"), timeout=60) for i in range(WAITING)]
        time.sleep(3.0)  # their first windows reach the replica, which reads none yet
        assert not kept.done()  # still busy: the calls below are waiting, unseen
        grown = rss_mib(replica.pid) - before
        # A whole message each would be 244 MiB; a 64 KiB window each is 4 MiB.
        assert grown < 48, f"{WAITING} waiting calls grew the replica by {grown:.0f} MiB"
        release.set()
        assert kept.result() is not None
        codes = []
        for call in waiting:
            try:
                call.result()
                codes.append("OK")
            except grpc.RpcError as exc:
                codes.append(exc.code().name)
        assert codes == ["UNAUTHENTICATED"] * WAITING  # answered by ingest, none cancelled
        for channel in channels:
            channel.close()
    finally:
        replica.terminate()
        replica.join(10)
