"""Disk used by Kafka, PostgreSQL and the object store for N points, before and after
retention removes half of them.

    uv run python bench/storage.py [--runs 20] [--batches 50] [--points 10000]

Half the runs belong to a project that keeps runs a day after they end, their attempts
ended two days ago; the other half to one that keeps them. Every batch carries one image
(16 KiB, its own content). The batches go on the topic and a projector projects them;
then ``retention.apply`` deletes the due half (undo window 0) and ``purge`` removes their
rows and objects. Measured each time, as what this load added to what was there:

- Kafka: the bytes of the batches topic's partition directories on disk;
- PostgreSQL: the read-model tables' total relation size, each time after ``VACUUM FULL``
  of those tables (what an operator's ``VACUUM FULL`` or ``pg_repack`` returns), and right
  after the purge as it is (deleted rows' space is reused by later writes, not returned);
- objects: the bytes of the runs' rich-record objects in the store.

Needs the real services (``eval "$(scripts/services up)"``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
import tempfile
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.stack.common import DATA
from tests.support.environment import Endpoints, run_admin
from tests.support.kafka import produce
from tests.support.processes import start_projector
from tests.support.truth import member_batch
from tuneplane.common.objectstore import s3_client
from tuneplane.controlplane import projects, retention, runs
from tuneplane.projector.purge import purge
from tuneplane.projector.rebuild import TABLES
from tuneplane.projector.writer import S3ObjectStore
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}
MIB = 1 << 20


def kafka_bytes() -> int:
    logs = DATA / "kafka" / "logs"
    return sum(f.stat().st_size for d in logs.glob("tuneplane.telemetry.batches.v1-*")
               for f in d.iterdir() if f.is_file())


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
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    tag = uuid.uuid4().hex[:6]
    db = await asyncpg.connect(endpoints.database_url)
    client = s3_client(endpoints.s3_endpoint)
    worker = start_projector(endpoints, Path(tempfile.mkdtemp()) / "projector.log")
    try:
        half = args.runs // 2
        due = await made_runs(db, f"bench-due-{tag}", half, ended_ago=dt.timedelta(days=2))
        kept = await made_runs(db, f"bench-kept-{tag}", args.runs - half,
                               ended_ago=dt.timedelta(days=2))
        await retention.keep_runs(db, f"bench-due-{tag}", 1)
        base = (kafka_bytes(), await compacted(db))
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
        total = args.runs * args.batches
        while await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = ANY($1)",
                                due + kept) < total:
            await asyncio.sleep(0.5)
        keys = {r["object_key"] for r in await db.fetch(
            "SELECT object_key FROM rich_records WHERE run_id = ANY($1)", due + kept)}
        before = (kafka_bytes() - base[0], await compacted(db) - base[1],
                  object_bytes(client, endpoints.s3_bucket, keys))
        applied = await retention.apply(db, dt.datetime.now(dt.UTC), undo_seconds=0)
        purged = await purge(db, S3ObjectStore(client, endpoints.s3_bucket))
        after = (kafka_bytes() - base[0], await postgres_bytes(db) - base[1],
                 object_bytes(client, endpoints.s3_bucket, keys))
        vacuumed = await compacted(db) - base[1]
        points = total * args.points
        print(f"{points:,} points in {total:,} batches of {args.runs} runs, one 16 KiB image "
              f"a batch; retention deleted {applied.runs} runs, the purge "
              f"{purged.rows:,} rows and {purged.objects_deleted:,} objects")
        print(f"{'':12}{'before':>12}{'after':>12}")
        for name, b, a in (("Kafka", before[0], after[0]), ("PostgreSQL", before[1], after[1]),
                           ("objects", before[2], after[2])):
            print(f"{name:12}{b / MIB:>10.1f} MiB{a / MIB:>8.1f} MiB")
        print(f"PostgreSQL after VACUUM FULL of the read-model tables: {vacuumed / MIB:.1f} "
              "MiB (each figure is what this load added, measured compacted, except 'after')")
    finally:
        worker.stop()
        await db.close()


if __name__ == "__main__":
    asyncio.run(main())
