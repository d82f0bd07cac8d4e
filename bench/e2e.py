"""Throughput of the pipeline on this machine: file → PostgreSQL, and each stage alone.

Needs the real services (``eval "$(scripts/services up)"``). Prints points/s for:

  read+seal   JSONL file → sealed batches in the SQLite spool (collector reader)
  send        spool → ingest (TLS, token check) → Kafka acks=all → spool delete
  project     Kafka → faust projector → PostgreSQL (first to last point seen)
  end-to-end  collector process started → every point in PostgreSQL (with when the
              first point was stored and when the collector was done)

    uv run python bench/e2e.py [--points 1000000] [--tags 5] [--batch-points 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, bench_workspace, free_port
from tests.support.kafka import group_at_end
from tests.support.processes import Process, collector_args, start_ingest, start_projector
from tests.support.readmodels import first_and_last
from tests.support.truth import write_jsonl
from tuneplane.collector.reader import SourceReader, SourceSpec
from tuneplane.collector.sender import Sender, Target
from tuneplane.collector.spool import Spool
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES

COUNT = """SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c USING (series_id)
           WHERE s.run_id = $1"""


def rate(points: int, seconds: float) -> str:
    return f"{points / seconds:>12,.0f} points/s  ({points:,} points in {seconds:.2f} s)"


async def wait_points(db: asyncpg.Connection, run_id: str, expected: int) -> tuple[float, float]:
    """(time the run's first point was seen in PostgreSQL, time all were)."""
    async def count() -> int:
        return int(await db.fetchval(COUNT, run_id))
    return await first_and_last(count, expected, f"points of run {run_id}")


async def end_to_end(endpoints: Endpoints, ingest_port: int, tls_dir: Path, work: Path,
                     db: asyncpg.Connection, source: Path, points: int,
                     batch_points: int) -> tuple[float, float, float]:
    """Seconds from starting a collector on ``source`` until its first point is in
    PostgreSQL, until the collector is done, and until all its points are in PostgreSQL
    (a projector must be running)."""
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    member = MemberKey(run_id, 1, "rank-0")
    token = workload_token(endpoints, member, work / f"token-{run_id}")
    started = time.perf_counter()
    collector = subprocess.Popen(
        [*collector_args(ingest_port, tls_dir, token, member, work / f"spool-{run_id}",
                         {"train": source}, "--max-batch-points", str(batch_points)),
         "--exit-when-idle", "--loglevel", "WARNING"])

    def done() -> float:
        collector.wait(timeout=60)
        return time.perf_counter()
    exited = asyncio.get_running_loop().run_in_executor(None, done)
    first, last = await wait_points(db, run_id, points)
    return first - started, await exited - started, last - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--tags", type=int, default=5)
    parser.add_argument("--batch-points", type=int, default=10_000)
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    work, tls_dir = bench_workspace(endpoints)
    steps = args.points // args.tags
    points = steps * args.tags
    tags = [f"metric/{i}" for i in range(args.tags)]
    source = work / "metrics.jsonl"
    write_jsonl(source, range(steps), tags)
    print(f"{points:,} points ({steps:,} steps x {args.tags} tags), "
          f"{source.stat().st_size / 1e6:.1f} MB of JSONL, batches of {args.batch_points:,}")

    ingest = start_ingest(endpoints, tls_dir, free_port(), work / "ingest.log")
    # A projector group of its own from the topic's end: no backlog of earlier runs.
    group = await group_at_end(endpoints.kafka_bootstrap, f"bench-e2e-{uuid.uuid4().hex[:8]}")
    db = await asyncpg.connect(endpoints.database_url)
    projector: Process | None = None
    try:
        # Stages one at a time: no projector runs while the spool is read and sent.
        run_id = f"bench-{uuid.uuid4().hex[:8]}"
        member = MemberKey(run_id, 1, "rank-0")
        spool = Spool(work / "spool-stages", MemberKey(run_id, 1, "rank-0"))
        reader = SourceReader(spool, [SourceSpec("train", source)],
                              max_points=args.batch_points, max_bytes=MAX_BATCH_BYTES * 3 // 4,
                              spool_bytes=1 << 40, clock=time.time)
        started = time.perf_counter()
        while not reader.run_once():
            pass
        print(f"read+seal   {rate(reader.points_read, time.perf_counter() - started)}")
        sender = Sender(spool, Target(f"localhost:{ingest.port}", tls_dir / "ca.pem",
                                      workload_token(endpoints, member, work / "token")))
        started = time.perf_counter()
        await asyncio.to_thread(sender.run_once)
        print(f"send        {rate(sender.sent_points, time.perf_counter() - started)}")
        sender.close()
        projector = start_projector(endpoints, work / "projector.log", env=group)
        first, last = await wait_points(db, run_id, points)
        print(f"project     {rate(points, last - first)}")

        # The whole path at once, the projector already running.
        first, done, seconds = await end_to_end(endpoints, ingest.port, tls_dir, work, db,
                                                source, points, args.batch_points)
        print(f"end-to-end  {rate(points, seconds)}")
        print(f"            first point stored after {first:.2f} s, collector done after "
              f"{done:.2f} s")
    finally:
        if projector is not None:  # a projector left behind would skew the next run
            projector.stop()
        await db.close()
        ingest.stop()


if __name__ == "__main__":
    asyncio.run(main())
