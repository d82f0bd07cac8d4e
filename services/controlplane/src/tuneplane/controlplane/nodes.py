"""Nodes and their enrollment: a one-time enrollment token becomes a node credential.

Enrollment tokens are random, shown once and kept only as their sha256; using one
consumes it in the same statement that checks it, so two agents racing with one token
get one node. Enrolling a name again replaces the node's credential: node tokens (and the
workload tokens issued through the node) from before the latest enrollment are refused.

Revoking a node refuses its credential and the workload tokens issued through it
(``tuneplane.controlplane.standing``), and cancels its unused enrollment tokens (their expiry
set to -infinity: past for every clock): enrolling it again takes a new one from an admin.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from dataclasses import dataclass

from tuneplane.common.db import Connection
from tuneplane.controlplane.errors import EnrollmentRefused, NodeNotFound, ProjectNotFound

PREFIX = "tpe_"
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


async def new_enrollment_token(conn: Connection, node_name: str, *, created_by: str,
                               now: dt.datetime, ttl: dt.timedelta) -> str:
    if not NODE_NAME.fullmatch(node_name):
        raise EnrollmentRefused(f"node name {node_name!r} must be 1-128 of A-Z a-z 0-9 . _ - "
                              "(starting with a letter or digit)")
    token = PREFIX + secrets.token_urlsafe(32)
    await conn.execute("INSERT INTO enrollment_tokens (token_sha256, node_name, created_by, "
                       "expires_at) VALUES ($1, $2, $3, $4)", digest(token), node_name,
                       created_by, now + ttl)
    return token


@dataclass(frozen=True, slots=True)
class Enrolled:
    node_id: str
    name: str


async def enroll(conn: Connection, token: str, hostname: str, *, now: dt.datetime) -> Enrolled:
    """Consume the token and create (or re-enroll) its node as of ``now``."""
    async with conn.transaction():
        name = await conn.fetchval(
            "UPDATE enrollment_tokens SET used_at = $2 WHERE token_sha256 = $1 AND "
            "used_at IS NULL AND expires_at > $2 RETURNING node_name", digest(token), now)
        if name is None:
            why = await refused_because(conn, token)
            raise EnrollmentRefused(f"enrollment token {why}; ask an admin for a new one "
                                    "(`tuneplane-control enrollment-token`)")
        node_id = await conn.fetchval(
            "INSERT INTO nodes (node_id, name, hostname, enrolled_at) VALUES ($1, $2, $3, $4) "
            "ON CONFLICT (name) DO UPDATE SET hostname = excluded.hostname, "
            "enrolled_at = excluded.enrolled_at, revoked_at = NULL RETURNING node_id",
            f"node-{secrets.token_hex(8)}", name, hostname[:255], now)
        await conn.execute("UPDATE enrollment_tokens SET node_id = $2 WHERE token_sha256 = $1",
                           digest(token), node_id)
    return Enrolled(str(node_id), str(name))


async def refused_because(conn: Connection, token: str) -> str:
    """Why ``enroll`` refused the token (it is kept as its sha256 only)."""
    row = await conn.fetchrow(
        "SELECT node_name, used_at, expires_at = '-infinity' AS cancelled, CASE WHEN "
        "expires_at = '-infinity' THEN NULL ELSE expires_at END AS expires_at "
        "FROM enrollment_tokens WHERE token_sha256 = $1", digest(token))
    if row is None:
        return "is unknown"
    if row["used_at"] is not None:
        return f"for node {row['node_name']} was already used at {row['used_at']:%F %T}Z"
    if row["cancelled"]:
        return f"for node {row['node_name']} was cancelled when the node was revoked"
    return f"for node {row['node_name']} expired at {row['expires_at']:%F %T}Z"


#: How stale ``nodes.last_seen`` may be.
SEEN_GRAIN = dt.timedelta(seconds=10)


#: Node $1 seen at $2: ``last_seen`` moves only when it is $3 (``SEEN_GRAIN``) old. A
#: data-modifying CTE of the statements that check a node's credential.
NOTE_SEEN = ("UPDATE nodes SET last_seen = $2 WHERE node_id = $1 AND "
             "(last_seen IS NULL OR last_seen <= $2::timestamptz - $3::interval) RETURNING 1")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a node's token is refused, and from when its tokens stand at the earliest."""

    reason: str
    #: The node's tokens issued before this (epoch seconds, its latest enrollment) are
    #: refused for good; None when the node is not enrolled.
    replaced_before: int | None


async def check_credential(conn: Connection, node_id: str, issued_at: int,
                           *, now: dt.datetime) -> Refusal | None:
    """None when the node may act (and note it was seen, to ``SEEN_GRAIN``), else why not.

    ``last_seen`` moves only when it is ``SEEN_GRAIN`` old: most calls then write nothing,
    so a flood of node calls costs PostgreSQL no WAL flush per call (a commit that writes
    waits for the disk, which telemetry's stores share)."""
    row = await conn.fetchrow(
        f"WITH seen AS ({NOTE_SEEN}) SELECT enrolled_at, revoked_at FROM nodes "
        "WHERE node_id = $1", node_id, now, SEEN_GRAIN)
    if row is None:
        return Refusal(f"node {node_id} is not enrolled", None)
    return credential_problem(node_id, issued_at, row["enrolled_at"], row["revoked_at"])


def credential_problem(node_id: str, issued_at: int, enrolled_at: dt.datetime,
                       revoked_at: dt.datetime | None) -> Refusal | None:
    """Why an enrolled node's token issued at ``issued_at`` is refused, or None."""
    enrolled = int(enrolled_at.timestamp())
    if revoked_at is not None:
        return Refusal(f"node {node_id} was revoked", enrolled)
    if issued_at < enrolled:
        return Refusal(replaced(node_id), enrolled)
    return None


def replaced(node_id: str) -> str:
    """Why a token of the node from before its latest enrollment is refused."""
    return f"node token of {node_id} was replaced by a later enrollment"


@dataclass(frozen=True, slots=True)
class Revoked:
    node: bool  # an enrolled node of that name was revoked now
    cancelled: int  # its unused enrollment tokens cancelled now


async def revoke(conn: Connection, name: str, *, now: dt.datetime) -> Revoked:
    """Revoke the enrolled node as of ``now`` and cancel the name's unused enrollment tokens
    (also before its first enrollment: a leaked token is cancelled this way)."""
    async with conn.transaction():
        done = await conn.fetchval("UPDATE nodes SET revoked_at = $2 WHERE name = $1 AND "
                                   "revoked_at IS NULL RETURNING 1", name, now)
        # Expired ones too: another host's clock may still call them valid.
        cancelled = await conn.fetch("UPDATE enrollment_tokens SET expires_at = '-infinity' "
                                     "WHERE node_name = $1 AND used_at IS NULL AND "
                                     "expires_at > '-infinity' RETURNING 1", name)
    return Revoked(bool(done), len(cancelled))


async def listing(conn: Connection) -> list[dict[str, object]]:
    rows = await conn.fetch("SELECT node_id, name, hostname, enrolled_at, last_seen, revoked_at, "
                            "projects FROM nodes ORDER BY name")
    return [dict(r) for r in rows]


async def scope(conn: Connection, name: str, projects: list[str] | None) -> None:
    """The node takes launches of ``projects`` only (None: of every project); raises
    NodeNotFound, or ProjectNotFound naming a project that does not exist."""
    if projects is not None:
        known = {r["project"] for r in await conn.fetch(
            "SELECT project FROM projects WHERE project = ANY($1::text[])", projects)}
        missing = sorted(set(projects) - known)
        if missing:
            raise ProjectNotFound(f"no project {', '.join(map(repr, missing))}")
    done = await conn.fetchval("UPDATE nodes SET projects = $2 WHERE name = $1 RETURNING 1",
                               name, None if projects is None else sorted(set(projects)))
    if done is None:
        raise NodeNotFound(f"no enrolled node {name!r}")
