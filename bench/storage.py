"""Disk used by Kafka, PostgreSQL and the object store for N points, before and after
retention removes half of them and the topic is archived and trimmed.

    uv run python bench/storage.py [--runs 20] [--batches 50] [--points 10000] [--segment-mib 8]

Half the runs belong to a project that keeps runs a day after they end, their attempts
ended two days ago; the other half to one that keeps them. Every batch carries one image
(16 KiB, its own content). The batches go on the topic and a projector projects them;
then ``retention.apply`` deletes the due half (undo window 0) and ``purge`` removes their
rows and objects. Measured each time, as what this load added to what was there:

- Kafka: the disk used by the batches topic's partition directories;
- PostgreSQL: the read-model tables' total relation size, each time after ``VACUUM FULL``
  of those tables (what an operator's ``VACUUM FULL`` or ``pg_repack`` returns), and right
  after the purge as it is (deleted rows' space is reused by later writes, not returned);
- objects: the bytes of the runs' rich-record objects in the store;
- the topic: the same batches also go on a topic of the bench's own (as many partitions,
  ``--segment-mib`` segments: Kafka frees whole segments only), archived to the store
  (``archive``) before retention runs, as the schedule would; the purge prunes the
  archive; then ``trim`` moves each partition's log start to the archived end and the
  bench waits for the broker to delete the segments below it. Its rows: the topic's
  partition directories, and its archive's Parquet segments in the store.

Needs the real services (``eval "$(scripts/services up)"``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.stack.common import DATA
from tests.support.environment import Endpoints, run_admin
from tests.support.kafka import produce, produce_payloads
from tests.support.processes import start_projector
from tests.support.truth import member_batch
from tuneplane.common.kafka import topics
from tuneplane.common.objectstore import s3_client
from tuneplane.controlplane import projects, retention, runs
from tuneplane.projector.archiver import archive
from tuneplane.projector.purge import purge
from tuneplane.projector.rebuild import TABLES
from tuneplane.projector.trim import trim
from tuneplane.projector.writer import S3ObjectStore
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}
MIB = 1 << 20


def kafka_bytes(topic: str = topics.BATCHES) -> int:
    """The disk the topic's partition directories use (blocks: a segment's index files are
    made 10 MiB long and sparse)."""
    logs = DATA / "kafka" / "logs"
    return sum(f.stat().st_blocks * 512 for d in logs.glob(f"{topic}-*") if d.is_dir()
               for f in d.iterdir() if f.is_file())


async def own_topic(bootstrap: str, name: str, segment_bytes: int) -> None:
    """A topic as the batches topic (its partitions), with segments of ``segment_bytes``."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topics.BATCHES])
        await admin.create_topics([NewTopic(
            name, num_partitions=len(described["partitions"]), replication_factor=1,
            topic_configs={"retention.ms": "-1", "segment.bytes": str(segment_bytes)})])
    finally:
        await admin.close()


async def archive_bytes(db: asyncpg.Connection, topic: str) -> int:
    return int(await db.fetchval("SELECT coalesce(sum(bytes), 0) FROM topic_archive WHERE "
                                 "topic = $1", topic))


async def trimmed(topic: str, before: int, limit: float = 900.0) -> tuple[int, float]:
    """The topic's bytes once the broker has deleted the segments below the log start (its
    retention check runs every ``log.retention.check.interval.ms``), and the wait."""
    started = time.monotonic()
    while kafka_bytes(topic) >= before and time.monotonic() - started < limit:
        await asyncio.sleep(1.0)
    await asyncio.sleep(2.0)  # the rest of the same check's deletions
    return kafka_bytes(topic), time.monotonic() - started


async def compacted(db: asyncpg.Connection) -> int:
    """The read model's size once ``VACUUM FULL`` has returned the space of dead rows."""
    for table in TABLES:
        await db.execute(f"VACUUM FULL readmodel.{table}")
    return await postgres_bytes(db)


async def postgres_bytes(db: asyncpg.Connection) -> int:
    return int(await db.fetchval(
        "SELECT sum(pg_total_relation_size(format('readmodel.%I', t)::regclass))::bigint "
        "FROM unnest($1::text[]) t", list(TABLES)))


def object_bytes(client: object, bucket: str, keys: set[str]) -> int:
    total = 0
    for key in keys:
        try:
            total += int(client.head_object(Bucket=bucket, Key=key)["ContentLength"])  # type: ignore[attr-defined]
        except Exception:
            continue
    return total


async def made_runs(db: asyncpg.Connection, project: str, count: int, *,
                    ended_ago: dt.timedelta) -> list[str]:
    await projects.create(db, project)
    made = []
    for i in range(count):
        run_id = f"{project}-{i}"
        await runs.create_run(db, ARTIFACT, created_by="bench", now=dt.datetime.now(dt.UTC),
                              run_id=run_id, project=project)
        await runs.start_attempt(db, run_id)
        await runs.end_attempt(db, run_id, 1, "finished")
        await db.execute("UPDATE attempts SET ended_at = now() - $2::interval WHERE "
                         "run_id = $1", run_id, ended_ago)
        made.append(run_id)
    return made


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batches", type=int, default=50, help="per run")
    parser.add_argument("--points", type=int, default=10_000, help="per batch")
    parser.add_argument("--segment-mib", type=int, default=8,
                        help="the bench topic's segment.bytes, in MiB (the batches topic's "
                             "are 64: Kafka frees whole segments, so a small load needs "
                             "small ones to show it)")
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    tag = uuid.uuid4().hex[:6]
    db = await asyncpg.connect(endpoints.database_url)
    client = s3_client(endpoints.s3_endpoint)
    worker = start_projector(endpoints, Path(tempfile.mkdtemp()) / "projector.log")
    bench_topic = f"tuneplane.bench.storage-{tag}"
    try:
        half = args.runs // 2
        due = await made_runs(db, f"bench-due-{tag}", half, ended_ago=dt.timedelta(days=2))
        kept = await made_runs(db, f"bench-kept-{tag}", args.runs - half,
                               ended_ago=dt.timedelta(days=2))
        await retention.keep_runs(db, f"bench-due-{tag}", 1)
        base = (kafka_bytes(), await compacted(db))
        await own_topic(endpoints.kafka_bootstrap, bench_topic, args.segment_mib * MIB)
        for run_id in due + kept:
            stream = []
            for seq in range(1, args.batches + 1):
                batch = member_batch(MemberKey(run_id, 1, "rank-0"), seq, args.points)
                batch.rich.add(source="train", tag="img", step=seq, wall_time=1.0,
                               payload=f"{run_id}/{seq}".encode().ljust(16 << 10, b"\0"),
                               kind=pb.RichRecord.KIND_IMAGE, plugin_name="images",
                               file="f", offset=seq)
                stream.append(batch)
            await produce(endpoints.kafka_bootstrap, stream)
            await produce_payloads(endpoints.kafka_bootstrap, [
                (BatchKey.from_proto(b.identity), b.SerializeToString()) for b in stream],
                topic=bench_topic)
        total = args.runs * args.batches
        while await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = ANY($1)",
                                due + kept) < total:
            await asyncio.sleep(0.5)
        keys = {r["object_key"] for r in await db.fetch(
            "SELECT object_key FROM rich_records WHERE run_id = ANY($1)", due + kept)}
        store = S3ObjectStore(client, endpoints.s3_bucket)
        archived = await archive(endpoints.kafka_bootstrap, db, store, topic=bench_topic)
        before = (kafka_bytes() - base[0], await compacted(db) - base[1],
                  object_bytes(client, endpoints.s3_bucket, keys), kafka_bytes(bench_topic),
                  await archive_bytes(db, bench_topic))
        applied = await retention.apply(db, dt.datetime.now(dt.UTC), undo_seconds=0)
        purged = await purge(db, store)
        moved = await trim(endpoints.kafka_bootstrap, db, topic=bench_topic, keep_groups=[])
        topic_after, waited = await trimmed(bench_topic, before[3])
        after = (kafka_bytes() - base[0], await postgres_bytes(db) - base[1],
                 object_bytes(client, endpoints.s3_bucket, keys), topic_after,
                 await archive_bytes(db, bench_topic))
        vacuumed = await compacted(db) - base[1]
        points = total * args.points
        print(f"{points:,} points in {total:,} batches of {args.runs} runs, one 16 KiB image "
              f"a batch; retention deleted {applied.runs} runs, the purge "
              f"{purged.rows:,} rows and {purged.objects_deleted:,} objects")
        rows = (("Kafka, the batches topic (never trimmed here)", 0),
                ("PostgreSQL", 1), ("objects", 2),
                (f"Kafka, the bench topic ({args.segment_mib} MiB segments)", 3),
                ("its archive (Parquet, in the store)", 4))
        print(f"{'':48}{'before':>12}{'after':>12}")
        for name, i in rows:
            print(f"{name:48}{before[i] / MIB:>8.1f} MiB{after[i] / MIB:>8.1f} MiB")
        print(f"PostgreSQL after VACUUM FULL of the read-model tables: {vacuumed / MIB:.1f} "
              "MiB (each figure is what this load added, measured compacted, except 'after')")
        print(f"the bench topic: {archived.records:,} records archived in "
              f"{archived.segments} segments before retention; the purge rewrote "
              f"{purged.archive.segments_rewritten} of them without "
              f"{purged.archive.records_removed:,} records; the trim moved "
              f"{len(moved)} partitions' log start, and the broker deleted the segments "
              f"below it {waited:.0f} s later (the active segment of each stays)")
    finally:
        worker.stop()
        await dropped(endpoints, db, client, bench_topic)
        await db.close()


async def dropped(endpoints: Endpoints, db: asyncpg.Connection, client: object,
                  topic: str) -> None:
    """The bench topic and its archive, gone."""
    admin = AIOKafkaAdminClient(bootstrap_servers=endpoints.kafka_bootstrap)
    await admin.start()
    try:
        if topic in await admin.list_topics():
            await admin.delete_topics([topic])
    finally:
        await admin.close()
    keys = [r["object_key"] for r in await db.fetch(
        "DELETE FROM topic_archive WHERE topic = $1 RETURNING object_key", topic)]
    if keys:
        S3ObjectStore(client, endpoints.s3_bucket).delete_many(keys)  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(main())
