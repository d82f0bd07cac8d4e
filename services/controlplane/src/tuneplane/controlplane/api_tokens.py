"""Personal API tokens: a user token (signed, kind ``user``) whose ``jti`` names a row here,
so each is listed, expires (90 days by default), can be revoked, and may be scoped to some
of its user's projects. A token is honoured only while its row stands (not revoked, not
expired) and its user is enabled; a scoped token carries no admin rights.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane.errors import InvalidToken, TokenNotFound, UserNotFound
from tuneplane.controlplane.projects import (
    WITH_ROLES,
    Asked,
    Place,
    Role,
    place_in,
    place_join,
    roles_in,
)

DEFAULT_DAYS: Final = 90
MAX_DAYS: Final = 365


@dataclass(frozen=True, slots=True)
class Standing:
    """What a token's row says, read at each request."""

    username: str
    admin: bool
    projects: tuple[str, ...] | None  # None: unscoped
    refusal: str | None  # why it is refused now, or None
    roles: Mapping[str, Role] = field(default_factory=dict)  # the user's, by project
    place: Place | None = None  # of the run asked about, read with it


def token_id() -> str:
    return f"tok_{secrets.token_urlsafe(12)}"


async def issue(conn: Connection, signer: TokenSigner, username: str, *, name: str,
                now: dt.datetime, days: int = DEFAULT_DAYS,
                projects: list[str] | None = None) -> tuple[str, str, dt.datetime]:
    """A new token of ``username``: (its id, the token, when it expires)."""
    if not 1 <= days <= MAX_DAYS:
        raise InvalidToken(f"a token lives 1 to {MAX_DAYS} days, not {days}")
    expires = now + dt.timedelta(days=days)
    ident = token_id()
    try:
        await conn.execute(
            "INSERT INTO api_tokens (token_id, username, name, projects, created_at, "
            "expires_at) VALUES ($1, $2, $3, $4, $5, $6)", ident, username, name,
            None if projects is None else sorted(set(projects)), now, expires)
    except asyncpg.ForeignKeyViolationError:
        raise UserNotFound(f"no user {username!r}") from None
    except asyncpg.CheckViolationError:
        raise InvalidToken(f"a token's name is 1-128 characters, not {name!r}") from None
    token = signer.issue(TokenKind.USER, username, {"user": username, "jti": ident},
                         now=now.timestamp(), ttl_seconds=days * 86400)
    return ident, token, expires


async def standing(conn: Connection, ident: str, username: str,
                   asked: Asked | None = None) -> Standing:
    """The token's row and its user with the user's roles, as of now, and where the run
    ``asked`` stands, in one statement; marks it used (once a minute at most)."""
    columns, join, more = place_join(asked, 2)
    row = await conn.fetchrow(
        "SELECT t.username, t.projects, t.revoked_at, t.expires_at <= now() AS expired, "
        "t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute' AS stale, "
        f"u.is_admin, u.disabled_at, roles.*{columns} FROM "
        f"api_tokens t JOIN users u USING (username) {WITH_ROLES}{join} "
        "WHERE t.token_id = $1", ident, *more)
    if row is not None and row["stale"]:  # one write a minute, not one a request
        await conn.execute("UPDATE api_tokens SET last_used_at = now() WHERE token_id = $1",
                           ident)
    if row is None or row["username"] != username:
        return Standing(username, False, (), "the token is not known here (revoked and "
                                                "removed, or never issued)")
    refusal = (f"user {username!r} is disabled" if row["disabled_at"] is not None else
               "the token was revoked" if row["revoked_at"] is not None else
               "token expired" if row["expired"] else None)
    scope = None if row["projects"] is None else tuple(row["projects"])
    return Standing(username, bool(row["is_admin"]) and scope is None, scope, refusal,
                    roles_in(row), place_in(asked, row))


async def listing(conn: Connection, username: str) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT token_id, name, projects, created_at, expires_at, revoked_at, last_used_at "
        "FROM api_tokens WHERE username = $1 ORDER BY created_at, token_id", username)
    return [dict(r) for r in rows]


async def revoke(conn: Connection, ident: str, *, username: str | None) -> bool:
    """Revoke a token (of ``username``, or anyone's when None: an admin); False when it was
    already revoked. Raises TokenNotFound."""
    row = await conn.fetchrow(
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE token_id = $1 "
        "AND ($2::text IS NULL OR username = $2) RETURNING revoked_at = now() AS now_revoked",
        ident, username)
    if row is None:
        raise TokenNotFound(f"no token {ident!r}")
    return bool(row["now_revoked"])
