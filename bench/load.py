"""Ingest under load: hundreds of simulated collectors pushing at once.

Needs the real services (``eval "$(scripts/services up)"``). Starts its own ingest, then
runs simulated collectors (each its own connection, member token and batch identities,
backing off on RESOURCE_EXHAUSTED like the real collector) from several processes, and
prints the points/s made durable in Kafka, ACK latency p50/p99, the answers, and ingest's
memory.

    uv run python bench/load.py [--collectors 2000] [--series 100] [--processes 3]
                                [--seconds 30] [--points 1000] [--max-concurrent-rpcs 256]

Every answer but OK and RESOURCE_EXHAUSTED (ingest's word for "back off") is a refusal the
bench names; ingest's RSS is sampled every 200 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import load
from tests.support.environment import Endpoints, bench_workspace, free_port
from tests.support.processes import start_ingest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collectors", type=int, default=2000)
    parser.add_argument("--series", type=int, default=100, help="series per collector")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--points", type=int, default=1000, help="points per batch")
    parser.add_argument("--max-concurrent-rpcs", type=int, default=256)
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    work, tls_dir = bench_workspace(endpoints)
    port = free_port()
    ingest = start_ingest(endpoints, tls_dir, port, work / "ingest.log",
                          "--max-concurrent-rpcs", str(args.max_concurrent_rpcs))
    try:
        plan = load.Plan(f"localhost:{port}", tls_dir / "ca.pem", endpoints.jwt_secret,
                         f"load-{uuid.uuid4().hex[:8]}", args.collectors, args.processes,
                         args.seconds, args.points, args.series)
        assert ingest.proc is not None
        report = load.run(plan, ingest.proc.pid)
        print(f"ingest --max-concurrent-rpcs {args.max_concurrent_rpcs}")
        print("\n".join(report.lines(plan)))
    finally:
        ingest.stop()


if __name__ == "__main__":
    main()
