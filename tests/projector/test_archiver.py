"""The topic's archive on the real Kafka, PostgreSQL and object store, on a topic of the
test's own (the shared batches topic is never trimmed): what a topic holds goes to Parquet
segments, a second pass adds nothing, a trim moves each partition's log start to the
archived end (never past a group that has not consumed, nor past a gap in the archive), a
replay from offset 0 then reads the archive below the log start: every batch once; no two
archive passes or trims run at once; and a purge rewrites the segments holding a deleted
run (or attempt) without it, waits when a replay holds the archive, and no later archive
pass takes it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition

from tests.projector.test_purge import stored
from tests.projector.test_stream import ledger, point_counts
from tests.support.environment import Endpoints
from tests.support.kafka import produce_payloads
from tests.support.truth import member_batch
from tuneplane.common.kafka.adapter import StartAt
from tuneplane.common.objectstore import s3_client
from tuneplane.controlplane import deletions
from tuneplane.projector import archive as segments
from tuneplane.projector import archive_prune
from tuneplane.projector.archiver import (
    ARCHIVE_LOCK,
    TRIM_LOCK,
    ArchiveBusy,
    ArchiveReader,
    archive,
    archived_ends,
)
from tuneplane.projector.projection import object_key
from tuneplane.projector.purge import purge
from tuneplane.projector.replay import replay
from tuneplane.projector.trim import trim
from tuneplane.projector.writer import PostgresWriter, S3ObjectStore
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey


@pytest.fixture
async def topic(initialised: Endpoints) -> AsyncIterator[str]:
    name = f"tuneplane.test.archive-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=initialised.kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])
        yield name
        await admin.delete_topics([name])
    finally:
        await admin.close()


async def offsets(bootstrap: str, topic: str) -> tuple[dict[int, int], dict[int, int]]:
    """Each partition's log start and end."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in (0, 1)]
        start, end = await consumer.beginning_offsets(parts), await consumer.end_offsets(parts)
        return ({tp.partition: o for tp, o in start.items()},
                {tp.partition: o for tp, o in end.items()})
    finally:
        await consumer.stop()


async def put(bootstrap: str, topic: str, batches: list[pb.Batch]) -> None:
    await produce_payloads(bootstrap, [(BatchKey.from_proto(b.identity),
                                        b.SerializeToString()) for b in batches], topic=topic)


def test_a_segment_keeps_each_record_as_it_was_with_its_batch_identity() -> None:
    from tuneplane.common.kafka.message import Message
    records = [Message(1, 7, b"run-a/2/rank-0/e-1", b"\x01batch", 1700000000000, late=True),
               Message(1, 8, b"not a key", b"poison", 0)]
    assert segments.decode(segments.encode(records)) == records
    assert segments.identity(b"run-a/2/rank-0/e-1") == ("run-a", 2, "rank-0", "e-1")
    assert segments.segment_key("t", 1, 7, 8) == \
        "archive/t/p0001/00000000000000000007-00000000000000000008.parquet"


async def test_a_trimmed_topic_replays_from_its_archive_every_batch_once(
        initialised: Endpoints, db: asyncpg.Connection, topic: str) -> None:
    bootstrap = initialised.kafka_bootstrap
    objects = S3ObjectStore(s3_client(initialised.s3_endpoint), initialised.s3_bucket)
    run_id = f"archive-{uuid.uuid4().hex[:8]}"
    members = [MemberKey(run_id, 1, f"rank-{m}") for m in (0, 1)]
    first = [member_batch(member, seq, 500) for member in members for seq in range(1, 7)]
    first[0].rich.add(source="tb", tag="img", step=1, wall_time=1.0, payload=b"PNG archived",
                      kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=0)
    await put(bootstrap, topic, first)
    done = await archive(bootstrap, db, objects, topic=topic)
    filled = [p for p, end in (await offsets(bootstrap, topic))[1].items() if end]
    assert (done.records, done.segments) == (12, len(filled))  # one a partition written to
    assert (await archive(bootstrap, db, objects, topic=topic)).records == 0
    later = [member_batch(member, seq, 500) for member in members for seq in (7, 8)]
    await put(bootstrap, topic, later)
    assert (await archive(bootstrap, db, objects, topic=topic)).records == 4

    # A group that has consumed nothing holds the log start where it is.
    assert await trim(bootstrap, db, topic=topic,
                      keep_groups=[f"never-{uuid.uuid4().hex[:6]}"]) == {}
    assert (await offsets(bootstrap, topic))[0] == {0: 0, 1: 0}
    # One that starts at the end when it first consumes (the exporter's) holds nothing back
    # until it has committed.
    moved = await trim(bootstrap, db, topic=topic, keep_groups=[],
                       if_consumed=[f"exporter-{uuid.uuid4().hex[:6]}"])
    starts, ends = await offsets(bootstrap, topic)
    assert starts == ends  # Kafka holds none of them now
    assert moved == {p: ends[p] for p in filled}
    assert sum(ends.values()) == 16

    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        writer = PostgresWriter(pool, objects)
        report: Any
        report, _ = await replay(bootstrap, writer, StartAt(offset=0), topic=topic,
                                 archived=ArchiveReader(db, objects, topic))
        assert (report.records, report.applied) == (16, 16)
        assert await ledger(db, run_id) == (16, 16 * 500)
        assert await point_counts(db, run_id) == (16 * 500, 16 * 500)  # each once
        again, _ = await replay(bootstrap, writer, StartAt(offset=0), topic=topic,
                                archived=ArchiveReader(db, objects, topic))
        assert (again.records, again.applied) == (16, 0)
    finally:
        await pool.close()
    assert await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1", run_id) == 1


async def test_archivers_never_race_and_a_gap_ends_the_archived_prefix(
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    topic = f"tuneplane.test.gap-{uuid.uuid4().hex[:8]}"
    for first, last in ((0, 9), (10, 19), (30, 39)):  # 20..29 missing
        await db.execute("INSERT INTO topic_archive (topic, partition, first_offset, "
                         "last_offset, object_key, records, bytes, runs) VALUES ($1, 0, $2, "
                         "$3, 'k', 1, 1, '{}')", topic, first, last)  # no run: no purge reads it
    # Nothing past the gap counts: archiving resumes at 20, trimming stops there.
    assert await archived_ends(db, topic) == {0: 20}
    other = await asyncpg.connect(initialised.database_url)
    try:
        await other.execute("SELECT pg_advisory_lock($1)", ARCHIVE_LOCK)  # a pass under way
        objects = S3ObjectStore(s3_client(initialised.s3_endpoint), initialised.s3_bucket)
        with pytest.raises(ArchiveBusy, match="try again"):
            await archive(initialised.kafka_bootstrap, db, objects, topic=topic)
        with pytest.raises(ArchiveBusy):
            await trim(initialised.kafka_bootstrap, db, topic=topic, keep_groups=[])
    finally:
        await other.close()


async def archived_runs(db: asyncpg.Connection, objects: S3ObjectStore,
                        topic: str) -> tuple[dict[str, int], set[str]]:
    """The records of each run the topic's archive holds (read from its segments), and the
    runs its rows name."""
    held: dict[str, int] = {}
    named: set[str] = set()
    for row in await db.fetch("SELECT object_key, runs FROM topic_archive WHERE topic = $1",
                              topic):
        named.update(row["runs"])
        for m in segments.decode(objects.get(row["object_key"])):
            run = segments.identity(m.key)[0]
            held[run] = held.get(run, 0) + 1
    return held, named


async def test_a_purge_prunes_the_archive_and_no_later_archive_takes_the_deleted_run(
        initialised: Endpoints, db: asyncpg.Connection, topic: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive_prune, "LOCK_WAIT", "1s")  # a replay's hold outlasts it
    bootstrap = initialised.kafka_bootstrap
    objects = S3ObjectStore(s3_client(initialised.s3_endpoint), initialised.s3_bucket)
    prefix = f"prune-{uuid.uuid4().hex[:8]}"
    keep, gone = f"{prefix}-keep", f"{prefix}-gone"
    await put(bootstrap, topic, [member_batch(MemberKey(run, attempt, "rank-0"), seq, 100)
                                 for run in (keep, gone) for attempt in (1, 2)
                                 for seq in range(1, 4)])
    await archive(bootstrap, db, objects, topic=topic)
    await trim(bootstrap, db, topic=topic, keep_groups=[])
    assert await archived_runs(db, objects, topic) == ({keep: 6, gone: 6}, {keep, gone})
    old = {r["object_key"] for r in await db.fetch(  # those holding the run to delete
        "SELECT object_key FROM topic_archive WHERE topic = $1 AND $2 = ANY(runs)", topic, gone)}
    assert old

    await db.execute("INSERT INTO runs (run_id, artifact, created_by, project) VALUES "
                     "($1, '{}', 'test', 'default')", gone)
    await db.execute("INSERT INTO attempts (run_id, attempt, state, ended_at) VALUES "
                     "($1, 1, 'finished', now()), ($1, 2, 'finished', now())", gone)
    await db.execute("INSERT INTO slurm_launches (run_id, attempt, nodes, tasks_per_node, "
                     "command, environment, spool_root, state) VALUES ($1, 1, 1, 1, "
                     "'[\"train\"]', '{\"SECRET\": \"s\"}', '/spool', 'ended'), ($1, 2, 1, 1, "
                     "'[\"train\"]', '{\"SECRET\": \"s\"}', '/spool', 'ended')", gone)
    node = f"node-{prefix}"
    await db.execute("INSERT INTO nodes (node_id, name) VALUES ($1, $1)", node)
    await db.execute("INSERT INTO launches (run_id, attempt, member, node_id, command, "
                     "environment, state) SELECT $1, a, 'rank-0', $2, '[\"train\"]', "
                     "'{\"SECRET\": \"s\"}', 'finished' FROM unnest('{1,2}'::int[]) a",
                     gone, node)
    # What a rewrite that died between its put and its commit left behind: swept with the
    # segment's next rewrite.
    stray = f"{sorted(old)[0].removesuffix('.parquet')}.d0.parquet"
    objects.put(stray, b"a rewrite that never committed")
    # An attempt deleted alone: only its batches leave the archive, and its node launch
    # forgets what it ran (a Slurm launch spans attempts: only the whole run's deletion).
    await deletions.record(db, gone, "default", by="owner", undo_seconds=0, attempt=2)
    done = await purge(db, objects)
    assert not done.archive.busy
    assert done.archive.records_removed == 3
    assert await archived_runs(db, objects, topic) == ({keep: 6, gone: 3}, {keep, gone})
    assert done.launches_forgotten == 1
    assert [tuple(r) for r in await db.fetch(
        "SELECT attempt, command::text, environment::text, state FROM launches WHERE "
        "run_id = $1 ORDER BY attempt", gone)] == [
            (1, '["train"]', '{"SECRET": "s"}', "finished"), (2, "[]", "{}", "finished")]
    assert await db.fetchval("SELECT count(*) FROM slurm_launches WHERE run_id = $1 AND "
                             "environment = '{}'", gone) == 0
    # Then the whole run; meanwhile a replay holds the archive: the prune waits for a later
    # purge, and the deletion is purged all the same.
    await deletions.record(db, gone, "default", by="owner", undo_seconds=0)
    other = await asyncpg.connect(initialised.database_url)
    try:
        await other.execute("SELECT pg_advisory_lock_shared($1)", TRIM_LOCK)
        held = await purge(db, objects)
        assert held.archive.busy
        assert held.deletions >= 1
    finally:
        await other.close()
    assert (await archived_runs(db, objects, topic))[0][gone] == 3
    assert (await purge(db, objects)).archive.records_removed == 3
    assert await archived_runs(db, objects, topic) == ({keep: 6}, {keep})
    for table in ("launches", "slurm_launches"):
        assert await db.fetchval(f"SELECT count(*) FROM {table} WHERE run_id = $1 AND "
                                 "environment = '{}'", gone) == 2, table
    assert not stored(s3_client(initialised.s3_endpoint), initialised.s3_bucket, stray)
    for key in old:  # the first objects of the segments rewritten are swept
        assert not stored(s3_client(initialised.s3_endpoint), initialised.s3_bucket, key)
    assert await db.fetchval("SELECT count(*) FROM deletions WHERE run_id = $1 AND "
                             "archive_pruned_at IS NULL", gone) == 0

    # A batch of it that Kafka still holds is never archived; a replay from 0 reads the
    # kept run's batches once, from the pruned archive, and none of the deleted run's.
    await put(bootstrap, topic, [member_batch(MemberKey(run, 1, "rank-0"), 9, 100)
                                 for run in (keep, gone)])
    assert (await archive(bootstrap, db, objects, topic=topic)).records == 1
    assert await archived_runs(db, objects, topic) == ({keep: 7}, {keep})
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        report: Any
        report, _ = await replay(bootstrap, PostgresWriter(pool, objects), StartAt(offset=0),
                                 topic=topic, archived=ArchiveReader(db, objects, topic))
    finally:
        await pool.close()
    assert report.records == 6 + 2  # the archived 6 of keep, then Kafka's tail of 2
    assert await ledger(db, keep) == (7, 700)
    assert await ledger(db, gone) == (0, 0)


def rich_in_archive(db_rows: list[Any], objects: S3ObjectStore) -> dict[str, int]:
    """The rich records with content the archive's batches hold, by run."""
    held: dict[str, int] = {}
    for row in db_rows:
        for m in segments.decode(objects.get(row["object_key"])):
            run = segments.identity(m.key)[0]
            held[run] = held.get(run, 0) + sum(
                1 for r in pb.Batch.FromString(m.value).rich if r.payload)
    return held


async def test_expired_rich_records_leave_the_read_model_the_store_and_the_archive(
        initialised: Endpoints, db: asyncpg.Connection, topic: str) -> None:
    """Retention's rich-record expiry, purged: the run's rich rows go and the objects only
    it referenced, its curves stay; the archive's batches of it lose their rich records; a
    replay from 0 and a later batch bring none back."""
    bootstrap = initialised.kafka_bootstrap
    objects = S3ObjectStore(s3_client(initialised.s3_endpoint), initialised.s3_bucket)
    prefix = f"expire-{uuid.uuid4().hex[:8]}"
    expired, other = f"{prefix}-expired", f"{prefix}-other"
    shared, own = f"PNG shared {prefix}".encode(), f"PNG own {prefix}".encode()
    batches = [member_batch(MemberKey(run, 1, "rank-0"), seq, 100)
               for run in (expired, other) for seq in range(1, 4)]
    for batch, payload in ((batches[0], own), (batches[1], shared), (batches[3], shared)):
        batch.rich.add(source="tb", tag="img", step=1, wall_time=1.0, payload=payload,
                       kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=0)
    del batches[0].chunks[:]  # rich records only: still a batch once they are emptied
    await put(bootstrap, topic, batches)
    pool = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    try:
        writer = PostgresWriter(pool, objects)
        await replay(bootstrap, writer, StartAt(offset=0), topic=topic)
        own_key, shared_key = object_key(own), object_key(shared)
        assert {r["object_key"] for r in await db.fetch(
            "SELECT object_key FROM rich_records WHERE run_id = $1", expired)} == {
                own_key, shared_key}
        await archive(bootstrap, db, objects, topic=topic)
        await trim(bootstrap, db, topic=topic, keep_groups=[])
        await db.execute("INSERT INTO rich_expiries (run_id, project, attempt_upto, "
                         "purge_after) VALUES ($1, 'default', 1, now())", expired)

        done = await purge(db, objects)
        assert done.rich_expiries >= 1
        assert done.archive.records_stripped == 2, done.archive  # its two batches with some
        assert await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1",
                                 expired) == 0
        assert await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1",
                                 other) == 1
        assert await ledger(db, expired) == (3, 200)  # its curves stay
        assert await point_counts(db, expired) == (200, 200)
        client = s3_client(initialised.s3_endpoint)
        assert not stored(client, initialised.s3_bucket, own_key)
        assert stored(client, initialised.s3_bucket, shared_key)  # the other's too: kept
        archived = await db.fetch("SELECT object_key FROM topic_archive WHERE topic = $1",
                                  topic)
        assert rich_in_archive(archived, objects) == {expired: 0, other: 1}

        # A later batch of it with an image, then a replay from 0 (the archive, then
        # Kafka): no rich record of it comes back, its curves are whole.
        late = member_batch(MemberKey(expired, 1, "rank-0"), 4, 100)
        late.rich.add(source="tb", tag="img", step=4, wall_time=4.0, payload=own,
                      kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=4)
        newer = member_batch(MemberKey(expired, 2, "rank-0"), 1, 100)  # an attempt after
        newer.rich.add(source="tb", tag="img", step=1, wall_time=5.0, payload=own + b" 2",
                       kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=0)
        await put(bootstrap, topic, [late, newer])
        report: Any
        report, _ = await replay(bootstrap, writer, StartAt(offset=0), topic=topic,
                                 archived=ArchiveReader(db, objects, topic))
        assert (report.records, report.poison) == (8, 0)  # the emptied batch is no poison
    finally:
        await pool.close()
    # The expiry took the attempts it had: the later attempt's image is kept.
    assert [tuple(r) for r in await db.fetch(
        "SELECT attempt, count(*) FROM rich_records WHERE run_id = $1 GROUP BY attempt",
        expired)] == [(2, 1)]
    assert not stored(s3_client(initialised.s3_endpoint), initialised.s3_bucket, own_key)
    assert await ledger(db, expired) == (5, 400)
    await archive(bootstrap, db, objects, topic=topic)  # the later batch, stripped; not 2's
    archived = await db.fetch("SELECT object_key FROM topic_archive WHERE topic = $1", topic)
    assert rich_in_archive(archived, objects) == {expired: 1, other: 1}
