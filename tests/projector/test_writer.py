"""The PostgreSQL writer on the real database: one effect per batch identity."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import asyncpg
import pytest

from tests.support import Endpoints, curve_points
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb


@pytest.fixture
async def writer(initialised: Endpoints) -> AsyncIterator[PostgresWriter]:
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    yield PostgresWriter(pool)
    await pool.close()


def record(run_id: str, sequence: int, values: list[float], tag: str = "loss") -> bytes:
    n = len(values)
    return pb.Batch(
        identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="m", spool_epoch="e",
                                  sequence=sequence),
        chunks=[pb.SeriesChunk(source="s", tag=tag, steps=list(range(n)),
                               wall_times=[0.5] * n, values=values)]).SerializeToString()


async def test_the_same_batch_projected_twice_has_one_effect(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str) -> None:
    data = record(run_id, 1, [1.0, 2.0, 3.0])
    assert await writer.write(project(data, RecordMeta(0, 10, None))) is True
    assert await writer.write(project(data, RecordMeta(0, 99, None))) is False
    assert sorted(await curve_points(db, run_id)) == [
        ("m", "s", "loss", 0, 1.0), ("m", "s", "loss", 1, 2.0), ("m", "s", "loss", 2, 3.0)]
    ledger = await db.fetch("SELECT kafka_offset, points FROM batch_ledger WHERE run_id = $1",
                            run_id)
    assert [tuple(r) for r in ledger] == [(10, 3)]


async def test_non_finite_values_survive_storage(writer: PostgresWriter, db: asyncpg.Connection,
                                                 run_id: str) -> None:
    await writer.write(project(record(run_id, 1, [math.nan, math.inf, -math.inf]),
                               RecordMeta(0, 0, None)))
    values = [v for *_, v in sorted(await curve_points(db, run_id))]
    assert math.isnan(values[0])
    assert values[1:] == [math.inf, -math.inf]


async def test_series_rows_are_shared_across_batches(writer: PostgresWriter,
                                                     db: asyncpg.Connection, run_id: str) -> None:
    for sequence in (1, 2, 3):
        await writer.write(project(record(run_id, sequence, [float(sequence)]),
                                   RecordMeta(0, sequence, None)))
    assert await db.fetchval("SELECT count(*) FROM series WHERE run_id = $1", run_id) == 1
    assert await db.fetchval("""SELECT count(*) FROM curve_chunks JOIN series USING (series_id)
                                WHERE run_id = $1""", run_id) == 3
