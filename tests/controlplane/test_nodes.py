"""A node's credential check: refusals, and ``last_seen`` written at most once a grain, so
a flood of node calls writes (and flushes WAL) about once per node per grain."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg

from tests.support.environment import Endpoints
from tuneplane.controlplane import nodes


async def test_last_seen_moves_once_a_grain_and_revocation_is_seen_at_once(
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    t0 = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
    name = f"seen-{uuid.uuid4().hex[:8]}"
    token = await nodes.new_enrollment_token(db, name, created_by="test", now=t0,
                                             ttl=dt.timedelta(minutes=5))
    node = await nodes.enroll(db, token, "host", now=t0)
    issued = int(t0.timestamp())

    async def seen_after(seconds: float) -> dt.datetime:
        assert await nodes.check_credential(db, node.node_id, issued,
                                            now=t0 + dt.timedelta(seconds=seconds)) is None
        seen: dt.datetime = await db.fetchval("SELECT last_seen FROM nodes WHERE node_id = $1",
                                              node.node_id)
        return seen

    assert await seen_after(1) == t0 + dt.timedelta(seconds=1)
    assert await seen_after(5) == t0 + dt.timedelta(seconds=1)  # within the grain: no write
    assert await seen_after(11) == t0 + dt.timedelta(seconds=11)
    await nodes.revoke(db, name, now=t0 + dt.timedelta(seconds=12))
    assert await nodes.check_credential(db, node.node_id, issued, now=t0 + dt.timedelta(
        seconds=13)) == nodes.Refusal(f"node {node.node_id} was revoked", issued)
    assert await nodes.check_credential(db, "node-absent", issued, now=t0) == \
        nodes.Refusal("node node-absent is not enrolled", None)
