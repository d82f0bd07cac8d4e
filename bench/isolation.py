"""Node control and telemetry do not starve each other: latency of calls on one listener
alone and while another process floods the other past its call limit.

Needs the real services (``eval "$(scripts/services up)"``). Starts its own ingest and
control (each with a call limit of 16; control with 4 database connections), then prints
p50/p99 of telemetry pushes (100 points each, made durable in Kafka) alone and under a
Node control flood (one node's heartbeats, past control's call limit and the node's call
rate), and of Node control heartbeats (a fleet of nodes in turn, each within its rate)
alone and under a telemetry flood.

    uv run python bench/isolation.py [--calls 300] [--concurrency 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.isolation import listeners, measure
from tests.support.environment import Endpoints, bench_workspace, free_port
from tests.support.kafka import group_at_end
from tests.support.processes import launch_env, start_control, start_ingest
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1.identity import MemberKey


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300, help="timed calls per figure")
    parser.add_argument("--concurrency", type=int, default=200, help="calls the flood keeps "
                                                                     "in flight")
    parser.add_argument("--flood-nice", type=int, default=19,
                        help="the flooding process's niceness: it stands in for nodes on "
                             "other hosts, whose calls cost this machine no client CPU "
                             "(0: the flood competes for the CPU as a local process)")
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    work, tls_dir = bench_workspace(endpoints)
    port = free_port()
    # A group at the topic's end for ingest to ask about a new spool (GetCheckpoints).
    group = await group_at_end(endpoints.kafka_bootstrap,
                               f"bench-isolation-{uuid.uuid4().hex[:8]}")
    ingest = start_ingest(endpoints, tls_dir, port, work / "ingest.log",
                          "--max-concurrent-rpcs", "16", env=group)
    control = start_control(tls_dir, free_port(), work / "control.log",
                            launch_env(port, work / "spool", work / ("0" * 64)),
                            "--max-concurrent-rpcs", "16", "--db-pool-size", "4")
    db = await asyncpg.connect(endpoints.database_url)
    try:
        member = MemberKey(f"bench-{uuid.uuid4().hex[:8]}", 1, "rank-0")
        parties = await listeners(control.port, ingest.port, tls_dir, db,
                                  TokenSigner(endpoints.jwt_secret), member, calls=args.calls)
        print(f"{args.calls} timed calls per figure; the flood keeps {args.concurrency} calls "
              f"in flight from another process (nice {args.flood_nice})")
        pushes = await measure(parties.telemetry, "push", parties.flooding_node, "heartbeat",
                               calls=args.calls,
                               concurrency=args.concurrency, member=member,
                               flood_nice=args.flood_nice)
        print(pushes.report("telemetry push", "Node control"))
        beats = await measure(parties.nodes, "heartbeat", parties.telemetry, "push",
                              calls=args.calls,
                              concurrency=args.concurrency, member=member,
                              flood_nice=args.flood_nice)
        print(beats.report("Node control heartbeat", "telemetry"))
    finally:
        await db.close()
        control.stop()
        ingest.stop()


if __name__ == "__main__":
    asyncio.run(main())
