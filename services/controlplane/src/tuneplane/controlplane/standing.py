"""Whether a workload token still stands: its attempt has not been deleted nor ended beyond
the drain window, and the node it was issued through (if any) is enrolled, not revoked and
not re-enrolled since.

The facts come from PostgreSQL (``attempt_facts``, ``node_facts``); ``refusal`` is the rule,
a pure function of the token's claims and those facts. A fact that could not be looked up
(``UNKNOWN``: the database is unreachable) refuses nothing: the caller fails open on it,
and the token's own expiry still bounds it.

Tokens of attempts the control plane never started (``tuneplane-admin token`` for a run with
no ``attempts`` row, in tests and development) name no node and keep working until they
expire: there is no end to enforce. A token naming a node always belongs to an attempt the
control plane started, so for it a missing attempt is refused.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from tuneplane.common.db import Connection
from tuneplane.common.tokens import WorkloadClaims

#: Seconds past the drain window a token is still accepted. A collector stopped when its
#: attempt ends may put a last batch on the wire up to 10 s after its drain deadline (its
#: sender's join timeout), and its stop reaches it some seconds after the end is recorded
#: (the node agent's loop, a scheduler's reaction): 30 s covers both with room.
DRAIN_MARGIN_SECONDS: Final = 30


class Unknown(enum.Enum):
    UNKNOWN = "unknown"


#: A fact that could not be looked up.
UNKNOWN: Final = Unknown.UNKNOWN


@dataclass(frozen=True, slots=True)
class AttemptFacts:
    state: str  # "none" for an attempt without a row whose run or attempt was deleted
    #: Seconds from its end to when the facts were read (PostgreSQL's clock on both sides,
    #: so no clock skew enters); None while running, or when its end time is not recorded.
    ended_ago: float | None
    #: The attempt, or its run, was deleted (``deletions``).
    deleted: bool = False

    def aged(self, seconds: float) -> AttemptFacts:
        """The same facts, ``seconds`` after they were read."""
        if self.ended_ago is None:
            return self
        return dataclasses.replace(self, ended_ago=self.ended_ago + seconds)


@dataclass(frozen=True, slots=True)
class NodeFacts:
    enrolled_at: int  # seconds since the epoch, of its latest enrollment
    revoked: bool


Attempt: TypeAlias = AttemptFacts | Literal[Unknown.UNKNOWN] | None
Node: TypeAlias = NodeFacts | Literal[Unknown.UNKNOWN] | None


async def attempt_facts(conn: Connection, run_id: str, attempt: int) -> AttemptFacts | None:
    """The attempt's state, how long ago it ended and whether it was deleted; None when it
    has no row (and was not deleted)."""
    row = await conn.fetchrow(
        "SELECT a.state, extract(epoch FROM clock_timestamp() - a.ended_at)::float8 AS "
        "ended_ago, EXISTS (SELECT 1 FROM deletions d WHERE d.run_id = $1 AND d.attempt IN "
        "(0, $2) AND d.undone_at IS NULL) AS deleted FROM (SELECT 1) one LEFT JOIN attempts "
        "a ON a.run_id = $1 AND a.attempt = $2", run_id, attempt)
    assert row is not None
    if row["state"] is None:
        return AttemptFacts("none", None, True) if row["deleted"] else None
    ended_ago = None if row["state"] == "running" else row["ended_ago"]
    return AttemptFacts(str(row["state"]), None if ended_ago is None else float(ended_ago),
                        bool(row["deleted"]))


async def node_facts(conn: Connection, node_id: str) -> NodeFacts | None:
    """The node's latest enrollment and whether it is revoked; None when it is unknown."""
    row = await conn.fetchrow("SELECT enrolled_at, revoked_at FROM nodes WHERE node_id = $1",
                              node_id)
    if row is None:
        return None
    return NodeFacts(int(row["enrolled_at"].timestamp()), row["revoked_at"] is not None)


def refusal(claims: WorkloadClaims, attempt: Attempt, node: Node, *,
            drain_seconds: float) -> str | None:
    """Why the token no longer stands, or None when it does (or nothing known says not)."""
    where = f"run {claims.member.run_id!r} attempt {claims.member.attempt}"
    if isinstance(attempt, AttemptFacts) and attempt.deleted:
        return f"{where} was deleted; its workload tokens are refused"
    if claims.node is not None:
        through = f"workload token of {where} was issued through node {claims.node}"
        why = node_refusal(through, claims.issued_at, node)
        if why is not None:
            return why
        if attempt is None:
            return f"{through}, yet the control plane never started that attempt"
    if isinstance(attempt, AttemptFacts) and attempt.state == "pending":
        return f"{where} has not started: its job waits in the scheduler's queue"
    if isinstance(attempt, AttemptFacts) and attempt.state != "running":
        window = drain_seconds + DRAIN_MARGIN_SECONDS
        if attempt.ended_ago is None:
            return f"{where} has ended ({attempt.state}); its workload tokens are refused"
        if attempt.ended_ago > window:
            return (f"{where} ended ({attempt.state}) {attempt.ended_ago:.0f} s ago, beyond "
                    f"the drain window of {window:.0f} s; its workload tokens are refused")
    return None


def node_refusal(through: str, issued_at: float, node: Node) -> str | None:
    """Why a token issued through a node (``through`` says which, and what token) no longer
    stands because of that node, or None."""
    if node is None:
        return f"{through}, which is not enrolled"
    if isinstance(node, NodeFacts) and node.revoked:
        return f"{through}, which was revoked"
    if isinstance(node, NodeFacts) and issued_at < node.enrolled_at:
        return f"{through} before its latest enrollment, which replaced it"
    return None
