"""Node control and telemetry must not starve each other: flood one listener from another
process while timing calls on the other. Shared by tests/control/test_isolation.py (which
checks every timed call succeeds) and bench/isolation.py (which prints the figures).

The Node control flood is one hostile node's, past control's call limit and its own call
rate; timed heartbeats come from a fleet of other nodes in turn, each within its rate (one
node beating back to back would be refused as the flood is).

    python -m tests.isolation flood heartbeat|push ...   (the flooding process)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

from tests.support.environment import ROOT
from tests.support.truth import member_batch
from tuneplane.common.db import Connection
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import nodes
from tuneplane.node.v1 import node_pb2 as node_pb
from tuneplane.node.v1 import node_pb2_grpc as node_grpc
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

Call = Callable[[int], Awaitable[object]]
WARM = 10  # calls before the timed ones, on the same channel


#: Calls one node of the timed fleet makes in a row at most (within control's burst).
CALLS_PER_NODE = 10


@dataclass(frozen=True, slots=True)
class Listener:
    """A listener and its callers' tokens (calls take them in turn)."""

    target: str
    ca: Path
    tokens: tuple[str, ...]

    def channel(self) -> grpc.aio.Channel:
        return grpc.aio.secure_channel(self.target,
                                       grpc.ssl_channel_credentials(self.ca.read_bytes()))

    def metadata(self, i: int = 0) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {self.tokens[i % len(self.tokens)]}"),)


@dataclass(frozen=True, slots=True)
class Listeners:
    nodes: Listener  # Node control, a fleet of nodes taking turns
    flooding_node: Listener  # Node control, one node of its own
    telemetry: Listener  # the member's workload token


async def enroll_nodes(control: Listener, db: Connection, prefix: str, count: int,
                       ) -> tuple[str, ...]:
    """``count`` freshly enrolled nodes' tokens."""
    tokens = []
    async with control.channel() as channel:
        stub = node_grpc.NodeControlStub(channel)
        for k in range(count):
            token = await nodes.new_enrollment_token(db, f"{prefix}-{k}", created_by="test",
                                                     now=dt.datetime.now(dt.UTC),
                                                     ttl=dt.timedelta(minutes=5))
            node = await stub.Enroll(node_pb.EnrollRequest(enrollment_token=token), timeout=30)
            tokens.append(node.node_token)
    return tuple(tokens)


async def listeners(control_port: int, ingest_port: int, tls_dir: Path, db: Connection,
                    signer: TokenSigner, member: MemberKey, *, calls: int) -> Listeners:
    """Node control with a fleet of freshly enrolled nodes, enough for ``calls`` timed
    heartbeats alone and as many flooded, and one node to flood with; telemetry with the
    member's token."""
    control = Listener(f"localhost:{control_port}", tls_dir / "ca.pem", ())
    fleet = math.ceil((2 * calls + WARM) / CALLS_PER_NODE)
    tokens = await enroll_nodes(control, db, f"iso-{member.run_id}", fleet + 1)
    workload = signer.issue_workload(member, now=time.time(), ttl_seconds=3600)
    return Listeners(Listener(control.target, control.ca, tokens[1:]),
                     Listener(control.target, control.ca, tokens[:1]),
                     Listener(f"localhost:{ingest_port}", tls_dir / "ca.pem", (workload,)))


def heartbeat(listener: Listener, channel: grpc.aio.Channel, base: int = 0) -> Call:
    stub = node_grpc.NodeControlStub(channel)

    async def call(i: int) -> object:
        return await stub.Heartbeat(node_pb.HeartbeatRequest(),
                                    metadata=listener.metadata(base + i), timeout=30)
    return call


def push(listener: Listener, channel: grpc.aio.Channel, member: MemberKey, base: int) -> Call:
    stub = pb_grpc.TelemetryIngestStub(channel)

    async def call(i: int) -> object:
        batch = member_batch(member, base + i, 100).SerializeToString()
        reply = await stub.PushBatch(pb.PushBatchRequest(batch=batch),
                                     metadata=listener.metadata(), timeout=30)
        assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE, reply
        return reply
    return call


async def timed(call: Call, count: int) -> list[float]:
    """``count`` calls one after another; their latencies in ms. Any failure raises."""
    latencies = []
    for i in range(count):
        started = time.perf_counter()
        await call(i)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def summary(latencies: list[float]) -> str:
    q = statistics.quantiles(latencies, n=100)
    return f"p50 {q[49]:6.1f} ms  p99 {q[98]:6.1f} ms  ({len(latencies)} calls)"


class Flood:
    """Another process keeping ``concurrency`` calls in flight on a listener."""

    def __init__(self, kind: str, listener: Listener, concurrency: int,
                 member: MemberKey | None = None, nice: int = 0) -> None:
        args = [sys.executable, "-m", "tests.isolation", kind, "--target", listener.target,
                "--ca", str(listener.ca), "--concurrency", str(concurrency), "--nice",
                str(nice)]
        if member is not None:
            args += ["--member", f"{member.run_id}/{member.attempt}/{member.member}"]
        self._proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True,
                                      stdin=subprocess.PIPE,
                                      env={**os.environ, "ISOLATION_TOKEN": listener.tokens[0]})
        assert self._proc.stdout is not None
        assert self._proc.stdout.readline().strip() == "flooding"

    def stop(self) -> dict[str, int]:
        """Stop it; the status codes its calls got."""
        out, _ = self._proc.communicate("stop\n", timeout=120)
        codes: dict[str, int] = json.loads(out)
        return codes


@dataclass(frozen=True, slots=True)
class Isolation:
    """Latencies on one listener alone and while the other is flooded."""

    alone: list[float]
    flooded: list[float]
    flood_codes: dict[str, int]

    def report(self, timed_what: str, flooded_what: str) -> str:
        codes = ", ".join(f"{k} {v:,}" for k, v in sorted(self.flood_codes.items()))
        flooded = f"{flooded_what} flooded"
        return (f"{timed_what:<24} {'alone':<24} {summary(self.alone)}\n"
                f"{timed_what:<24} {flooded:<24} {summary(self.flooded)}\n"
                f"{'':<24} the flood's answers: {codes}")


async def measure(timed_on: Listener, timed_kind: str, flooded: Listener, flood_kind: str,
                  *, calls: int, concurrency: int, member: MemberKey,
                  flood_nice: int = 0) -> Isolation:
    """``flood_nice`` lowers the flooding process's CPU priority: it stands in for callers
    on other hosts, whose work would not take this machine's CPU from the services."""
    async with timed_on.channel() as channel:
        def call(base: int) -> Call:
            if timed_kind == "heartbeat":
                return heartbeat(timed_on, channel, base)
            return push(timed_on, channel, member, base)

        await timed(call(0), WARM)  # warm the channel
        alone = await timed(call(WARM), calls)
        running = Flood(flood_kind, flooded, concurrency, member, flood_nice)
        try:
            await asyncio.sleep(1.0)  # let the flood reach the listener's limit
            loaded = await timed(call(WARM + calls), calls)
        finally:
            codes = running.stop()
    return Isolation(alone, loaded, codes)


async def flood(call: Call, concurrency: int) -> collections.Counter[str]:
    codes: collections.Counter[str] = collections.Counter()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(sys.stdin.fileno(), stopping.set)
    counter = iter(range(1, 1 << 62))

    async def worker() -> None:
        while not stopping.is_set():
            try:
                await call(next(counter))
                codes["OK"] += 1
            except grpc.aio.AioRpcError as exc:
                codes[exc.code().name] += 1

    print("flooding", flush=True)
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return codes


async def flood_main(args: argparse.Namespace) -> None:
    os.nice(args.nice)
    listener = Listener(args.target, Path(args.ca), (os.environ["ISOLATION_TOKEN"],))
    async with listener.channel() as channel:
        if args.kind == "heartbeat":
            call = heartbeat(listener, channel)
        else:
            run_id, attempt, member = args.member.split("/")
            call = push(listener, channel, MemberKey(run_id, int(attempt), member), 10**9)
        codes = await flood(call, args.concurrency)
    print(json.dumps(dict(codes)))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["heartbeat", "push"])
    p.add_argument("--target", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--concurrency", type=int, default=200)
    p.add_argument("--member")
    p.add_argument("--nice", type=int, default=0)
    asyncio.run(flood_main(p.parse_args()))
