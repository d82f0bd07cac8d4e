"""The fault suite: a multi-member run (TensorBoard and JSONL) while a seeded schedule
SIGKILLs collectors, ingest, projectors, the Kafka broker and PostgreSQL, drops replies,
cuts connections and holds ingest down long enough to fill a spool. At the end PostgreSQL
and S3 are compared with the truth: nothing lost, duplicated or altered.

A short version runs in CI. The full one (1,000,000+ points, three rounds of faults):

    TUNEPLANE_FAULTS_POINTS=1000000 TUNEPLANE_FAULTS_ROUNDS=3 uv run pytest tests/faults -s
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from pathlib import Path

import asyncpg

from tests.faults import checker
from tests.faults.fleet import Fleet, services
from tests.faults.proxy import FaultyLink
from tests.faults.workload import Workload
from tests.support.environment import Endpoints, free_port
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, start_projector

MEMBERS = 8
POINTS = int(os.environ.get("TUNEPLANE_FAULTS_POINTS", "128000"))
ROUNDS = int(os.environ.get("TUNEPLANE_FAULTS_ROUNDS", "1"))
SEED = int(os.environ.get("TUNEPLANE_FAULTS_SEED", "20261129"))
KINDS = ("collector", "collector", "ingest", "projector", "kafka", "postgres", "cut", "drop",
         "outage")


async def inflict(kind: str, fleet: Fleet, rng: random.Random) -> str:
    """One fault, and what it takes to come back from it."""
    if kind == "collector":
        i = rng.randrange(MEMBERS)
        fleet.kill_collector(i)
        return f"SIGKILL collector {i}, restarted"
    if kind in ("ingest", "outage"):
        assert fleet.ingest is not None
        fleet.ingest.kill()
        down = 6.0 if kind == "outage" else 0.5
        await asyncio.sleep(down)
        await asyncio.to_thread(fleet.ingest.start)
        return f"SIGKILL ingest, back after {down:.1f} s"
    if kind == "projector":
        victim = rng.choice(fleet.projectors)
        victim.kill()
        await asyncio.sleep(1.0)
        await asyncio.to_thread(victim.start)
        return "SIGKILL a projector, restarted"
    if kind in ("kafka", "postgres"):
        await asyncio.to_thread(services, "kill", kind)
        await asyncio.sleep(2.0)
        await asyncio.to_thread(services, "up", kind)
        return f"SIGKILL {kind}, restarted"
    if kind == "cut":
        fleet.link.cut()
        return "cut every collector-ingest connection"
    fleet.link.drop_replies(1.5)
    return "drop every reply for 1.5 s"


async def test_nothing_is_lost_duplicated_or_altered_under_a_seeded_fault_schedule(
        initialised: Endpoints, projector: Process, tls_dir: Path, tmp_path: Path,
        run_id: str) -> None:
    rng = random.Random(SEED)
    steps = POINTS // (MEMBERS * 4)
    workload = Workload(tmp_path / "job", MEMBERS, steps)
    ingest_port = free_port()
    link = FaultyLink(ingest_port)
    await link.start()
    projectors = [projector, start_projector(initialised, tmp_path / "projector-2.log")]
    fleet = Fleet(initialised, workload, run_id, tls_dir, tmp_path, projectors, link)
    fleet.start_ingest(ingest_port)
    schedule = [kind for _ in range(ROUNDS) for kind in rng.sample(KINDS, len(KINDS))]
    done = threading.Event()
    writer = threading.Thread(target=workload.write, args=(8.0 * len(schedule), done))
    try:
        for i in range(MEMBERS):
            fleet.start_collector(i)
        writer.start()
        started = time.monotonic()
        for kind in schedule:
            await asyncio.sleep(rng.uniform(0.5, 2.5))
            what = await inflict(kind, fleet, rng)
            print(f"{time.monotonic() - started:6.1f} s  {what}", flush=True)
            await asyncio.to_thread(fleet.supervise)
        while not done.is_set():
            await asyncio.to_thread(fleet.supervise)
            await asyncio.sleep(1.0)
        writer.join()
        codes = await asyncio.to_thread(fleet.finish_collectors, 300)
        assert codes == dict.fromkeys(range(MEMBERS), 0), codes  # every batch delivered
        db = await asyncpg.connect(initialised.database_url)  # PostgreSQL was killed meanwhile
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            stored = await db.fetchval(
                "SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c "
                "USING (series_id) WHERE s.run_id = $1", run_id)
            if stored >= workload.points:
                break
            await asyncio.to_thread(fleet.supervise)
            await asyncio.sleep(1.0)
        await projected_to_end(initialised.kafka_bootstrap)  # a late duplicate is in by now
        curves = await checker.points(db, workload, run_id)
        rich = await checker.rich_records(db, workload, run_id, initialised.s3_endpoint,
                                          initialised.s3_bucket)
        await db.close()
        print(curves.line("points"))
        print(rich.line("rich records"))
        print(f"replies dropped {link.dropped_replies}, connections cut {link.cuts}, "
              f"restarts by the supervisor {fleet.restarts}")
        assert curves.clean()
        assert curves.stored == workload.points
        assert rich.clean()
        assert rich.stored == len(workload.images())
        paused = (tmp_path / f"collector-{MEMBERS - 1}.log").read_text()
        assert "reading paused" in paused  # the spool-full period happened
    finally:
        fleet.stop()
        await link.stop()
        for process in projectors[1:]:
            process.stop()
        for process in projectors[:1]:  # the session's projector serves later tests
            assert process.proc is not None
            if process.proc.poll() is not None:
                process.start()
