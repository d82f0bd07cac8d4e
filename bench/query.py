"""Query latency of the web API: p50/p99 over repeated requests to a running tuneplane-web.

    uv run python bench/query.py [--requests 50]

Read models are filled in SQL (chunks as the projector writes them, with summaries):
one 1,000,000-point series (100 chunks) and 100 member series of 10,000 points under
one canonical name. Timed over HTTP with a user token:
  whole      the 1M-point series reduced to 2,000 points
  100 series the canonical curve's 100 member series at 2,000 points each
  zoomed     a 20,000-step window of the 1M series (2,000 points: buckets or raw)
Needs the real services (``eval "$(scripts/services up)"``).
"""

from __future__ import annotations

import argparse
import asyncio
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

from tests.support import BIN, Endpoints, Process, free_port, run_admin
from tuneplane.common import users
from tuneplane.common.mapping import freeze
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1.integration import MetricMapping

CHUNKS = """
INSERT INTO curve_chunks (series_id, batch_id, chunk_index, n, step_min, step_max, v_min,
                          v_max, v_first, v_last, steps, wall_times, "values")
SELECT $1, 'b' || c, 0, $2, c * $2, c * $2 + $2 - 1, sin(c * $2 / 1e4), sin(c * $2 / 1e4) + 1,
       sin(c * $2 / 1e4), sin(c * $2 / 1e4) + 1,
       array(SELECT generate_series(c * $2, c * $2 + $2 - 1)::bigint),
       array_fill(0.0::float8, ARRAY[$2::int]),
       array(SELECT sin(c * $2 / 1e4) + i / $2::float8 FROM generate_series(0, $2 - 1) AS i)
FROM generate_series(0, $3 - 1) AS c
"""


async def fill(db: asyncpg.Connection, run_id: str) -> None:
    async def series(member: str, tag: str, per_chunk: int, chunks: int) -> None:
        series_id = await db.fetchval(
            "INSERT INTO series (run_id, attempt, member, source, tag) "
            "VALUES ($1, 1, $2, 'train', $3) RETURNING series_id", run_id, member, tag)
        await db.execute(CHUNKS, series_id, per_chunk, chunks)
    await series("rank-0", "big", 10_000, 100)
    for m in range(100):
        await series(f"rank-{m}", "loss", 1_000, 10)
    await freeze(db, run_id, 1, [MetricMapping(tag="loss", name="loss", goal="minimize")])


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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    run_id = f"bench-query-{uuid.uuid4().hex[:8]}"
    name = f"bench-{uuid.uuid4().hex[:8]}"
    db = await asyncpg.connect(endpoints.database_url)
    try:
        await fill(db, run_id)
        await users.add_user(db, name)
    finally:
        await db.close()
    token = users.issue(TokenSigner(endpoints.jwt_secret), name, now=time.time(),
                        ttl_seconds=3600)
    port = free_port()
    web = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                  Path(tempfile.mkdtemp()) / "web.log", ready="Uvicorn running on", port=port)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120,
                                     headers={"Authorization": f"Bearer {token}"}) as client:
            base = f"/api/v1/runs/{run_id}/attempts/1"
            big: dict[str, str | int] = {"member": "rank-0", "source": "train", "tag": "big",
                                         "max_points": 2000}
            cases: list[tuple[str, str, dict[str, str | int]]] = [
                ("whole", f"{base}/scalars", big),
                ("100 series", f"{base}/curves/loss", {"max_points": 2000, "max_series": 100}),
                ("zoomed", f"{base}/scalars", {**big, "step_min": 500_000,
                                               "step_max": 519_999}),
            ]
            print(f"{args.requests} requests each, one client, over HTTP on loopback")
            for label, url, params in cases:
                await timed(client, url, params, 3)  # warm the pool and caches
                p50, p99, returned = await timed(client, url, params, args.requests)
                print(f"{label:<11} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   "
                      f"({returned:,} points or buckets returned)")
    finally:
        web.stop()


if __name__ == "__main__":
    asyncio.run(main())
