"""Freshness: how long after a training job writes a point it can be queried, at a steady
write rate, through the whole pipeline on this machine.

    uv run python bench/freshness.py [--rates 10000 100000] [--seconds 20] [--tags 100]

For each rate a writer appends JSONL lines (``--tags`` metrics per line) to a file at that
many points per second, in 10 ms ticks, while a collector follows the file (default
settings) and sends to ingest, Kafka and a projector already running. A poller reads the
read model every 10 ms, as the web does; a line's latency is from the tick that wrote it
to the first poll that finds its last metric queryable (so a batch split inside a line
counts when its end arrives). The first 2 s of each rate are warm-up and left out.
Needs the real services (``eval "$(scripts/services up)"``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, bench_workspace, free_port
from tests.support.kafka import group_at_end
from tests.support.processes import collector_args, start_ingest, start_projector
from tuneplane.telemetry.v1.identity import MemberKey

TICK = 0.01
WARM_UP = 2.0
LATEST = """SELECT max(c.step_max) FROM series s JOIN curve_chunks c USING (series_id)
            WHERE s.run_id = $1 AND s.tag = $2"""


def write(path: Path, rate: int, tags: int, seconds: float, written: list[float],
          done: threading.Event) -> None:
    """Appends lines at ``rate`` points/s; ``written[step]`` is when line ``step`` was;
    ``done`` once the last is."""
    try:
        lines(path, rate, tags, seconds, written)
    finally:
        done.set()


def lines(path: Path, rate: int, tags: int, seconds: float, written: list[float]) -> None:
    per_second = rate / tags
    names = [f"m/{k}" for k in range(tags)]
    started = time.monotonic()
    with path.open("a", buffering=1 << 20) as out:
        while (now := time.monotonic()) - started < seconds:
            due = int((now - started) * per_second) + 1
            while len(written) < due:
                step = len(written)
                out.write(json.dumps({"step": step, "wall_time": time.time(), "metrics": {
                    name: step * 0.001 + k for k, name in enumerate(names)}}) + "\n")
                written.append(now)
            out.flush()
            time.sleep(max(0.0, TICK - (time.monotonic() - now)))


async def follow(db: asyncpg.Connection, run_id: str, tag: str, written: list[float],
                 done: threading.Event) -> list[float]:
    """Latency of every line, as the read model shows it."""
    seen = -1
    latencies: list[float] = []
    while True:
        latest = await db.fetchval(LATEST, run_id, tag)
        now = time.monotonic()
        if latest is not None and latest > seen:
            latencies += [now - written[s] for s in range(seen + 1, latest + 1)]
            seen = latest
        if done.is_set() and seen >= len(written) - 1:
            return latencies
        await asyncio.sleep(TICK)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--tags", type=int, default=100)
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    work, tls_dir = bench_workspace(endpoints)
    group = await group_at_end(endpoints.kafka_bootstrap, f"bench-fresh-{uuid.uuid4().hex[:8]}")
    ingest = start_ingest(endpoints, tls_dir, free_port(), work / "ingest.log", env=group)
    projector = start_projector(endpoints, work / "projector.log", env=group)
    db = await asyncpg.connect(endpoints.database_url)
    try:
        print(f"{args.tags} metrics per line, {args.seconds:.0f} s per rate, first "
              f"{WARM_UP:.0f} s left out; written → queryable in PostgreSQL")
        for rate in args.rates:
            run_id = f"bench-fresh-{uuid.uuid4().hex[:8]}"
            member = MemberKey(run_id, 1, "rank-0")
            source = work / f"{run_id}.jsonl"
            source.touch()
            token = workload_token(endpoints, member, work / f"token-{run_id}")
            collector = subprocess.Popen(
                [*collector_args(ingest.port, tls_dir, token, member, work / f"spool-{run_id}",
                                 {"train": source}), "--loglevel", "WARNING"])
            written: list[float] = []
            done = threading.Event()
            writer = threading.Thread(target=write, args=(source, rate, args.tags,
                                                          args.seconds, written, done))
            writer.start()
            latencies = await follow(db, run_id, f"m/{args.tags - 1}", written, done)
            writer.join()
            collector.terminate()
            collector.wait(timeout=60)
            steady = [lat for lat, at in zip(latencies, written, strict=True)
                      if at - written[0] >= WARM_UP]
            achieved = len(written) * args.tags / (written[-1] - written[0])
            print(f"{rate:>8,} points/s  p50 {statistics.median(steady) * 1000:6.0f} ms   "
                  f"p99 {pct(steady, 0.99) * 1000:6.0f} ms   max {max(steady) * 1000:6.0f} ms"
                  f"   ({len(written) * args.tags:,} points written at {achieved:,.0f}/s)")
    finally:
        await db.close()
        projector.stop()
        ingest.stop()


if __name__ == "__main__":
    asyncio.run(main())
