"""The fault suite's run: a multi-member run (TensorBoard and JSONL) while a seeded schedule
SIGKILLs collectors, ingest, projectors, Kafka brokers and PostgreSQL, drops replies, cuts
connections and holds ingest down long enough to fill a spool; at the end PostgreSQL and S3
are compared with the truth. ``Kafka`` says which Kafka it runs on and how a broker fault
is done there: the shared single broker (killed and restarted whole) or three brokers (one
SIGKILLed at a time, the others carrying on). The tests: test_chaos.py,
test_chaos_three_brokers.py."""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from tests.faults import checker
from tests.faults.fleet import Fleet, services
from tests.faults.proxy import FaultyLink
from tests.faults.workload import Workload
from tests.support.environment import Endpoints, free_port
from tests.support.kafka import projected_to_end
from tests.support.processes import Process

MEMBERS = 8
POINTS = int(os.environ.get("TUNEPLANE_FAULTS_POINTS", "128000"))
ROUNDS = int(os.environ.get("TUNEPLANE_FAULTS_ROUNDS", "1"))
SEED = int(os.environ.get("TUNEPLANE_FAULTS_SEED", "20261129"))
#: Every kind but Kafka's, which ``Kafka.kinds`` adds.
KINDS = ("collector", "collector", "ingest", "projector", "postgres", "cut", "drop", "outage")


@dataclass
class Kafka:
    """The Kafka a run uses: its bootstrap (None: the shared one), its fault kinds and how
    each is done (a fault's description back)."""

    bootstrap: str | None
    kinds: tuple[str, ...]
    inflict: Callable[[str, random.Random], Awaitable[str]]
    #: Settings for ingest and the projectors (the bootstrap, when not the shared one).
    env: dict[str, str] = field(default_factory=dict)


async def shared_broker(kind: str, rng: random.Random) -> str:
    await asyncio.to_thread(services, "kill", "kafka")
    await asyncio.sleep(2.0)
    await asyncio.to_thread(services, "up", "kafka")
    return "SIGKILL kafka, restarted"


SHARED = Kafka(None, ("kafka",), shared_broker)


async def inflict(kind: str, fleet: Fleet, kafka: Kafka, rng: random.Random) -> str:
    """One fault, and what it takes to come back from it."""
    if kind in kafka.kinds:
        return await kafka.inflict(kind, rng)
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
    if kind == "postgres":
        await asyncio.to_thread(services, "kill", kind)
        await asyncio.sleep(2.0)
        await asyncio.to_thread(services, "up", kind)
        return f"SIGKILL {kind}, restarted"
    if kind == "cut":
        fleet.link.cut()
        return "cut every collector-ingest connection"
    fleet.link.drop_replies(1.5)
    return "drop every reply for 1.5 s"


async def stored_points(db: asyncpg.Connection, run_id: str) -> int:
    found = await db.fetchval("SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c "
                              "USING (series_id) WHERE s.run_id = $1", run_id)
    return int(found)


async def run(initialised: Endpoints, kafka: Kafka, projectors: list[Process], tls_dir: Path,
              tmp_path: Path, run_id: str) -> list[str]:
    """The whole run, asserting its end is exact; the faults inflicted, in order."""
    rng = random.Random(SEED)
    steps = POINTS // (MEMBERS * 4)
    workload = Workload(tmp_path / "job", MEMBERS, steps)
    ingest_port = free_port()
    link = FaultyLink(ingest_port)
    await link.start()
    fleet = Fleet(initialised, workload, run_id, tls_dir, tmp_path, projectors, link)
    fleet.start_ingest(ingest_port, kafka.env)
    schedule = [kind for _ in range(ROUNDS)
                for kind in rng.sample([*KINDS, *kafka.kinds], len(KINDS) + len(kafka.kinds))]
    done = threading.Event()
    writer = threading.Thread(target=workload.write, args=(8.0 * len(schedule), done))
    inflicted: list[str] = []
    try:
        for i in range(MEMBERS):
            fleet.start_collector(i)
        writer.start()
        started = time.monotonic()
        for kind in schedule:
            await asyncio.sleep(rng.uniform(0.5, 2.5))
            inflicted.append(await inflict(kind, fleet, kafka, rng))
            print(f"{time.monotonic() - started:6.1f} s  {inflicted[-1]}", flush=True)
            await asyncio.to_thread(fleet.supervise)
        while not done.is_set():
            await asyncio.to_thread(fleet.supervise)
            await asyncio.sleep(1.0)
        writer.join()
        codes = await asyncio.to_thread(fleet.finish_collectors, 300)
        assert codes == dict.fromkeys(range(MEMBERS), 0), codes  # every batch delivered
        db = await asyncpg.connect(initialised.database_url)  # PostgreSQL was killed meanwhile
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and await stored_points(db, run_id) < workload.points:
            await asyncio.to_thread(fleet.supervise)
            await asyncio.sleep(1.0)
        # a late duplicate is in by now
        await projected_to_end(kafka.bootstrap or initialised.kafka_bootstrap)
        curves = await checker.points(db, workload, run_id)
        rich = await checker.rich_records(db, workload, run_id, initialised.s3_endpoint,
                                          initialised.s3_bucket)
        await db.close()
        print(curves.line("points"))
        print(rich.line("rich records"))
        print(f"faults inflicted {len(inflicted)}, replies dropped {link.dropped_replies}, "
              f"connections cut {link.cuts}, restarts by the supervisor {fleet.restarts}")
        assert curves.clean()
        assert curves.stored == workload.points
        assert rich.clean()
        assert rich.stored == len(workload.images())
        paused = (tmp_path / f"collector-{MEMBERS - 1}.log").read_text()
        assert "reading paused" in paused  # the spool-full period happened
        return inflicted
    finally:
        fleet.stop()
        await link.stop()
