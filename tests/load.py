"""Many simulated collectors pushing to ingest at once, from several processes, each with
its own connection, member token and batch identities; they back off and resend on
RESOURCE_EXHAUSTED as the real collector does. Shared by tests/ingest/test_load.py and
bench/load.py."""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from tests.support.truth import member_batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey


@dataclass(frozen=True, slots=True)
class Plan:
    target: str
    ca: Path
    secret: str
    run_id: str
    collectors: int
    processes: int
    seconds: float
    points: int  # per batch
    series: int = 2  # per collector: each batch holds a chunk of each


@dataclass(slots=True)
class Outcome:
    latencies: list[float] = field(default_factory=list)  # ms, one per ACK
    points: int = 0
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    said: dict[str, str] = field(default_factory=dict)  # each code's first details

    def merge(self, other: Outcome) -> None:
        self.latencies += other.latencies
        self.points += other.points
        self.codes.update(other.codes)
        self.said = {**other.said, **self.said}


def batch_bytes(plan: Plan, member: MemberKey, sequence: int) -> bytes:
    return member_batch(member, sequence, plan.points, tags=plan.series).SerializeToString()


async def collector(plan: Plan, index: int, begin: float, out: Outcome) -> None:
    """Pushes from wall-clock ``begin`` for ``plan.seconds``."""
    member = MemberKey(plan.run_id, 1, f"sim-{index}")
    token = TokenSigner(plan.secret).issue_workload(member, now=time.time(), ttl_seconds=3600)
    metadata = (("authorization", f"Bearer {token}"),)
    credentials = grpc.ssl_channel_credentials(plan.ca.read_bytes())
    rng = random.Random(index)
    async with grpc.aio.secure_channel(plan.target, credentials,
                                       options=[("grpc.use_local_subchannel_pool", 1)]) as ch:
        stub = pb_grpc.TelemetryIngestStub(ch)
        await asyncio.sleep(max(0.0, begin - time.time()))
        deadline = time.monotonic() + plan.seconds
        sequence, pause = 1, 0.05
        payload = batch_bytes(plan, member, sequence)
        while time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                await stub.PushBatch(pb.PushBatchRequest(batch=payload), metadata=metadata,
                                     timeout=30)
            except grpc.aio.AioRpcError as exc:
                out.codes[exc.code().name] += 1
                out.said.setdefault(exc.code().name, str(exc.details()))
                await asyncio.sleep(pause * rng.uniform(0.5, 1.5))  # back off, same batch
                pause = min(pause * 2, 2.0)
                continue
            out.latencies.append((time.perf_counter() - started) * 1000)
            out.points += plan.points
            out.codes["OK"] += 1
            sequence, pause = sequence + 1, 0.05
            payload = batch_bytes(plan, member, sequence)


def process_main(plan: Plan, first: int, count: int, begin: float,
                 results: multiprocessing.Queue[Outcome]) -> None:
    out = Outcome()

    async def run() -> None:
        await asyncio.gather(*(collector(plan, i, begin, out)
                               for i in range(first, first + count)))
    asyncio.run(run())
    results.put(out)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@dataclass(slots=True)
class Report:
    outcome: Outcome
    seconds: float
    rss_start_kib: int
    rss_peak_kib: int

    def lines(self, plan: Plan) -> list[str]:
        q = statistics.quantiles(self.outcome.latencies, n=100) if \
            len(self.outcome.latencies) > 1 else [0.0] * 99
        codes = ", ".join(f"{k} {v:,}" for k, v in sorted(self.outcome.codes.items()))
        other = {f"{k} ({self.outcome.said.get(k)})": v
                 for k, v in self.outcome.codes.items() if k not in ("OK", "RESOURCE_EXHAUSTED")}
        busy = self.outcome.said.get("RESOURCE_EXHAUSTED")
        return [f"{plan.collectors:,} simulated collectors in {plan.processes} processes, "
                f"{plan.series} series each, {plan.points:,} points per batch, "
                f"{self.seconds:.0f} s",
                f"sustained      {self.outcome.points / self.seconds:>12,.0f} points/s durable "
                f"in Kafka",
                f"ACK latency    p50 {q[49]:.1f} ms  p99 {q[98]:.1f} ms",
                f"answers        {codes}",
                f"refusals       {other or 'none but RESOURCE_EXHAUSTED'}"
                + (f"; RESOURCE_EXHAUSTED said, first: {busy!r}" if busy else ""),
                f"ingest RSS     {self.rss_start_kib / 1024:.0f} MiB at start, peak "
                f"{self.rss_peak_kib / 1024:.0f} MiB"]


def run(plan: Plan, ingest_pid: int) -> Report:
    context = multiprocessing.get_context("spawn")
    begin = time.time() + 5.0  # every process started and connected by then
    results: multiprocessing.Queue[Outcome] = context.Queue()
    per = -(-plan.collectors // plan.processes)
    workers = [context.Process(target=process_main, args=(
        plan, p * per, min(per, plan.collectors - p * per), begin, results))
        for p in range(plan.processes) if p * per < plan.collectors]
    start_rss = rss_kib(ingest_pid)
    peak = [start_rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], rss_kib(ingest_pid))
    sampler = threading.Thread(target=sample)
    sampler.start()
    for worker in workers:
        worker.start()
    total = Outcome()
    for _ in workers:
        total.merge(results.get(timeout=plan.seconds + 120))
    for worker in workers:
        worker.join()
    stop.set()
    sampler.join()
    return Report(total, plan.seconds, start_rss, peak[0])
