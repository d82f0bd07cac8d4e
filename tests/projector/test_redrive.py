"""A redrive projects the dead-letter topic's batches after a fix: each batch once, however
often it is run; what is still poison stays where it is."""

from __future__ import annotations

import json
import subprocess

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer

from tests.support.environment import BIN, Endpoints
from tests.support.readmodels import wait_for_points
from tests.support.truth import member_batch
from tuneplane.common.kafka import topics
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

pytestmark = pytest.mark.services


def redrive() -> dict[str, int]:
    done = subprocess.run([str(BIN / "tuneplane-projector"), "redrive"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


async def test_a_dead_lettered_batch_is_redriven_exactly_once(
        initialised: Endpoints, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    batch = member_batch(member, 1, 50)
    producer = AIOKafkaProducer(bootstrap_servers=initialised.kafka_bootstrap, acks="all")
    await producer.start()
    try:  # as a projector with a since-fixed bug would have dead-lettered it
        await producer.send_and_wait(
            topics.BATCHES_DLQ, batch.SerializeToString(),
            key=BatchKey.from_proto(batch.identity).kafka_key(), partition=0,
            headers=[("reason", b"a bug since fixed")])
        await producer.send_and_wait(topics.BATCHES_DLQ, b"\x08\xff\xff still poison",
                                     key=f"{run_id}/1/rank-0/e-2".encode(), partition=0)
    finally:
        await producer.stop()
    first = redrive()
    assert first["applied"] >= 1
    assert first["poison"] >= 1  # stepped over, still in the DLQ
    assert await wait_for_points(db, run_id, 50, timeout=5) == 50
    second = redrive()
    assert second["applied"] == 0
    assert second["duplicates"] >= 1
    assert await wait_for_points(db, run_id, 51, timeout=1) == 50
    ledger = await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1", run_id)
    assert ledger == 1
