"""Projector throughput: points/s and batches/s for 1 and 2 projector processes.

    uv run python bench/projector.py [--batches 400] [--points 5000] [--members 48]

For each process count, fresh projector processes join a consumer group of their own
(starting at the topic's end), then a run of B batches from M members (P points each,
as collectors seal them) is put on the topic. Timed: first batch in PostgreSQL to last.
Needs the real services (``eval "$(scripts/services up)"``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.environment import Endpoints, run_admin
from tests.support.kafka import produce
from tests.support.processes import start_projector
from tests.support.readmodels import first_and_last
from tests.support.truth import member_batch
from tuneplane.telemetry.v1.identity import MemberKey


async def measure(endpoints: Endpoints, processes: int, batches: int, points: int,
                  members: int, work: Path) -> tuple[float, float]:
    group = f"bench-projector-{uuid.uuid4().hex[:8]}"
    env = {"TUNEPLANE_PROJECTOR_GROUP": group, "TUNEPLANE_PROJECTOR_OFFSET_RESET": "latest"}
    workers = [start_projector(endpoints, work / f"{group}-{i}.log", env=env)
               for i in range(processes)]
    try:
        await asyncio.sleep(5.0)  # let the group settle on its partition assignment
        run_id = f"bench-{uuid.uuid4().hex[:8]}"
        keys = [MemberKey(run_id, 1, f"rank-{i}") for i in range(members)]
        stream = [member_batch(keys[i % members], 1 + i // members, points)
                  for i in range(batches)]
        db = await asyncpg.connect(endpoints.database_url)
        try:
            await produce(endpoints.kafka_bootstrap, stream)

            async def projected() -> int:
                return int(await db.fetchval(
                    "SELECT count(*) FROM batch_ledger WHERE run_id = $1", run_id))
            seen = await first_and_last(projected, batches, f"batches of run {run_id}")
        finally:
            await db.close()
        return seen.rate(batches) * points, seen.rate(batches)
    finally:
        for worker in workers:
            worker.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--members", type=int, default=48)
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    work = Path(tempfile.mkdtemp(prefix="tuneplane-projector-bench-"))
    print(f"{args.batches} batches x {args.points:,} points from {args.members} members "
          f"({args.batches * args.points:,} points)")
    results = {}
    for processes in (1, 2):
        points_s, batches_s = await measure(endpoints, processes, args.batches, args.points,
                                            args.members, work)
        results[processes] = points_s
        print(f"{processes} projector{'s' if processes > 1 else ' '}  {points_s:>12,.0f} "
              f"points/s  {batches_s:>8,.1f} batches/s")
    print(f"scaling     {results[2] / results[1]:.2f}x with 2 processes on 2 cores (shared with "
          "Kafka and PostgreSQL)")


if __name__ == "__main__":
    asyncio.run(main())
