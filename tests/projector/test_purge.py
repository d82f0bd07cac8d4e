"""Deleting a run on the real topic, PostgreSQL and object store: once its undo window ends,
``tuneplane-projector purge`` removes its read-model rows and the objects only it held; a
batch of it arriving later, a replay of the whole topic and a rebuild bring nothing of it
back, and the run kept beside it reads back identical (checksum before and after)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import botocore.exceptions
import pytest

from tests.projector.test_stream import ledger, projector_command, wait_ledger
from tests.support.environment import Endpoints
from tests.support.kafka import produce, projected_to_end
from tests.support.processes import Process
from tests.support.truth import member_batch
from tuneplane.common.objectstore import s3_client
from tuneplane.controlplane import deletions
from tuneplane.projector.checksum import checksum
from tuneplane.projector.purge import BY_RUN
from tuneplane.projector.rebuild import TABLES
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey


def with_image(batch: pb.Batch, payload: bytes) -> pb.Batch:
    batch.rich.add(source="tb", tag="img", step=1, wall_time=1.0, payload=payload,
                   kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=0)
    return batch


async def rows_of(db: asyncpg.Connection, run_id: str) -> dict[str, int]:
    """The run's rows in every read-model table (curve chunks and series summaries through
    their series)."""
    by_series = ("curve_chunks", "series_stats")
    found = {table: int(await db.fetchval(f"SELECT count(*) FROM {table} WHERE run_id = $1",
                                          run_id))
             for table in TABLES if table not in by_series}
    for table in by_series:
        found[table] = int(await db.fetchval(
            f"SELECT count(*) FROM {table} c JOIN series s USING (series_id) WHERE "
            "s.run_id = $1", run_id))
    return found


def stored(client: Any, bucket: str, key: str) -> bool:
    try:
        client.head_object(Bucket=bucket, Key=key)
    except botocore.exceptions.ClientError as exc:
        assert exc.response["Error"]["Code"] in ("404", "NoSuchKey"), exc
        return False
    return True


@pytest.mark.timeout(900)
async def test_a_purged_run_stays_gone_through_late_batches_replay_and_rebuild(
        initialised: Endpoints, projector: Process, db: asyncpg.Connection) -> None:
    prefix = f"purge-{uuid.uuid4().hex[:8]}"
    keep, gone = f"{prefix}-keep", f"{prefix}-gone"
    shared, own = f"PNG shared {prefix}".encode(), f"PNG own {prefix}".encode()
    batches = [member_batch(MemberKey(run, 1, f"rank-{m}"), seq, 200)
               for run in (keep, gone) for m in (0, 1) for seq in range(1, 4)]
    with_image(batches[0], shared)  # keep's
    with_image(batches[6], shared)  # gone's: the same content, one object
    with_image(batches[7], own)
    for index in (1, 8):  # a restart marker and a setting each
        batches[index].session_starts.add(source="tb", file="f", offset=0, step=0)
        batches[index].config.add(source="train", key="optimizer.lr", number=0.01,
                                  wall_time=1.7e9, origin=pb.ConfigEntry.ORIGIN_JSONL)
    await produce(initialised.kafka_bootstrap, batches)
    for run in (keep, gone):
        assert await wait_ledger(db, run, 6) == (6, 1200)
    keys = {r["object_key"] for r in await db.fetch(
        "SELECT object_key FROM rich_records WHERE run_id = $1", gone)}
    shared_key = await db.fetchval("SELECT object_key FROM rich_records WHERE run_id = $1",
                                   keep)
    (own_key,) = keys - {shared_key}
    before = await checksum(db, keep)
    assert "empty" not in before.values()
    client = s3_client(initialised.s3_endpoint)
    assert stored(client, initialised.s3_bucket, own_key)

    await db.execute("INSERT INTO attempt_logs (run_id, attempt, member, id, line_no, at, "
                     "level, message) VALUES ($1, 1, 'rank-0', 'x', 1, 0, 'info', 'a line')",
                     gone)
    await deletions.record(db, gone, "default", by="owner", undo_seconds=0)
    assert (await rows_of(db, gone))["batch_ledger"] == 6  # kept until the purge
    # (Other tests' deletions may be purged by the same command: only this run's are read.)
    purged = projector_command("purge")
    assert isinstance(purged["deletions"], int)
    assert purged["deletions"] >= 1
    assert set((await rows_of(db, gone)).values()) == {0}, await rows_of(db, gone)
    assert await db.fetchval("SELECT count(*) FROM attempt_logs WHERE run_id = $1", gone) == 0
    assert not stored(client, initialised.s3_bucket, own_key)
    assert stored(client, initialised.s3_bucket, shared_key)  # keep's still
    ended = await db.fetchval("SELECT purged_at FROM deletions WHERE run_id = $1", gone)
    assert ended is not None
    projector_command("purge")  # done is done
    assert await db.fetchval("SELECT purged_at FROM deletions WHERE run_id = $1", gone) == ended

    # A batch of it arriving later, past the barrier: not stored.
    await produce(initialised.kafka_bootstrap, [
        with_image(member_batch(MemberKey(gone, 1, "rank-0"), 9, 200), own)])
    await projected_to_end(initialised.kafka_bootstrap)
    assert set((await rows_of(db, gone)).values()) == {0}
    replayed = projector_command("replay", "--from-offset", "0")
    assert isinstance(replayed["records"], int)
    assert replayed["records"] >= len(batches) + 1
    rebuilt = projector_command("rebuild")
    assert rebuilt["swapped"] is True
    assert set((await rows_of(db, gone)).values()) == {0}
    assert not stored(client, initialised.s3_bucket, own_key)  # never put again
    assert await checksum(db, keep) == before
    assert await ledger(db, keep) == (6, 1200)
    who = await db.fetchrow("SELECT deleted_by, purge_started_at IS NOT NULL AS started, "
                            "purged_at IS NOT NULL AS purged FROM deletions WHERE run_id = $1",
                            gone)
    assert who is not None
    assert tuple(who) == ("owner", True, True)  # the audit: who, and what became of it
    assert set(BY_RUN) < set(TABLES)
