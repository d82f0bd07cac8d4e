"""Query latency of the web API: p50/p99 over repeated requests to a running tuneplane-web.

    uv run python bench/query.py [--requests 50] [--format columns|rows] [--callers 1 8 32]
                                  [--pace 400]

Read models are filled by the projector's own projection and writer (chunk and segment
summaries as in production): one 1,000,000-point series (100 chunks), 100 member series
of 10,000 points under one canonical name, and one 1,000,000-point series in 50-point
chunks (20,000 batches: what a job logging 200 tags at every step seals, 10,000-point
batches spread over 200 tags; no segment summaries). Timed over HTTP with a user token,
answers in ``--format`` (columns: what the Charts page asks for; rows: the default):
  whole        the 1M-point series reduced to 2,000 points
  100 series   the canonical curve's 100 member series at 2,000 points each
  zoomed       a 20,000-step window of the 1M series (2,000 points: buckets or raw)
  small chunks the 1M-point series of 50-point chunks reduced to 2,000 points
Then ``whole`` again from 1, 8 and 32 concurrent callers (``--callers``; wrk, installed
from Debian when absent), each a user of its own, asking again as soon as answered: p50/p99
and answers per second of one web process (its capacity). Then the most callers asking
together at a set pace (``--pace``, 400 answers a second; ``bench.paced``): p50/p99 from
each request's due time at that load. All of it twice: a web reading every answer, then
one giving kept answers again while their series is unchanged (its default;
``read.answers``).
Needs the real services (``eval "$(scripts/services up)"``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import cpu
from bench.callers import load as callers_load
from bench.paced import paced_async
from tests.support.environment import BIN, Endpoints, free_port, run_admin
from tests.support.processes import Process
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import api_tokens, projects, users
from tuneplane.controlplane.mapping import freeze
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.integration import MetricMapping


async def fill(database_url: str, run_id: str) -> None:
    """Projects the bench run with the projector's own projection and writer."""
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    writer = PostgresWriter(pool)
    try:
        big = [series_batch(run_id, "rank-0", "big", i, 10_000) for i in range(100)]
        small = [series_batch(run_id, f"rank-{m}", "loss", i, 1_000)
                 for m in range(100) for i in range(10)]
        narrow = [series_batch(run_id, "rank-0", "narrow", i, 50) for i in range(20_000)]
        for batches, size in ((big + small, 50), (narrow, 500)):
            for start in range(0, len(batches), size):
                await writer.write_group([project(b.SerializeToString(),
                                                  RecordMeta(0, 0, None))
                                          for b in batches[start:start + size]])
        async with pool.acquire() as conn:
            await freeze(conn, run_id, 1,
                         [MetricMapping(tag="loss", name="loss", goal="minimize")])
    finally:
        await pool.close()


def series_batch(run_id: str, member: str, tag: str, index: int, n: int) -> pb.Batch:
    first = index * n
    steps = list(range(first, first + n))
    return pb.Batch(
        identity=pb.BatchIdentity(run_id=run_id, attempt=1, member=member,
                                  spool_epoch=f"{tag}", sequence=index + 1),
        chunks=[pb.SeriesChunk(source="train", tag=tag, steps=steps, wall_times=[0.0] * n,
                               values=[math.sin(s / 1e4) + (s % 100) / 100 for s in steps])])


async def timed(client: httpx.AsyncClient, url: str, params: dict[str, str | int],
                count: int) -> tuple[float, float, int]:
    latencies = []
    returned = 0
    for _ in range(count):
        started = time.perf_counter()
        response = await client.get(url, params=params)
        latencies.append(time.perf_counter() - started)
        response.raise_for_status()
        body = response.json()
        returned = sum(s["points_returned"] for s in body.get("series", [body]))
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return statistics.median(latencies) * 1000, p99 * 1000, returned


async def viewer_token(endpoints: Endpoints) -> str:
    """A personal token of a new user viewing the default project (where bench runs are)."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    db = await asyncpg.connect(endpoints.database_url)
    try:
        await users.add_user(db, name)
        await projects.grant(db, projects.DEFAULT, name, projects.Role.VIEWER)
        _, token, _ = await api_tokens.issue(db, TokenSigner(endpoints.jwt_secret), name,
                                             name="bench", now=dt.datetime.now(dt.UTC))
    finally:
        await db.close()
    return token


#: The web's two ways of answering: reading every answer, and giving a kept answer again
#: while its series is unchanged (``TUNEPLANE_WEB_ANSWER_CACHE_BYTES``, on by default).
MODES: tuple[tuple[str, dict[str, str]], ...] = (
    ("read each time", {"TUNEPLANE_WEB_ANSWER_CACHE_BYTES": "0"}), ("answers kept", {}))


def start_web(env: dict[str, str] | None = None) -> Process:
    port = free_port()
    return Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                   Path(tempfile.mkdtemp()) / "web.log", ready="Uvicorn running on", port=port,
                   env={**os.environ, **(env or {})})


def api_client(web: Process, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{web.port}", timeout=120,
                             headers={"Authorization": f"Bearer {token}"})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--format", choices=("columns", "rows"), default="columns")
    parser.add_argument("--callers", type=int, nargs="*", default=[1, 8, 32],
                        help="concurrent callers of `whole` to measure, one wrk run each")
    parser.add_argument("--seconds", type=int, default=10, help="each wrk run's length")
    parser.add_argument("--pace", type=float, nargs="*", default=[400.0],
                        help="answers a second the most callers ask together, one paced run "
                             "each (none: no paced run)")
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    run_id = f"bench-query-{uuid.uuid4().hex[:8]}"
    await fill(endpoints.database_url, run_id)
    token = await viewer_token(endpoints)
    # A user a caller: one user is given a quarter of the web's query slots at once.
    tokens = [token, *[await viewer_token(endpoints) for _ in range(max(args.callers,
                                                                        default=1) - 1)]]
    for mode, env in MODES:
        print(f"{mode}:")
        await measure(start_web(env), run_id, args, tokens)


async def measure(web: Process, run_id: str, args: argparse.Namespace,
                  tokens: list[str]) -> None:
    """Every case from one client, then ``whole`` from each number of concurrent callers."""
    try:
        async with api_client(web, tokens[0]) as client:
            base = f"/api/v1/runs/{run_id}/attempts/1"
            big: dict[str, str | int] = {"member": "rank-0", "source": "train", "tag": "big",
                                         "max_points": 2000, "format": args.format}
            cases: list[tuple[str, str, dict[str, str | int]]] = [
                ("whole", f"{base}/scalars", big),
                ("100 series", f"{base}/curves/loss", {"max_points": 2000, "max_series": 100,
                                                       "format": args.format}),
                ("zoomed", f"{base}/scalars", {**big, "step_min": 500_000,
                                               "step_max": 519_999}),
                ("small chunks", f"{base}/scalars", {**big, "tag": "narrow"}),
            ]
            print(f"  {args.requests} requests each, one client, over HTTP on loopback, "
                  f"format={args.format}")
            for label, url, params in cases:
                await timed(client, url, params, 3)  # warm the pool and caches
                p50, p99, returned = await timed(client, url, params, args.requests)
                print(f"  {label:<12} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   "
                      f"({returned:,} points or buckets returned)")
            whole = str(client.build_request("GET", f"{base}/scalars", params=big).url)
        print(f"  concurrent callers (wrk, {args.seconds} s each), one web process:")
        assert web.proc is not None  # (started)
        for callers in args.callers:
            before = cpu.tree_seconds([web.proc.pid])
            found = callers_load(whole, tokens[:callers], callers, args.seconds)
            spent = cpu.tree_seconds([web.proc.pid]) - before
            answers = found.answers_per_second * args.seconds
            print(f"  {found.line('whole')}   web CPU {spent * 1000 / answers:.2f} ms an answer")
        most = max(args.callers, default=1)
        for rate in args.pace:
            print(f"  {most} callers asking {rate:g} answers/s together ({args.seconds} s), "
                  "latency from each request's due time:")
            print("  " + (await paced_async(whole, tokens[:most], most, rate, args.seconds))
                  .line("whole"))
    finally:
        web.stop()

if __name__ == "__main__":
    asyncio.run(main())
