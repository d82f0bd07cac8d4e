"""Signing in through a real OpenID Connect provider (Dex, ``scripts/oidc``): the service
sends the browser there with PKCE, takes it back, makes the user with the roles its groups
map to, and starts a session; a forged or replayed callback signs nobody in. The browser's
part is played with httpx (the provider's login form posted as a person would)."""

from __future__ import annotations

import re
import urllib.parse
import uuid
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from tests.support.environment import Endpoints
from tests.support.oidc import OidcProvider, sign_in
from tuneplane.controlplane import projects
from tuneplane.controlplane.federated import parse_mapping
from tuneplane.web.app import create_app
from tuneplane.web.auth import browser as browsers
from tuneplane.web.auth.oidc import OidcClient, Pending, SignInFailed
from tuneplane.web.auth.oidc_settings import OidcSettings
from tuneplane.web.routes import oidc as oidc_routes
from tuneplane.web.settings import WebSettings

SITE = "https://tuneplane-web"


@pytest.fixture
async def signed_app(initialised: Endpoints, oidc_provider: OidcProvider,
                     ) -> AsyncIterator[tuple[FastAPI, str]]:
    """The app with the provider configured; its groups map to a project of its own."""
    team = f"vision-{uuid.uuid4().hex[:6]}"
    oidc = OidcSettings(issuer=oidc_provider.issuer, client_id=oidc_provider.client_id,
                        client_secret=oidc_provider.client_secret,
                        redirect_uri=oidc_provider.redirect_uri,
                        groups=parse_mapping(f"vision-editors={team}:editor,"
                                             f"vision-viewers={team}:viewer"))
    app = create_app(WebSettings(database_url=initialised.database_url,
                                 jwt_secret=initialised.jwt_secret, oidc=oidc))
    async with app.router.lifespan_context(app):
        yield app, team


async def notice(browser: httpx.AsyncClient, back: httpx.Response) -> str:
    """What the login page a failed sign-in was sent back to says."""
    assert back.status_code == 303
    assert back.headers["location"].startswith("/login?")
    assert "error" not in back.headers["location"]  # never in the URL
    page = await browser.get(back.headers["location"])
    return page.text


def new_browser(app: FastAPI) -> httpx.AsyncClient:
    """A cookie-keeping client of the app, on https (its cookies are Secure)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SITE)


async def through_provider(browser: httpx.AsyncClient, provider: OidcProvider, email: str,
                           password: str | None = None) -> str:
    """``browser`` sent to the provider and signed in there as ``email``: the callback URL
    the provider sends it back to (not yet followed)."""
    start = await browser.get("/auth/oidc/login", params={"next": "/runs/r/charts"})
    assert start.status_code == 303, start.text
    with httpx.Client() as person:  # the provider's pages are real HTTP
        callback = sign_in(person, start.headers["location"], provider.redirect_uri, email,
                           password or provider.passwords[email])
    assert isinstance(callback, str), callback.text[:500]
    return f"/auth/callback?{urllib.parse.urlsplit(callback).query}"


async def test_a_sign_in_makes_the_user_with_its_groups_roles(
        signed_app: tuple[FastAPI, str], oidc_provider: OidcProvider,
        db: asyncpg.Connection) -> None:
    app, team = signed_app
    for email, role in [("alice@example.com", "editor"), ("bob@example.com", "viewer")]:
        async with new_browser(app) as browser:
            callback = await through_provider(browser, oidc_provider, email)
            back = await browser.get(callback)
            assert (back.status_code, back.headers["location"]) == (303, "/runs/r/charts")
            session = (await browser.get("/auth/session")).json()
            assert session["user"] == email
            assert session["projects"][team] == role
            replayed = await browser.get(callback)  # the code and the sign-in are spent
            assert "not started here" in await notice(browser, replayed)
    assert await db.fetchval("SELECT origin FROM users WHERE username = $1",
                             "alice@example.com") == "oidc"
    members = {m.username: m.role.label for m in await projects.members(db, team)}
    assert members == {"alice@example.com": "editor", "bob@example.com": "viewer"}


async def test_a_callback_not_started_here_or_with_another_state_signs_no_one_in(
        signed_app: tuple[FastAPI, str], oidc_provider: OidcProvider) -> None:
    app, _ = signed_app
    async with new_browser(app) as browser:
        callback = await through_provider(browser, oidc_provider, "alice@example.com")
        forged = callback.replace("state=", "state=x")
        wrong = await browser.get(forged)
        assert "state does not match" in await notice(browser, wrong)
    async with new_browser(app) as stranger:
        stolen = await stranger.get(callback)  # someone else's code, without its cookie
        assert "not started here" in await notice(stranger, stolen)
        assert (await stranger.get("/api/v1/runs")).status_code == 401


async def test_the_cookie_of_a_sign_in_in_progress_is_no_session(
        signed_app: tuple[FastAPI, str]) -> None:
    # Anyone gets one from /auth/oidc/login, signed by this service; sent as the session
    # cookie it must not pass for one, not even to have a body read.
    app, _ = signed_app
    async with new_browser(app) as stranger:
        start = await stranger.get("/auth/oidc/login")
        assert start.status_code == 303, start.text
        pending = start.cookies[oidc_routes.COOKIE]
        answer = await stranger.post(
            "/api/v1/runs", content=b"{not JSON", headers={
                "Content-Type": "application/json",
                "Cookie": f"{browsers.COOKIE}={pending}"})
    assert answer.status_code == 401, answer.text  # not a 422 about the body it parsed
    assert answer.json()["detail"].startswith("session token refused")


async def test_a_disabled_user_of_the_provider_is_not_signed_in(
        signed_app: tuple[FastAPI, str], oidc_provider: OidcProvider,
        db: asyncpg.Connection) -> None:
    app, _ = signed_app
    try:
        async with new_browser(app) as browser:
            callback = await through_provider(browser, oidc_provider, "bob@example.com")
            await db.execute("UPDATE users SET disabled_at = now() "
                             "WHERE username = 'bob@example.com'")
            back = await browser.get(callback)
            assert "is disabled" in await notice(browser, back)
            assert (await browser.get("/api/v1/runs")).status_code == 401
    finally:
        await db.execute("UPDATE users SET disabled_at = NULL "
                         "WHERE username = 'bob@example.com'")


@pytest.mark.parametrize("verified", [None, False, "true"])
def test_an_email_the_provider_does_not_say_it_verified_names_no_one(
        verified: object) -> None:
    # Providers that let people type their own address (and say nothing of it, or not
    # with a true) would otherwise sign them in as whoever holds that name here, a local
    # admin included: its admin flag stays, and its sessions are the attacker's.
    settings = OidcSettings(issuer="https://id.example", client_id="tuneplane-web",
                            client_secret="x" * 16,
                            redirect_uri="https://tuneplane-web/auth/callback")
    pending = Pending("state", "nonce", "verifier", "/")
    claims: dict[str, object] = {"nonce": "nonce", "email": "admin@example.com"}
    if verified is not None:
        claims["email_verified"] = verified
    with pytest.raises(SignInFailed, match=re.escape("has not verified 'admin@example.com'")):
        OidcClient(settings)._identity(claims, pending)
    assert OidcClient(settings)._identity({**claims, "email_verified": True},
                                          pending).username == "admin@example.com"


async def test_the_login_page_offers_the_provider(signed_app: tuple[FastAPI, str]) -> None:
    app, _ = signed_app
    async with new_browser(app) as browser:
        page = await browser.get("/login", params={"next": "/runs/x/charts"})
    assert 'href="/auth/oidc/login?next=%2Fruns%2Fx%2Fcharts"' in page.text


async def test_a_local_user_of_the_same_name_is_never_signed_into(
        signed_app: tuple[FastAPI, str], oidc_provider: OidcProvider,
        db: asyncpg.Connection) -> None:
    app, _ = signed_app
    async with new_browser(app) as browser:  # bob exists as the provider's user first
        await browser.get(await through_provider(browser, oidc_provider, "bob@example.com"))
    await db.execute("UPDATE users SET origin = 'local' WHERE username = 'bob@example.com'")
    try:
        async with new_browser(app) as browser:
            callback = await through_provider(browser, oidc_provider, "bob@example.com")
            back = await browser.get(callback)
            assert "is a local user here" in await notice(browser, back)
            assert (await browser.get("/api/v1/runs")).status_code == 401
    finally:
        await db.execute("UPDATE users SET origin = 'oidc' WHERE username = 'bob@example.com'")
