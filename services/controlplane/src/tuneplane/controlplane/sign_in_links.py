"""One-time sign-in links: a way into the web pages for someone who has a terminal on the
install but no password yet (the demo prints one). A link is a random secret the database
keeps only the digest of; it is redeemed once, before it expires (minutes), by an enabled
user, for a browser session, and leads to a path of this service. Redeeming is one UPDATE,
so two browsers racing for the same link get one session between them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from typing import Final

from tuneplane.common.db import Connection
from tuneplane.controlplane.errors import UserNotFound

DEFAULT_MINUTES: Final = 10
MAX_MINUTES: Final = 60
#: The query parameter the link carries its secret in.
PARAMETER: Final = "link"
#: A link that may still be redeemed ($1 its digest, $2 now): not spent, not expired, its
#: user enabled. ``holder`` asks it, ``redeem`` spends by it, so the two cannot disagree.
USABLE: Final = ("l.link_digest = $1 AND u.username = l.username AND l.used_at IS NULL "
                 "AND l.expires_at > $2 AND u.disabled_at IS NULL")
#: Why a link cannot be used, whichever the reason, without telling whose it was.
REFUSED: Final = ("this sign-in link is unknown, was used already or has expired; ask for a "
                  "new one (tuneplane-admin sign-in-link)")


@dataclass(frozen=True, slots=True)
class Redeemed:
    username: str
    next_path: str


class LinkRefused(Exception):
    """The link cannot be redeemed; the message says why, without telling whose it was."""


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


async def issue(conn: Connection, username: str, next_path: str, *, now: dt.datetime,
                minutes: int = DEFAULT_MINUTES) -> str:
    """A new link's secret for ``username``, leading to ``next_path`` once redeemed."""
    if not 1 <= minutes <= MAX_MINUTES:
        raise ValueError(f"a sign-in link lasts 1 to {MAX_MINUTES} minutes, not {minutes}")
    if not next_path.startswith("/") or next_path.startswith("//"):
        raise ValueError(f"a sign-in link leads to a path of the web service (/...), "
                         f"not {next_path!r}")
    enabled = await conn.fetchval("SELECT disabled_at IS NULL FROM users WHERE username = $1",
                                  username)
    if enabled is None:
        raise UserNotFound(f"no user {username!r}; add it with user-add")
    if not enabled:
        raise UserNotFound(f"user {username!r} is disabled")
    secret = secrets.token_urlsafe(32)
    await conn.execute(
        "INSERT INTO sign_in_links (link_digest, username, next_path, created_at, expires_at) "
        "VALUES ($1, $2, $3, $4, $5)", digest(secret), username, next_path, now,
        now + dt.timedelta(minutes=minutes))
    return secret


async def holder(conn: Connection, secret: str, *, now: dt.datetime) -> str | None:
    """Whom the link would sign in (it spends nothing), or None when it cannot be redeemed
    (unknown, spent, expired or its user disabled)."""
    name = await conn.fetchval(
        f"SELECT l.username FROM sign_in_links l, users u WHERE {USABLE}", digest(secret), now)
    return None if name is None else str(name)


async def redeem(conn: Connection, secret: str, *, now: dt.datetime) -> Redeemed:
    """Spends the link; raises LinkRefused when it is unknown, spent, expired, voided (its
    user's password changed since: ``passwords.set_password``) or its user
    disabled."""
    row = await conn.fetchrow(
        f"UPDATE sign_in_links l SET used_at = $2 FROM users u WHERE {USABLE} "
        "RETURNING l.username, l.next_path", digest(secret), now)
    if row is None:
        raise LinkRefused(REFUSED)
    return Redeemed(str(row["username"]), str(row["next_path"]))
