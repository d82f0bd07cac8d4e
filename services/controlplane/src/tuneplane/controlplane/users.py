"""Users of the web API and their tokens (the user kind, signed with its own key)."""

from __future__ import annotations

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.controlplane.errors import InvalidUserName, UserExists, UserNotFound


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


async def is_admin(conn: Connection, username: str) -> bool:
    return bool(await conn.fetchval("SELECT is_admin FROM users WHERE username = $1", username))


async def active(conn: Connection, username: str) -> tuple[bool, bool] | None:
    """(is an admin, is disabled) of ``username``; None when there is no such user."""
    row = await conn.fetchrow("SELECT is_admin, disabled_at IS NOT NULL AS disabled "
                              "FROM users WHERE username = $1", username)
    return None if row is None else (bool(row["is_admin"]), bool(row["disabled"]))


async def disable(conn: Connection, username: str) -> bool:
    """Disable ``username``: its tokens are refused from now on. False when it already was;
    raises UserNotFound."""
    row = await conn.fetchrow(
        "UPDATE users SET disabled_at = coalesce(disabled_at, now()) WHERE username = $1 "
        "RETURNING disabled_at = now() AS now_disabled", username)
    if row is None:
        raise UserNotFound(f"no user {username!r}")
    return bool(row["now_disabled"])


async def listing(conn: Connection) -> list[dict[str, object]]:
    rows = await conn.fetch("SELECT username, is_admin, created_at, disabled_at FROM users "
                            "ORDER BY username")
    return [dict(r) for r in rows]
