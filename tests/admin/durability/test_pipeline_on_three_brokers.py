"""The pipeline on three brokers (replication 3, min ISR 2): a real collector sending through
a real ingest while the leader of its member's partition is SIGKILLed loses nothing it was
told was durable and resends what was not; with a second broker gone (below min ISR)
ingest answers UNAVAILABLE, never OK, and the collector holds its batches until the cluster
is back. Each ends in exact counts in PostgreSQL (the projector on the same cluster, its
offsets past the last batch first). Runs before the brokers' own tests (file order), on
a topic nothing else wrote."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.support.collector_binary import spool_status
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, free_port
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, start_ingest, start_projector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.three_brokers import PARTITIONS, Cluster, leader_of
from tests.support.truth import write_jsonl
from tuneplane.ingest.sink import member_partition
from tuneplane.telemetry.v1.identity import MemberKey

PIECE = 20_000


@pytest.fixture
def on_cluster(initialised: Endpoints, three_brokers: Cluster, tls_dir: Path,
               tmp_path: Path) -> Iterator[Process]:
    """Ingest and a projector on the three brokers (the shared PostgreSQL); ingest's."""
    three_brokers.up()
    env = {"TUNEPLANE_KAFKA_BOOTSTRAP": three_brokers.bootstrap}
    projector = start_projector(initialised, tmp_path / "projector.log", env=env)
    try:
        ingest = start_ingest(initialised, tls_dir, free_port(), tmp_path / "ingest.log",
                              env=env)
        try:
            yield ingest
        finally:
            ingest.stop()
    finally:
        projector.stop()


def said(log: Path) -> str:
    return log.read_text(errors="replace")


def held_points(spool: Path) -> object:
    held = spool_status(spool)["pending"]
    assert isinstance(held, dict)
    return held["points"]


def wait(condition: Callable[[], bool], what: str, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}:\n{said(log)[-3000:]}"
        time.sleep(0.2)


async def stored_once(db: asyncpg.Connection, bootstrap: str, run_id: str, steps: int) -> None:
    assert await wait_for_points(db, run_id, steps, timeout=180) == steps
    await projected_to_end(bootstrap)  # a duplicate, if any, is stored by now
    found = sorted(step for _, _, _, step, _ in await curve_points(db, run_id))
    assert found == list(range(steps))  # every step once


async def test_a_collector_loses_nothing_to_a_killed_leader_and_waits_out_a_lost_quorum(
        initialised: Endpoints, three_brokers: Cluster, on_cluster: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    partition = member_partition(member, PARTITIONS)
    source = tmp_path / "metrics.jsonl"
    write_jsonl(source, range(PIECE), ["loss"])
    token = workload_token(initialised, member, tmp_path / "token")
    log = tmp_path / "collector.log"
    with log.open("wb") as out:
        collector = subprocess.Popen(
            collector_args(on_cluster.port, tls_dir, token, member, tmp_path / "spool",
                           {"train": source}, "--max-batch-points", "500"),
            stderr=out, env={**os.environ, "TUNEPLANE_COLLECTOR_RETRY_SECONDS": "2"})
    try:
        wait(lambda: spool_sent(tmp_path), "nothing sent", log)
        leader = await leader_of(three_brokers, partition)
        three_brokers.kill(leader)  # mid-run: the collector keeps reading and sending
        write_jsonl(source, range(PIECE, 2 * PIECE), ["loss"], append=True)
        await stored_once(db, three_brokers.bootstrap, run_id, 2 * PIECE)
        survivor = await leader_of(three_brokers, partition)
        assert survivor != leader  # the fault took effect: another broker leads now

        # A second broker gone: below min.insync.replicas, nothing is durable.
        three_brokers.kill(survivor)
        write_jsonl(source, range(2 * PIECE, 2 * PIECE + 5000), ["loss"], append=True)
        wait(lambda: "UNAVAILABLE" in said(log), "ingest never said UNAVAILABLE", log)
        # Every point of the outage read and held, none let go: the spool holds all 5,000
        # once the collector has read them (a point ingest took would never come back).
        wait(lambda: held_points(tmp_path / "spool") == 5000,
             "the spool never held every point of the outage", log)
        assert await db.fetchval("SELECT count(*) FROM series s JOIN curve_chunks c "
                                 "USING (series_id) WHERE s.run_id = $1 AND c.step_max >= $2",
                                 run_id, 2 * PIECE) == 0
        await asyncio.to_thread(three_brokers.up)
        await stored_once(db, three_brokers.bootstrap, run_id, 2 * PIECE + 5000)
        collector.send_signal(signal.SIGTERM)
        assert collector.wait(timeout=90) == 0, said(log)[-3000:]  # all delivered
    finally:
        if collector.poll() is None:
            collector.kill()
    refusals = said(on_cluster.log).count("Kafka did not confirm batch")
    assert refusals > 0, "ingest never refused a batch: the outage did not take effect"


def spool_sent(tmp_path: Path) -> bool:
    """Whether the collector has had batches acknowledged (fewer pending than sealed)."""
    status = spool_status(tmp_path / "spool")
    if not status:
        return False
    pending = status["pending"]
    assert isinstance(pending, dict)
    sealed = int(str(status["next_sequence"])) - 1
    return sealed > 2 and int(pending["batches"]) < sealed

