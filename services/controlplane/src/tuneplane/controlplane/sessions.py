"""Browser sessions: the cookie is a signed token (kind ``session``) naming a session id;
the database keeps the id's digest, the session's CSRF token and its end, so signing out,
an admin's disable, or expiry end it at the next request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from tuneplane.common.db import Connection
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane.projects import (
    WITH_ROLES,
    Asked,
    Place,
    Role,
    place_in,
    place_join,
    roles_in,
)

HOURS: Final = 12


@dataclass(frozen=True, slots=True)
class Standing:
    username: str
    admin: bool
    csrf_token: str
    refusal: str | None  # why it no longer stands, or None
    roles: Mapping[str, Role] = field(default_factory=dict)  # the user's, by project
    place: Place | None = None  # of the run asked about, read with it


def digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode()).digest()


async def start(conn: Connection, signer: TokenSigner, username: str, *, now: dt.datetime,
                hours: int = HOURS) -> str:
    """A new session of ``username``; returns the cookie's value."""
    session_id = secrets.token_urlsafe(24)
    await conn.execute(
        "INSERT INTO sessions (session_digest, username, csrf_token, created_at, expires_at) "
        "VALUES ($1, $2, $3, $4, $5)", digest(session_id), username,
        secrets.token_urlsafe(24), now, now + dt.timedelta(hours=hours))
    return signer.issue(TokenKind.SESSION, username, {"sid": session_id},
                        now=now.timestamp(), ttl_seconds=hours * 3600)


async def standing(conn: Connection, session_id: str, username: str,
                   asked: Asked | None = None) -> Standing:
    """The session's row and its user with the user's roles, and where the run ``asked``
    stands, in one statement."""
    columns, join, more = place_join(asked, 2)
    row = await conn.fetchrow(
        "SELECT s.username, s.csrf_token, s.ended_at, s.expires_at <= now() AS expired, "
        f"u.is_admin, u.disabled_at, roles.*{columns} FROM "
        f"sessions s JOIN users u USING (username) {WITH_ROLES}{join} "
        "WHERE s.session_digest = $1", digest(session_id), *more)
    if row is None or row["username"] != username:
        return Standing(username, False, "", "the session is not known here")
    refusal = (f"user {username!r} is disabled" if row["disabled_at"] is not None else
               "the session was ended (signed out)" if row["ended_at"] is not None else
               "the session expired" if row["expired"] else None)
    return Standing(username, bool(row["is_admin"]), str(row["csrf_token"]), refusal,
                    roles_in(row), place_in(asked, row))


async def end(conn: Connection, session_id: str) -> None:
    await conn.execute("UPDATE sessions SET ended_at = coalesce(ended_at, now()) "
                       "WHERE session_digest = $1", digest(session_id))
