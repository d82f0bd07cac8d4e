"""Local passwords, for installs without an identity provider: argon2id hashes
(argon2-cffi's defaults, RFC 9106's low-memory profile), checked in the same time whether
or not the user exists or has a password, so a sign-in answer tells nothing of either.
"""

from __future__ import annotations

import asyncio
from typing import Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from tuneplane.common.db import Connection
from tuneplane.controlplane.errors import InvalidUserName, UserNotFound

MIN_LENGTH: Final = 12
MAX_LENGTH: Final = 1024

HASHER: Final = PasswordHasher()
#: Verified against when there is no hash to verify, so every answer costs one verification.
DECOY: Final = HASHER.hash("tuneplane: no such user or password")


def check_strength(password: str) -> None:
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise InvalidUserName(f"a password is {MIN_LENGTH} to {MAX_LENGTH} characters, not "
                              f"{len(password)}")


def matches(stored: str, password: str) -> bool:
    try:
        return HASHER.verify(stored, password[:MAX_LENGTH])
    except (VerificationError, InvalidHashError):
        return False


async def set_password(conn: Connection, username: str, password: str) -> None:
    check_strength(password)
    hashed = await asyncio.to_thread(HASHER.hash, password)
    async with conn.transaction():
        done = await conn.fetchval("UPDATE users SET password_hash = $2 WHERE username = $1 "
                                   "RETURNING 1", username, hashed)
        if done is None:
            raise UserNotFound(f"no user {username!r}")
        # A new password ends the sessions the old one (or anyone holding them) started,
        # and voids the one-time sign-in links not yet used, which would start new ones.
        await conn.execute("UPDATE sessions SET ended_at = now() WHERE username = $1 "
                           "AND ended_at IS NULL", username)
        await conn.execute("DELETE FROM sign_in_links WHERE username = $1 "
                           "AND used_at IS NULL", username)


async def verify(conn: Connection, username: str, password: str) -> bool:
    """Whether ``password`` is ``username``'s (an enabled user with a password)."""
    row = await conn.fetchrow("SELECT password_hash, disabled_at FROM users "
                              "WHERE username = $1", username)
    stored = None if row is None else row["password_hash"]
    # The hashing runs off the event loop: tens of milliseconds of CPU each.
    if not await asyncio.to_thread(matches, stored or DECOY, password):
        return False
    if stored is None or row is None or row["disabled_at"] is not None:
        return False
    if HASHER.check_needs_rehash(stored):
        await conn.execute("UPDATE users SET password_hash = $2 WHERE username = $1",
                           username, await asyncio.to_thread(HASHER.hash, password))
    return True
