"""The PostgreSQL writer on the real database: one effect per batch identity."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import asyncpg
import pytest

from tests.support import readmodels
from tests.support.environment import Endpoints
from tests.support.readmodels import curve_points
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


async def test_rich_bytes_land_in_s3_under_their_content_key_and_rows_point_there(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    from tuneplane.common.objectstore import s3_client
    from tuneplane.projector.writer import S3ObjectStore
    client = s3_client(initialised.s3_endpoint)
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    writer = PostgresWriter(pool, S3ObjectStore(client, initialised.s3_bucket))
    batch = pb.Batch.FromString(record(run_id, 1, [1.0]))
    payload = b"\x00\x01 histogram bytes " + run_id.encode()
    batch.rich.add(source="tb", tag="w", step=5, wall_time=2.0, payload=payload,
                   kind=pb.RichRecord.KIND_HISTOGRAM, plugin_name="histograms", file="f",
                   offset=99)
    batch.session_starts.add(source="tb", file="f", offset=0, step=0, wall_time=1.0)
    batch.session_starts.add(source="tb", file="f", offset=9, step=3, wall_time=1.5,
                             tags=["loss", "acc"])  # an old-style file's out-of-order step
    data = batch.SerializeToString()
    try:
        assert await writer.write(project(data, RecordMeta(0, 1, None))) is True
        assert await writer.write(project(data, RecordMeta(0, 1, None))) is False
    finally:
        await pool.close()
    (row,) = await db.fetch("SELECT kind, tag, step, object_key, bytes, file_offset "
                            "FROM rich_records WHERE run_id = $1", run_id)
    assert (row["kind"], row["tag"], row["step"], row["bytes"], row["file_offset"]) == (
        "histogram", "w", 5, len(payload), 99)
    stored = client.get_object(Bucket=initialised.s3_bucket, Key=row["object_key"])
    assert stored["Body"].read() == payload
    markers = await db.fetch("SELECT marker_index, step, tags FROM session_starts "
                             "WHERE run_id = $1 ORDER BY marker_index", run_id)
    assert [tuple(m) for m in markers] == [(0, 0, []), (1, 3, ["loss", "acc"])]


async def test_one_tag_of_two_tensorboard_runs_is_two_series_and_old_batches_the_roots(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str) -> None:
    old = record(run_id, 1, [1.0])  # sealed before chunks carried a run path
    runs = pb.Batch.FromString(record(run_id, 2, [2.0]))
    runs.chunks[0].run_path = "lr_group/a"
    runs.chunks.add(source="s", run_path="lr_group/b", tag="loss", steps=[0], wall_times=[0.5],
                    values=[3.0])
    runs.chunks.add(source="s", tag="loss", steps=[1], wall_times=[0.5], values=[4.0])
    for sequence, data in ((1, old), (2, runs.SerializeToString())):
        assert await writer.write(project(data, RecordMeta(0, sequence, None))) is True
    values: dict[str, list[float]] = {}
    for p in await readmodels.stored_points(db, run_id):
        values.setdefault(p.run_path, []).append(p.value)
    assert sorted((path, sorted(v)) for path, v in values.items()) == [
        ("", [1.0, 4.0]), ("lr_group/a", [2.0]), ("lr_group/b", [3.0])]


async def test_a_chunks_checksum_is_of_its_points_whichever_form_stores_them(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str) -> None:
    from tuneplane.common.chunks import stored
    from tuneplane.common.chunks.blob import Codec
    from tuneplane.projector.checksum import checksum
    await writer.write(project(record(run_id, 1, [1.0, -0.0, float("nan")]),
                               RecordMeta(0, 1, None)))
    packed = await checksum(db, run_id)
    row = await db.fetchrow(f"SELECT c.series_id, {stored.SELECTED} FROM curve_chunks c "
                            "JOIN series s USING (series_id) WHERE s.run_id = $1", run_id)
    assert row is not None
    assert row["packed"] is not None  # the writer packs
    points = stored.points_of(row, Codec())
    await db.execute("""UPDATE curve_chunks SET packed = NULL, steps = $2, wall_times = $3,
                        "values" = $4 WHERE series_id = $1""", row["series_id"],
                     points.steps.tolist(), points.wall_times.tolist(), points.values.tolist())
    assert await checksum(db, run_id) == packed  # as arrays, the chunk sums the same
    await db.execute("""UPDATE curve_chunks SET "values"[2] = 0.0 WHERE series_id = $1""",
                     row["series_id"])
    assert (await checksum(db, run_id))["curves"] != packed["curves"]  # -0.0 is not 0.0


async def test_member_summaries_add_each_batch_once(writer: PostgresWriter,
                                                    db: asyncpg.Connection,
                                                    run_id: str) -> None:
    from tests.support.truth import member_batch
    from tuneplane.telemetry.v1.identity import MemberKey
    batches = [member_batch(MemberKey(run_id, attempt, member), sequence, 10)
               for attempt, member, sequence in [(1, "rank-0", 1), (1, "rank-0", 2),
                                                 (1, "rank-1", 1), (2, "rank-0", 1)]]
    group = [project(b.SerializeToString(), RecordMeta(0, i, None))
             for i, b in enumerate(batches)]
    assert await writer.write_group(group) == [True] * 4
    assert await writer.write_group(group[:2]) == [False, False]  # resent: no effect
    summaries = await db.fetch(
        "SELECT attempt, member, points, batches, first_batch_at <= last_batch_at AS ordered "
        "FROM member_summaries WHERE run_id = $1 ORDER BY attempt, member", run_id)
    assert [tuple(r) for r in summaries] == [(1, "rank-0", 20, 2, True), (1, "rank-1", 10, 1, True),
                                             (2, "rank-0", 10, 1, True)]
    ledger = await db.fetch("SELECT attempt, member, sum(points)::bigint AS points, count(*) "
                            "AS batches FROM batch_ledger WHERE run_id = $1 "
                            "GROUP BY attempt, member ORDER BY attempt, member", run_id)
    assert [tuple(r) for r in ledger] == [tuple(r)[:4] for r in summaries]


async def test_a_members_spools_are_counted_and_its_checkpoints_kept(
        writer: PostgresWriter, db: asyncpg.Connection, run_id: str) -> None:
    """Batches of two spool epochs of one member: two spools, each with its batches; each
    file's checkpoint is the later epoch's, or the highest sequence within one."""
    from tests.support.truth import member_batch
    from tuneplane.telemetry.v1 import telemetry_pb2 as pb
    from tuneplane.telemetry.v1.identity import MemberKey
    member = MemberKey(run_id, 1, "rank-0")

    def sealed(epoch: str, sequence: int, offset: int) -> pb.Batch:
        b = member_batch(member, sequence, 10)
        b.identity.spool_epoch = epoch
        b.position.CopyFrom(pb.SourcePosition(source="train", offset=offset, state="{}"))
        return b

    batches = [sealed("e1", 2, 200), sealed("e1", 1, 100), sealed("e2", 1, 250)]
    group = [project(b.SerializeToString(), RecordMeta(0, i, None))
             for i, b in enumerate(batches)]
    assert await writer.write_group(group[:2]) == [True, True]
    assert await db.fetchval("SELECT \"offset\" FROM source_checkpoints WHERE run_id = $1",
                             run_id) == 200  # not moved back by the earlier sequence
    assert await writer.write_group(group) == [False, False, True]
    spools = await db.fetch("SELECT spool_epoch, batches, points FROM member_spools "
                            "WHERE run_id = $1 ORDER BY spool_epoch", run_id)
    assert [tuple(r) for r in spools] == [("e1", 2, 20), ("e2", 1, 10)]
    checkpoint = await db.fetchrow("SELECT spool_epoch, sequence, \"offset\" FROM "
                                   "source_checkpoints WHERE run_id = $1", run_id)
    assert checkpoint is not None
    assert tuple(checkpoint) == ("e2", 1, 250)
