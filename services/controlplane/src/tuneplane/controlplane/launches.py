"""Launches: one member of one attempt, assigned to an enrolled node.

Creating launches starts the run's next attempt (freezing its mapping) in the same
transaction. A node receives its launches on heartbeats until it reports them running
(at least once; the agent ignores a launch it already handles), reports how each ends,
and the attempt ends when its last launch does: finished when all finished, else failed.
A launch the node has taken but cannot start yet (every run-as user busy) is reported
waiting: it stays delivered, its detail says why, until it is reported running.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.controlplane import runs
from tuneplane.controlplane.errors import InvalidLaunch, LaunchEnded, LaunchNotAssigned
from tuneplane.telemetry.v1.identity import MemberKey

ENDED = ("finished", "failed", "refused")
WAITING = "waiting"  # not a state of its own: the launch stays delivered, with the reason
STATES = ("running", WAITING, *ENDED)


def owners(artifact: dict[str, Any]) -> set[str]:
    declared = [*artifact.get("sources", []), *artifact.get("channels", [])]
    return {str(entry["owner"]) for entry in declared}


async def create(conn: Connection, run_id: str, node_name: str, members: list[str],
                 command: list[str], environment: dict[str, str]) -> tuple[int, list[int]]:
    """Start the run's next attempt with one launch per member on the node."""
    if not command:
        raise InvalidLaunch("a launch needs a command to run")
    if not members or len(set(members)) != len(members):
        raise InvalidLaunch("name each member once")
    async with conn.transaction():
        node = await conn.fetchrow("SELECT node_id, revoked_at, projects FROM nodes "
                                   "WHERE name = $1", node_name)
        if node is None or node["revoked_at"] is not None:
            raise InvalidLaunch(f"no enrolled node {node_name!r}")
        run = await conn.fetchrow("SELECT artifact::text AS document, project FROM runs "
                                  "WHERE run_id = $1", run_id)
        if run is None:
            raise InvalidLaunch(f"no run {run_id!r}")
        document, project = run["document"], run["project"]
        scope = node["projects"]
        if scope is not None and project not in scope:  # naming no other project: the
            # caller need hold no role in the ones the node takes
            raise InvalidLaunch(f"node {node_name!r} does not take launches of project "
                                f"{project!r} (run {run_id!r}'s)")
        unowned = sorted(set(members) - owners(json.loads(document)))
        if unowned:
            raise InvalidLaunch(f"member(s) {', '.join(unowned)} own no source or channel in run "
                              f"{run_id}'s integration artifact")
        attempt = await runs.start_attempt(conn, run_id)
        ids = [int(await conn.fetchval(
            "INSERT INTO launches (run_id, attempt, member, node_id, command, environment) "
            "VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb) RETURNING launch_id", run_id,
            attempt, member, node["node_id"], json.dumps(command), json.dumps(environment)))
            for member in members]
    return attempt, ids


@dataclass(frozen=True, slots=True)
class Assignment:
    launch_id: int
    member: MemberKey
    command: list[str]
    environment: dict[str, str]
    artifact: str  # the run's integration artifact, JSON
    project: str


def assignments(rows: Iterable[asyncpg.Record]) -> list[Assignment]:
    """Delivered launch rows (launch_id, run_id, attempt, member, command, environment,
    artifact, project) as assignments, oldest launch first."""
    return [Assignment(r["launch_id"], MemberKey(r["run_id"], r["attempt"], r["member"]),
                       json.loads(r["command"]), json.loads(r["environment"]), r["artifact"],
                       r["project"])
            for r in sorted(rows, key=lambda r: int(r["launch_id"]))]


async def member_of(conn: Connection, node_id: str, launch_id: int) -> MemberKey:
    """The member a live launch of this node runs as (what a workload token binds)."""
    row = await conn.fetchrow("SELECT run_id, attempt, member, node_id, state FROM launches "
                              "WHERE launch_id = $1", launch_id)
    if row is None or row["node_id"] != node_id:
        raise LaunchNotAssigned(f"launch {launch_id} is not assigned to this node")
    if row["state"] in ENDED:
        raise LaunchEnded(f"launch {launch_id} has ended ({row['state']}); no new tokens")
    return MemberKey(row["run_id"], row["attempt"], row["member"])


#: How long after a launch ended its left batches may still be delivered (the longest a
#: delivery token stands): past it, an admin's credential is the only way.
DELIVERY_WINDOW = dt.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class Tree:
    """The batches a deliver-only credential covers: a spool epoch and its tree's root."""

    epoch: str
    root: bytes
    batches: int

    def pinned(self) -> str:
        return json.dumps({"epoch": self.epoch, "root": self.root.hex(),
                           "batches": self.batches})


async def left_in_spool(conn: Connection, node_id: str, launch_id: int, tree: Tree,
                        now: dt.datetime) -> tuple[MemberKey, dt.datetime]:
    """The member an ended launch of this node ran as, and until when a deliver-only
    credential for ``tree`` may stand. The first asked pins the tree: every later one covers
    the same batches, never more than the launch reported left, within ``DELIVERY_WINDOW``
    of its end, and none once its spool was reported delivered."""
    async with conn.transaction():
        row = await conn.fetchrow("SELECT run_id, attempt, member, node_id, state, undelivered,"
                                  " ended_at, delivery_tree::text AS tree FROM launches WHERE "
                                  "launch_id = $1 FOR UPDATE", launch_id)
        if row is None or row["node_id"] != node_id:
            raise LaunchNotAssigned(f"launch {launch_id} is not assigned to this node")
        if row["state"] not in ENDED:
            raise LaunchEnded(f"launch {launch_id} has not ended ({row['state']}); its "
                              "collector still sends under its workload token")
        pinned = json.loads(row["tree"]) if row["tree"] else None
        if pinned is not None and pinned.get("delivered"):
            raise LaunchEnded(f"launch {launch_id}: its spool was reported delivered")
        left = int(row["undelivered"] or 0)
        if tree.batches > left:
            raise LaunchEnded(f"launch {launch_id} reported {left} batches left in its spool, "
                              f"not {tree.batches}")
        until = (row["ended_at"] or now) + DELIVERY_WINDOW
        if until <= now:
            raise LaunchEnded(f"launch {launch_id} ended more than {DELIVERY_WINDOW.days} days "
                              "ago; an admin issues a credential for what it left")
        if pinned is None:
            await conn.execute("UPDATE launches SET delivery_tree = $2::jsonb WHERE "
                               "launch_id = $1", launch_id, tree.pinned())
        elif json.loads(tree.pinned()) != pinned:
            raise LaunchEnded(f"launch {launch_id}: its credential covers the batches first "
                              f"asked for (epoch {pinned['epoch']}, {pinned['batches']} batches, "
                              f"root {pinned['root']}), not these")
    return MemberKey(row["run_id"], row["attempt"], row["member"]), until


async def report(conn: Connection, node_id: str, launch_id: int, state: str, *,
                 exit_code: int | None, detail: str, undelivered: int,
                 now: dt.datetime) -> str:
    """Record the launch's new state; returns its attempt's state afterwards."""
    if state not in STATES:
        raise InvalidLaunch(f"a launch reports one of {', '.join(STATES)}, not {state!r}")
    if undelivered < 0:
        raise InvalidLaunch(f"a launch reports how many batches it left, not {undelivered}")
    async with conn.transaction():
        owner = await conn.fetchrow("SELECT run_id, attempt FROM launches WHERE launch_id = $1",
                                    launch_id)
        if owner is not None:  # the attempt first: its launches' reports take turns
            await conn.execute("SELECT 1 FROM attempts WHERE run_id = $1 AND attempt = $2 "
                               "FOR UPDATE", owner["run_id"], owner["attempt"])
        row = await conn.fetchrow("SELECT run_id, attempt, node_id, state FROM launches "
                                  "WHERE launch_id = $1 FOR UPDATE", launch_id)
        if row is None or row["node_id"] != node_id:
            raise LaunchNotAssigned(f"launch {launch_id} is not assigned to this node")
        if row["state"] in ENDED and row["state"] != state:
            raise LaunchEnded(f"launch {launch_id} already ended as {row['state']}")
        if state == WAITING:
            await conn.execute("UPDATE launches SET detail = $2 WHERE launch_id = $1 AND "
                               "state IN ('pending', 'delivered')", launch_id, detail[:4000])
        elif row["state"] in ENDED:  # reported again once delivered: what is left shrinks
            await conn.execute(
                "UPDATE launches SET undelivered = $2, detail = left(detail || CASE WHEN "
                "detail = '' THEN '' ELSE '; ' END || $3, 4000), delivery_tree = delivery_tree"
                " || '{\"delivered\": true}' WHERE launch_id = $1 AND undelivered > $2 AND "
                "delivery_tree IS NOT NULL AND NOT delivery_tree ? 'delivered'",
                launch_id, undelivered, detail)
        else:
            await conn.execute(
                "UPDATE launches SET state = $2, exit_code = $3, detail = $4, undelivered = $5,"
                " ended_at = CASE WHEN $2 = ANY($6::text[]) THEN $7::timestamptz END "
                "WHERE launch_id = $1",
                launch_id, state, exit_code, detail[:4000], undelivered, list(ENDED), now)
        run_id, attempt = row["run_id"], row["attempt"]
        states = [r["state"] for r in await conn.fetch(
            "SELECT state FROM launches WHERE run_id = $1 AND attempt = $2", run_id, attempt)]
        attempt_state: str = await conn.fetchval(
            "SELECT state FROM attempts WHERE run_id = $1 AND attempt = $2", run_id, attempt)
        if attempt_state == "running" and all(s in ENDED for s in states):
            attempt_state = "finished" if all(s == "finished" for s in states) else "failed"
            await runs.end_attempt(conn, run_id, attempt, attempt_state)
    return attempt_state


async def listing(conn: Connection, run_id: str | None = None) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT 'node' AS backend, l.launch_id, l.run_id, l.attempt, l.member, "
        "n.name AS node, l.state, l.exit_code, l.detail, l.undelivered "
        "FROM launches l JOIN nodes n USING (node_id) "
        "WHERE $1::text IS NULL OR l.run_id = $1 ORDER BY l.launch_id", run_id)
    return [dict(r) for r in rows]
