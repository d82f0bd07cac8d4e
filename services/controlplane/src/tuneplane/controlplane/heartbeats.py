"""A node's heartbeat in one SQL statement: its credential checked, ``last_seen`` noted (to
``nodes.SEEN_GRAIN``), and its launches not yet reported running marked delivered.

One statement is one round trip and one pooled connection per heartbeat, where the
credential check and the delivery as two were two of each: under a flood of heartbeats
that halves what control and PostgreSQL spend on each. The launches move only when the
credential stands, so a revoked or superseded node is handed nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tuneplane.common.db import Connection
from tuneplane.controlplane import launches, nodes

# The node row comes back once per delivered launch (or once, with no launch); the
# launches move only while the token's issue time is not before the node's enrollment
# and the node is not revoked: nodes.credential_problem says the same in Python.
BEAT = f"""
WITH node AS (
    SELECT enrolled_at, revoked_at,
           revoked_at IS NULL AND $4::bigint >= floor(extract(epoch FROM enrolled_at))
               AS stands
    FROM nodes WHERE node_id = $1),
seen AS ({nodes.NOTE_SEEN}),
delivered AS (
    UPDATE launches l SET state = 'delivered', delivered_at = coalesce(delivered_at, $2)
    FROM runs r WHERE l.node_id = $1 AND l.state IN ('pending', 'delivered')
    AND r.run_id = l.run_id AND (SELECT stands FROM node)
    RETURNING l.launch_id, l.run_id, l.attempt, l.member, l.command::text AS command,
              l.environment::text AS environment, r.artifact::text AS artifact, r.project)
SELECT n.enrolled_at, n.revoked_at, d.* FROM node n LEFT JOIN delivered d ON true
"""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    refused: nodes.Refusal | None  # why the node's credential is refused (then no launches)
    launches: list[launches.Assignment]


async def beat(conn: Connection, node_id: str, issued_at: int,
               *, now: dt.datetime) -> Heartbeat:
    """Check the node's token (issued at ``issued_at``) and deliver its launches as of
    ``now``, in one statement."""
    rows = await conn.fetch(BEAT, node_id, now, nodes.SEEN_GRAIN, issued_at)
    if not rows:
        return Heartbeat(nodes.Refusal(f"node {node_id} is not enrolled", None), [])
    first = rows[0]
    refused = nodes.credential_problem(node_id, issued_at, first["enrolled_at"],
                                       first["revoked_at"])
    delivered = [r for r in rows if r["launch_id"] is not None]
    return Heartbeat(refused, [] if refused else launches.assignments(delivered))
