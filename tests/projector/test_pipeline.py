"""The projector's pipeline driven by the in-memory broker (no Kafka) into the real
PostgreSQL: poison aside, duplicates without effect, the commit after the transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import asyncpg
import pytest

from tests.support.environment import Endpoints
from tests.support.truth import member_batch
from tuneplane.common.kafka.memory import MemoryBroker, MemoryDeadLetters
from tuneplane.common.kafka.poison import PoisonPolicy
from tuneplane.projector import projection
from tuneplane.projector.pipeline import group_write, projector_pipeline
from tuneplane.projector.projection import Projection
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1.identity import MemberKey


class CrashAfterWrite(Exception):
    """The worker dies between its transaction and its commit."""


@pytest.fixture
async def writer(initialised: Endpoints) -> AsyncIterator[PostgresWriter]:
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    yield PostgresWriter(pool)
    await pool.close()


async def ledger(db: asyncpg.Connection, run_id: str) -> list[tuple[str, int]]:
    rows = await db.fetch("SELECT batch_id, kafka_offset FROM batch_ledger WHERE run_id = $1 "
                          "ORDER BY batch_id", run_id)
    return [(r["batch_id"], r["kafka_offset"]) for r in rows]


async def test_poison_is_set_aside_and_the_rest_is_projected(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str) -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    member = MemberKey(run_id, 1, "rank-0")
    broker.produce(member_batch(member, 0, 10).SerializeToString())
    junk = broker.produce(b"\xff\xfe not a batch")
    broker.produce(member_batch(member, 1, 10).SerializeToString())
    pipeline = projector_pipeline(broker.consumer("p"), writer.write_group,
                                  PoisonPolicy(dead, 10), max_records=64)
    group = await pipeline.run_once()
    assert (group.applied, group.poison) == (2, 1)
    assert [(m, "undecodable batch" in reason) for m, reason in dead.kept] == [(junk, True)]
    assert await ledger(db, run_id) == [("e-0", 0), ("e-1", 2)]
    assert broker.committed["p"] == {0: 3}


async def test_a_group_written_but_not_committed_comes_again_without_effect(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str) -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    member = MemberKey(run_id, 1, "rank-0")
    for sequence in range(3):
        broker.produce(member_batch(member, sequence, 8).SerializeToString())
    committed_during_write: list[dict[int, int]] = []

    async def crashing(projections: Sequence[Projection]) -> list[bool]:
        committed_during_write.append(dict(broker.committed.get("p", {})))
        await writer.write_group(projections)
        raise CrashAfterWrite

    first = projector_pipeline(broker.consumer("p"), crashing, PoisonPolicy(dead, 10), 64)
    with pytest.raises(CrashAfterWrite):
        await first.run_once()
    assert committed_during_write == [{}]
    assert "p" not in broker.committed  # the transaction is in, the offsets are not

    again = projector_pipeline(broker.consumer("p"), writer.write_group,
                               PoisonPolicy(dead, 10), 64)
    group = await again.run_once()
    assert (group.applied, group.duplicates) == (0, 3)
    assert broker.committed["p"] == {0: 3}
    assert await ledger(db, run_id) == [("e-0", 0), ("e-1", 1), ("e-2", 2)]
    points = await db.fetchval("SELECT sum(c.n) FROM series s JOIN curve_chunks c "
                               "USING (series_id) WHERE s.run_id = $1", run_id)
    assert points == 24  # each batch's points once


async def test_a_batch_postgresql_refuses_is_poison_alone_and_its_group_is_written(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the contract check (switched off here, as for a record older than it): the
    database refuses one batch's NUL; that batch alone is dead-lettered."""
    monkeypatch.setattr(projection, "validate", lambda batch, size: 0)
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    innocent, hostile = MemberKey(run_id, 1, "rank-0"), MemberKey(run_id, 1, "rank-1")
    broker.produce(member_batch(innocent, 0, 10).SerializeToString())
    bad = member_batch(hostile, 0, 10)
    bad.chunks[0].tag = "loss\x00"
    refused = broker.produce(bad.SerializeToString())
    broker.produce(member_batch(innocent, 1, 10).SerializeToString())
    pipeline = projector_pipeline(broker.consumer("p"), group_write(writer, retry=True),
                                  PoisonPolicy(dead, 10), max_records=64)
    group = await pipeline.run_once()
    assert (group.applied, group.poison) == (2, 1)
    ((message, reason),) = dead.kept
    assert message == refused
    assert "refused by the store: CharacterNotInRepertoireError" in reason
    assert await ledger(db, run_id) == [("e-0", 0), ("e-1", 2)]
    assert broker.committed["p"] == {0: 3}


async def test_a_batch_past_its_attempts_series_bound_is_poison_alone(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        bounded = PostgresWriter(pool, max_series=3)
        broker, dead = MemoryBroker(), MemoryDeadLetters()
        first, second = MemberKey(run_id, 1, "rank-0"), MemberKey(run_id, 1, "rank-1")
        broker.produce(member_batch(first, 0, 10, tags=2).SerializeToString())
        over = broker.produce(member_batch(second, 0, 10, tags=2).SerializeToString())
        broker.produce(member_batch(first, 1, 10, tags=2).SerializeToString())  # no new series
        other_attempt = MemberKey(run_id, 2, "rank-0")
        broker.produce(member_batch(other_attempt, 0, 10, tags=3).SerializeToString())
        pipeline = projector_pipeline(broker.consumer("p"), group_write(bounded, retry=True),
                                      PoisonPolicy(dead, 10), max_records=64)
        group = await pipeline.run_once()
    finally:
        await pool.close()
    assert (group.applied, group.poison) == (3, 1)
    ((message, reason),) = dead.kept
    assert message == over
    assert f"would give run {run_id} attempt 1 4 series, over the bound of 3" in reason
    series = await db.fetch("SELECT attempt, member FROM series WHERE run_id = $1 "
                            "ORDER BY attempt, member", run_id)
    assert [tuple(r) for r in series] == [(1, "rank-0")] * 2 + [(2, "rank-0")] * 3
