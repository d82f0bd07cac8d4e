"""OIDC sign-in in a real browser (Chromium, driven by Playwright) against the real provider
(Dex): the login page offers it, the provider's form signs alice in, she sees her project's
run and not another's, signs out; a token she made and revoked, and she herself once an
admin disables her, are refused at the next request. tuneplane-web listens where the
provider sends people back (its registered redirect URI)."""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.support.browser import ARTIFACTS, opened_page
from tests.support.credentials import user_token
from tests.support.environment import BIN, Endpoints
from tests.support.oidc import OidcProvider
from tests.support.processes import Process

ARTIFACT = {"version": 1,
            "sources": [{"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}


@pytest.fixture
def oidc_web(initialised: Endpoints, oidc_provider: OidcProvider,
             tmp_path: Path) -> Iterator[tuple[Process, str]]:
    """tuneplane-web at the provider's redirect URI, its groups mapped to a new project."""
    team = f"vision-{uuid.uuid4().hex[:6]}"
    where = urllib.parse.urlsplit(oidc_provider.redirect_uri)
    env = {"TUNEPLANE_WEB_OIDC_ISSUER": oidc_provider.issuer,
           "TUNEPLANE_WEB_OIDC_CLIENT_ID": oidc_provider.client_id,
           "TUNEPLANE_WEB_OIDC_CLIENT_SECRET": oidc_provider.client_secret,
           "TUNEPLANE_WEB_OIDC_REDIRECT_URI": oidc_provider.redirect_uri,
           "TUNEPLANE_WEB_OIDC_GROUPS": f"vision-editors={team}:editor"}
    process = Process([str(BIN / "tuneplane-web"), "--host", str(where.hostname), "--port",
                       str(where.port)], tmp_path / "web.log", ready="Uvicorn running on",
                      port=int(where.port or 0), env=env)
    yield process, team
    process.stop()


async def test_alice_signs_in_through_the_provider_sees_her_project_and_is_refused_at_once(
        oidc_web: tuple[Process, str], oidc_provider: OidcProvider, initialised: Endpoints,
        db: asyncpg.Connection) -> None:
    web, team = oidc_web
    base = f"http://127.0.0.1:{web.port}"
    admin = await user_token(db, initialised, "admin", admin=True)
    headers = {"Authorization": f"Bearer {admin}"}
    ours, theirs = f"{team}-run", f"other-{uuid.uuid4().hex[:6]}"
    async with httpx.AsyncClient(base_url=base, headers=headers) as http:
        assert (await http.post("/api/v1/projects", json={"name": team})).status_code in (
            201, 409)
        for run, project in [(ours, team), (theirs, "default")]:
            made = await http.post("/api/v1/runs", json={"run_id": run, "project": project,
                                                         "integration": ARTIFACT})
            assert made.status_code == 201, made.text
    async with opened_page(1100, 700) as opened:
        page = opened.page
        await page.goto(f"{base}/runs/{ours}/charts")
        await page.wait_for_url(lambda url: "/login?next=" in url)
        await page.screenshot(path=str(ARTIFACTS / "login-sso.png"))
        await page.click("a.sso")
        await page.wait_for_selector("input[name=password]")  # the provider's own page
        await page.screenshot(path=str(ARTIFACTS / "provider-login.png"))
        await page.fill("input[name=login]", "alice@example.com")
        await page.fill("input[name=password]", oidc_provider.passwords["alice@example.com"])
        await page.click("button[type=submit]")
        await page.wait_for_url(f"{base}/runs/{ours}/charts")
        cookies = {c["name"]: c for c in await page.context.cookies(base)}
        assert (cookies["__Host-tuneplane_session"]["httpOnly"],
                cookies["__Host-tuneplane_session"]["secure"]) == (True, True)
        api = page.request  # the browser's own cookies
        session = await (await api.get(f"{base}/auth/session")).json()
        assert session["user"] == "alice@example.com"
        assert session["projects"][team] == "editor"  # from her group
        assert "default" not in session["projects"]
        assert (await api.get(f"{base}/api/v1/runs/{ours}")).status == 200
        assert (await api.get(f"{base}/api/v1/runs/{theirs}")).status == 404
        change = {"X-CSRF-Token": session["csrf_token"], "Origin": base}
        made = await (await api.post(f"{base}/api/v1/tokens", data={"name": "nightly"},
                                     headers=change)).json()
        async with httpx.AsyncClient(base_url=base) as script:
            bearer = {"Authorization": f"Bearer {made['token']}"}
            assert (await script.get(f"/api/v1/runs/{ours}", headers=bearer)).status_code == 200
            await api.delete(f"{base}/api/v1/tokens/{made['token_id']}", headers=change)
            revoked = await script.get(f"/api/v1/runs/{ours}", headers=bearer)
            assert (revoked.status_code, revoked.json()["detail"]) == (
                401, "user token refused: the token was revoked")
            await script.post("/api/v1/users/alice@example.com/disable", headers=headers)
        refused = await api.get(f"{base}/api/v1/runs/{ours}")
        assert refused.status == 401
        assert "is disabled" in (await refused.json())["detail"]
        await db.execute("UPDATE users SET disabled_at = NULL "
                         "WHERE username = 'alice@example.com'")
        await page.click("#sign-out")
        await page.wait_for_url(lambda url: urllib.parse.urlsplit(url).path == "/login")
        assert (await api.get(f"{base}/api/v1/runs/{ours}")).status == 401
