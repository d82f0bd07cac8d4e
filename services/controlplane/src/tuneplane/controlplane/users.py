"""Users of the web API and their tokens (the user kind, signed with its own key)."""

from __future__ import annotations

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane.errors import InvalidUserName, UserExists


async def bootstrap_admin(conn: Connection, username: str = "admin") -> bool:
    """Create the first admin of a fresh install; False when an admin exists already."""
    async with conn.transaction():
        await conn.execute("LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE")
        if await conn.fetchval("SELECT count(*) FROM users WHERE is_admin"):
            return False
        await conn.execute("INSERT INTO users (username, is_admin) VALUES ($1, true) "
                           "ON CONFLICT (username) DO UPDATE SET is_admin = true", username)
        return True


async def add_user(conn: Connection, username: str, *, admin: bool = False) -> None:
    try:
        await conn.execute("INSERT INTO users (username, is_admin) VALUES ($1, $2)",
                           username, admin)
    except asyncpg.UniqueViolationError:
        raise UserExists(f"user {username!r} exists") from None
    except asyncpg.CheckViolationError:
        raise InvalidUserName(
            f"user name {username!r} must be 1-128 of A-Z a-z 0-9 . _ @ -") from None


async def exists(conn: Connection, username: str) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM users WHERE username = $1", username))


def issue(signer: TokenSigner, username: str, *, now: float, ttl_seconds: int) -> str:
    return signer.issue(TokenKind.USER, username, {"user": username}, now=now,
                        ttl_seconds=ttl_seconds)


async def is_admin(conn: Connection, username: str) -> bool:
    return bool(await conn.fetchval("SELECT is_admin FROM users WHERE username = $1", username))
