"""One-time sign-in links on the real PostgreSQL: redeemed once, before they expire, by an
enabled user only; two racing redemptions get one session between them; a link leads only
to a path of the web service; the table keeps only digests."""

from __future__ import annotations

import asyncio
import datetime as dt

import asyncpg
import pytest

from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tuneplane.controlplane import passwords, sign_in_links, users
from tuneplane.controlplane.errors import UserNotFound

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


async def test_a_link_is_redeemed_once_and_leads_to_its_path(db: asyncpg.Connection) -> None:
    user = await add_user(db, "linked")
    secret = await sign_in_links.issue(db, user, "/runs/r/charts", now=NOW)
    redeemed = await sign_in_links.redeem(db, secret, now=NOW + dt.timedelta(minutes=9))
    assert (redeemed.username, redeemed.next_path) == (user, "/runs/r/charts")
    with pytest.raises(sign_in_links.LinkRefused, match="used already"):
        await sign_in_links.redeem(db, secret, now=NOW + dt.timedelta(minutes=9))
    rows = await db.fetch("SELECT row_to_json(l)::text AS row, link_digest FROM "
                          "sign_in_links l WHERE username = $1", user)
    assert [r["link_digest"] for r in rows] == [sign_in_links.digest(secret)]
    assert secret not in rows[0]["row"]  # only its digest is kept


async def test_an_expired_or_unknown_link_is_refused(db: asyncpg.Connection) -> None:
    user = await add_user(db, "late")
    secret = await sign_in_links.issue(db, user, "/", now=NOW, minutes=1)
    with pytest.raises(sign_in_links.LinkRefused, match="expired"):
        await sign_in_links.redeem(db, secret, now=NOW + dt.timedelta(minutes=1))
    with pytest.raises(sign_in_links.LinkRefused, match="unknown"):
        await sign_in_links.redeem(db, "not-a-link", now=NOW)


async def test_a_disabled_user_neither_gets_nor_redeems_a_link(db: asyncpg.Connection) -> None:
    user = await add_user(db, "gone")
    secret = await sign_in_links.issue(db, user, "/", now=NOW)
    assert await users.disable(db, user)
    with pytest.raises(sign_in_links.LinkRefused):
        await sign_in_links.redeem(db, secret, now=NOW)
    with pytest.raises(UserNotFound, match="is disabled"):
        await sign_in_links.issue(db, user, "/", now=NOW)
    with pytest.raises(UserNotFound, match="no user 'nobody-at-all'"):
        await sign_in_links.issue(db, "nobody-at-all", "/", now=NOW)


@pytest.mark.parametrize(("path", "minutes", "refusal"), [
    ("https://evil.test/", 10, "a path of the web service"),
    ("//evil.test/", 10, "a path of the web service"),
    ("/", 0, "1 to 60 minutes"),
    ("/", 61, "1 to 60 minutes"),
])
async def test_a_link_leads_only_here_and_lasts_minutes(
        db: asyncpg.Connection, path: str, minutes: int, refusal: str) -> None:
    user = await add_user(db, "bounded")
    with pytest.raises(ValueError, match=refusal):
        await sign_in_links.issue(db, user, path, now=NOW, minutes=minutes)


async def test_two_racing_redemptions_get_one_session(initialised: Endpoints,
                                                      db: asyncpg.Connection) -> None:
    user = await add_user(db, "raced")
    secret = await sign_in_links.issue(db, user, "/", now=NOW)
    conns = [await asyncpg.connect(initialised.database_url) for _ in range(4)]
    try:
        outcomes = await asyncio.gather(*(sign_in_links.redeem(c, secret, now=NOW)
                                          for c in conns), return_exceptions=True)
    finally:
        for conn in conns:
            await conn.close()
    assert sum(isinstance(o, sign_in_links.Redeemed) for o in outcomes) == 1
    assert sum(isinstance(o, sign_in_links.LinkRefused) for o in outcomes) == 3


async def test_a_new_password_voids_the_links_not_yet_used(db: asyncpg.Connection) -> None:
    # A new password ends the sessions anyone else held; a link someone else holds (a chat
    # message, a log) must not start a new one afterwards.
    user = await add_user(db, "reset")
    secret = await sign_in_links.issue(db, user, "/", now=dt.datetime.now(dt.UTC))
    await passwords.set_password(db, user, "a new password, long enough")
    with pytest.raises(sign_in_links.LinkRefused):
        await sign_in_links.redeem(db, secret, now=dt.datetime.now(dt.UTC))
    later = await sign_in_links.issue(db, user, "/", now=dt.datetime.now(dt.UTC))
    assert (await sign_in_links.redeem(db, later, now=dt.datetime.now(dt.UTC))).username == user
