"""Throughput of the pipeline on this machine: file → PostgreSQL, and each stage alone.

Needs the real services (``eval "$(scripts/services up)"``). Prints points/s for:

  read+seal   JSONL file → sealed batches in the SQLite spool: the collector binary
              (collector/binary, x86_64 musl) started with ingest unreachable, until its
              spool says the file is read to its end (polled every 5 ms)
  send        that spool → ingest (TLS, token check) → Kafka acks=all → spool delete: the
              collector started again on it with ingest up, until it exits, all sent
  project     Kafka → faust projector → PostgreSQL: the points seen after the first look
              that saw any, over the time to the last (the projector commits groups of up
              to 64 batches: the first look already holds a whole group)
  end-to-end  collector process started → every point in PostgreSQL (with when the
              first point was stored and when the collector was done)
  cpu         user + system CPU of the end-to-end run: the collector, ingest, the
              projector, the local Kafka broker and PostgreSQL server (bench/cpu.py), in
              core-seconds and per million points
  first batch a collector started on a file of 100 lines (one batch) → that batch arriving
              at an ingest that only records it (tests/collector/binary/scripted_ingest.py);
              and → that batch ACKed by the real ingest and the collector exited (medians of
              5)

The binary is scripts/collector-binary's (TUNEPLANE_COLLECTOR_BINARY_DIR, default
~/.cache/tuneplane/cargo-target).

    uv run python bench/e2e.py [--points 1000000] [--tags 5] [--batch-points 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cpu import Meter
from tests.collector.binary.scripted_ingest import scripted_ingest
from tests.support.collector_binary import wait_read
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, bench_workspace, free_port
from tests.support.kafka import group_at_end
from tests.support.processes import Process, collector_args, start_ingest, start_projector
from tests.support.readmodels import Seen, first_and_last
from tests.support.truth import write_jsonl
from tuneplane.telemetry.v1.identity import MemberKey

COUNT = """SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c USING (series_id)
           WHERE s.run_id = $1"""


def rate(points: int, seconds: float) -> str:
    return f"{points / max(seconds, 1e-6):>12,.0f} points/s  ({points:,} points in {seconds:.2f} s)"


async def wait_points(db: asyncpg.Connection, run_id: str, expected: int) -> Seen:
    """When the run's first point was seen in PostgreSQL, and when all were."""
    async def count() -> int:
        return int(await db.fetchval(COUNT, run_id))
    return await first_and_last(count, expected, f"points of run {run_id}")


def collector(args: list[str], log: Path) -> subprocess.Popen[str]:
    """The collector binary with ``args``, saying only warnings, into ``log``; its spool is
    never full and a stop drains for a second at most."""
    with log.open("a") as said:
        return subprocess.Popen([*args, "--loglevel", "WARNING"], stderr=said, text=True,
                                env={**os.environ, "TUNEPLANE_TELEMETRY_SPOOL_BYTES": str(1 << 40),
                                     "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})


def read_and_seal(args: list[str], spool: Path, source: Path, log: Path) -> float:
    """Seconds from starting the collector (``args``: ingest unreachable) to ``source`` sealed
    to its end in ``spool``; the collector is stopped then."""
    started = time.perf_counter()
    process = collector(args, log)
    sealed = wait_read(process, spool, [source], poll=0.005, timeout=600)
    seconds = time.perf_counter() - started
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert sealed, log.read_text()
    return seconds


def until_exit(args: list[str], log: Path) -> float:
    """Seconds from starting the collector with ``--exit-when-idle`` to its exit, having
    delivered everything."""
    started = time.perf_counter()
    process = collector([*args, "--exit-when-idle"], log)
    assert process.wait(timeout=600) == 0, log.read_text()
    return time.perf_counter() - started


def first_batch_ms(endpoints: Endpoints, ingest_port: int, tls_dir: Path,
                   work: Path) -> tuple[float, float]:
    """Medians of 5, in milliseconds, of a collector started on a file of 100 lines (one
    batch): its start to that batch arriving at an ingest that only records it (in this
    process: the first batch sent), and its start to its exit with the batch ACKed by the
    real ingest (Kafka acks=all)."""
    source = work / "small.jsonl"
    write_jsonl(source, range(100), ["loss"])
    arrived, exited = [], []
    for _ in range(5):
        run_id = f"bench-{uuid.uuid4().hex[:8]}"
        member = MemberKey(run_id, 1, "rank-0")
        token = workload_token(endpoints, member, work / f"token-{run_id}")
        with scripted_ingest(tls_dir) as recorder:
            started = time.monotonic()
            process = collector(collector_args(recorder.port, tls_dir, token, member,
                                               work / f"spool-{run_id}-sent",
                                               {"train": source}), work / "first-batch.log")
            first = recorder.wait_for(lambda calls: len(calls) > 0)[0]
            arrived.append((first.at - started) * 1000)
            process.terminate()
            process.wait(timeout=60)
        exited.append(until_exit(collector_args(
            ingest_port, tls_dir, token, member, work / f"spool-{run_id}", {"train": source}),
            work / "first-batch.log") * 1000)
    return statistics.median(arrived), statistics.median(exited)


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
    first, last, _ = await wait_points(db, run_id, points)
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

    # A projector group of its own from the topic's end: no backlog of earlier runs. Ingest
    # asks it too whether the read models hold a new spool's member (GetCheckpoints): the
    # default group, which nothing consumes here, would keep every new spool waiting.
    group = await group_at_end(endpoints.kafka_bootstrap, f"bench-e2e-{uuid.uuid4().hex[:8]}")
    ingest = start_ingest(endpoints, tls_dir, free_port(), work / "ingest.log", env=group)
    db = await asyncpg.connect(endpoints.database_url)
    projector: Process | None = None
    try:
        # Stages one at a time: no projector runs while the spool is read and sent.
        run_id = f"bench-{uuid.uuid4().hex[:8]}"
        member = MemberKey(run_id, 1, "rank-0")
        token = workload_token(endpoints, member, work / "token")
        spool, log = work / "spool-stages", work / "stages.log"
        staged = [*collector_args(free_port(), tls_dir, token, member, spool,
                                  {"train": source}, "--max-batch-points",
                                  str(args.batch_points))]
        seconds = read_and_seal(staged, spool, source, log)
        print(f"read+seal   {rate(points, seconds)}")
        staged[staged.index("--target") + 1] = f"localhost:{ingest.port}"
        assert ingest.proc is not None
        sending = Meter.pipeline({"ingest": ingest.proc.pid})
        sending.start()
        seconds = until_exit(staged, log)
        print(f"send        {rate(points, seconds)}  (with the collector's start and exit)")
        print(f"            cpu per million points: {sending.summary(sending.used(), points)}")
        projector = start_projector(endpoints, work / "projector.log", env=group)
        seen = await wait_points(db, run_id, points)
        print(f"project     {rate(points - seen.at_first, seen.last - seen.first)}  "
              f"(after the first {seen.at_first:,} seen)")

        # The whole path at once, the projector already running.
        assert projector.proc is not None
        meter = Meter.pipeline({"ingest": ingest.proc.pid, "projector": projector.proc.pid})
        meter.start()
        first, done, seconds = await end_to_end(endpoints, ingest.port, tls_dir, work, db,
                                                source, points, args.batch_points)
        used = meter.used()
        print(f"end-to-end  {rate(points, seconds)}")
        print(f"            first point stored after {first:.2f} s, collector done after "
              f"{done:.2f} s")
        print("cpu         of the end-to-end run, every process of the pipeline:")
        print("\n".join(meter.lines(used, points)))
        sent, acked = first_batch_ms(endpoints, ingest.port, tls_dir, work)
        print(f"first batch {sent:.1f} ms from a collector's start to its first batch sent "
              f"(arrived at a recording ingest); {acked:.1f} ms to it ACKed by ingest and the "
              "collector exited (medians of 5)")
    finally:
        if projector is not None:  # a projector left behind would skew the next run
            projector.stop()
        await db.close()
        ingest.stop()


if __name__ == "__main__":
    asyncio.run(main())
