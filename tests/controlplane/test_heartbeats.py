"""A heartbeat in one statement: launches are delivered only to a node that stands, and
the node's refusal reads as the separate credential check's would."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg

from tests.support.control import new_run
from tests.support.environment import Endpoints
from tuneplane.controlplane import heartbeats, launches, nodes

T0 = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)


async def enrolled(db: asyncpg.Connection, name: str, at: dt.datetime) -> str:
    token = await nodes.new_enrollment_token(db, name, created_by="test", now=at,
                                             ttl=dt.timedelta(minutes=5))
    return (await nodes.enroll(db, token, "host", now=at)).node_id


async def pending(db: asyncpg.Connection, ids: list[int]) -> list[str]:
    rows = await db.fetch("SELECT state FROM launches WHERE launch_id = ANY($1::bigint[]) "
                          "ORDER BY launch_id", ids)
    return [r["state"] for r in rows]


async def test_a_standing_node_gets_its_launches_and_is_seen(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    name = f"beat-{uuid.uuid4().hex[:8]}"
    node_id = await enrolled(db, name, T0)
    await new_run(db, run_id)
    _, ids = await launches.create(db, run_id, name, ["rank-0", "rank-1"], ["train"], {})
    beat = await heartbeats.beat(db, node_id, int(T0.timestamp()), now=T0)
    assert beat.refused is None
    assert [a.launch_id for a in beat.launches] == ids
    assert [a.member.member for a in beat.launches] == ["rank-0", "rank-1"]
    assert await pending(db, ids) == ["delivered", "delivered"]
    assert await db.fetchval("SELECT last_seen FROM nodes WHERE node_id = $1", node_id) == T0
    quiet = await heartbeats.beat(db, node_id, int(T0.timestamp()), now=T0)
    assert [a.launch_id for a in quiet.launches] == ids  # until reported running


async def test_a_revoked_or_superseded_node_is_refused_and_handed_nothing(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    name = f"beat-{uuid.uuid4().hex[:8]}"
    node_id = await enrolled(db, name, T0)
    await new_run(db, run_id)
    _, ids = await launches.create(db, run_id, name, ["rank-0"], ["train"], {})
    old_token = int(T0.timestamp()) - 1  # issued before the node's enrollment
    beat = await heartbeats.beat(db, node_id, old_token, now=T0)
    assert beat.refused == nodes.Refusal(
        f"node token of {node_id} was replaced by a later enrollment", int(T0.timestamp()))
    assert not beat.launches
    assert await pending(db, ids) == ["pending"]
    await nodes.revoke(db, name, now=T0)
    beat = await heartbeats.beat(db, node_id, int(T0.timestamp()), now=T0)
    assert beat.refused == nodes.Refusal(f"node {node_id} was revoked", int(T0.timestamp()))
    assert not beat.launches
    assert await pending(db, ids) == ["pending"]
    absent = await heartbeats.beat(db, "node-absent", int(T0.timestamp()), now=T0)
    assert absent.refused == nodes.Refusal("node node-absent is not enrolled", None)
