"""A redrive projects the dead-letter topic's batches after a fix: each batch once, however
often it is run; what is still poison stays where it is."""

from __future__ import annotations

import json
import subprocess

import asyncpg

from tests.support.environment import BIN, Endpoints
from tests.support.kafka import produce_payloads
from tests.support.readmodels import wait_for_points
from tests.support.truth import member_batch
from tuneplane.common.kafka import topics
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey


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
    await produce_payloads(initialised.kafka_bootstrap, [  # as a since-fixed bug dead-lettered
        (BatchKey.from_proto(batch.identity), batch.SerializeToString()),
        (BatchKey(member, "e", 2), b"\x08\xff\xff still poison")], topic=topics.BATCHES_DLQ)
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
