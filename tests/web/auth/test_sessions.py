"""Signing in with a browser: a local password starts a session whose cookie is HttpOnly,
Secure and SameSite; the API answers the session; a change needs its CSRF token and our
origin; signing out, or an admin disabling the user, ends it at once; a failed sign-in
says nothing of why; ``next`` never leads off the site; the Charts page asks for a sign-in.
"""

from __future__ import annotations

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from tests.support.credentials import add_user, user_token
from tests.support.environment import Endpoints
from tuneplane.controlplane import passwords
from tuneplane.web.auth.browser import COOKIE, CSRF_HEADER

PASSWORD = "correct horse battery"
SITE = "https://tuneplane-web"


def browser(app: FastAPI) -> httpx.AsyncClient:
    """A client keeping cookies, on https (a Secure cookie is sent over https only)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SITE)


@pytest.fixture
async def alice(db: asyncpg.Connection) -> str:
    name = await add_user(db, "alice", roles={"default": "editor"})
    await passwords.set_password(db, name, PASSWORD)
    return name


async def sign_in(http: httpx.AsyncClient, user: str, password: str = PASSWORD,
                  target: str = "/runs/r/charts") -> httpx.Response:
    return await http.post("/auth/login", data={"username": user, "password": password,
                                                "next": target})


async def test_a_password_starts_a_session_the_api_answers(web_app: FastAPI,
                                                           alice: str) -> None:
    async with browser(web_app) as http:
        answer = await sign_in(http, alice)
        assert (answer.status_code, answer.headers["location"]) == (303, "/runs/r/charts")
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=")
        assert all(part in cookie for part in ("HttpOnly", "Secure", "SameSite=lax",
                                               "Path=/"))
        assert "token" not in answer.headers["location"]
        session = (await http.get("/auth/session")).json()
        assert (session["user"], session["projects"]) == (alice, {"default": "editor"})
        assert (await http.get("/api/v1/runs")).status_code == 200
        assert (await http.get("/runs/r/charts")).status_code in (200, 503)  # 503: no uPlot


async def test_a_change_needs_the_csrf_token_and_this_origin(web_app: FastAPI,
                                                             alice: str) -> None:
    body = {"name": "from the page"}
    async with browser(web_app) as http:
        await sign_in(http, alice)
        csrf = (await http.get("/auth/session")).json()["csrf_token"]
        missing = await http.post("/api/v1/tokens", json=body)
        assert missing.status_code == 403
        assert f"needs its CSRF token in {CSRF_HEADER}" in missing.json()["detail"]
        wrong = await http.post("/api/v1/tokens", json=body, headers={CSRF_HEADER: "x" * 32})
        assert wrong.status_code == 403
        elsewhere = await http.post("/api/v1/tokens", json=body,
                                    headers={CSRF_HEADER: csrf, "Origin": "https://evil.test"})
        assert elsewhere.status_code == 403
        assert "https://evil.test" in elsewhere.json()["detail"]
        made = await http.post("/api/v1/tokens", json=body,
                               headers={CSRF_HEADER: csrf, "Origin": SITE})
        assert made.status_code == 201, made.text


async def test_signing_out_or_being_disabled_ends_the_session_at_once(
        web_app: FastAPI, alice: str, db: asyncpg.Connection, initialised: Endpoints) -> None:
    async with browser(web_app) as http:
        await sign_in(http, alice)
        kept = http.cookies.get(COOKIE)
        csrf = (await http.get("/auth/session")).json()["csrf_token"]
        out = await http.post("/auth/logout", headers={CSRF_HEADER: csrf})
        assert (out.status_code, out.headers["location"]) == (303, "/login")
        ended = await http.get("/api/v1/runs", headers={"Cookie": f"{COOKIE}={kept}"})
        assert ended.status_code == 401
        assert "the session was ended (signed out)" in ended.json()["detail"]
        await sign_in(http, alice)
        assert (await http.get("/api/v1/runs")).status_code == 200
        admin = await user_token(db, initialised, "admin", admin=True)
        await http.post(f"/api/v1/users/{alice}/disable",
                        headers={"Authorization": f"Bearer {admin}"})
        gone = await http.get("/api/v1/runs")
        assert gone.status_code == 401
        assert f"user {alice!r} is disabled" in gone.json()["detail"]
        again = await sign_in(http, alice)
        assert again.status_code == 401  # and no new session


async def test_a_failed_sign_in_says_nothing_of_why(web_app: FastAPI, alice: str,
                                                    db: asyncpg.Connection) -> None:
    nopass = await add_user(db, "nopass")
    async with browser(web_app) as http:
        answers = [await sign_in(http, user, password) for user, password in
                   [(alice, "wrong password!!"), ("nobody-at-all", PASSWORD),
                    (nopass, PASSWORD), (alice, "")]]
    assert [a.status_code for a in answers] == [401] * 4
    assert len({a.text for a in answers}) == 1
    assert "Wrong user name or password." in answers[0].text
    assert not any("set-cookie" in a.headers for a in answers)


@pytest.mark.parametrize("target", ["//evil.test/x", "https://evil.test", "\\\\evil.test",
                                    "javascript:alert(1)", ""])
async def test_next_never_leads_off_the_site(web_app: FastAPI, alice: str,
                                             target: str) -> None:
    async with browser(web_app) as http:
        answer = await sign_in(http, alice, target=target)
        assert answer.headers["location"] == "/"
        page = await http.get("/login", params={"next": '/x"><script>y</script>'})
    assert "<script>y" not in page.text
    assert 'value="/x&quot;&gt;&lt;script&gt;y&lt;/script&gt;"' in page.text


async def test_a_sign_in_form_of_many_fields_is_refused_clearly(web_app: FastAPI) -> None:
    async with browser(web_app) as http:
        answer = await http.post("/auth/login",
                                 content="&".join(f"f{i}=x" for i in range(20)),
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 400, answer.text  # not a 500 from the form's parser
    assert answer.json()["detail"] == ("a sign-in form has at most 8 fields (username, "
                                       "password, next)")


async def test_signing_in_from_another_site_is_refused(web_app: FastAPI, alice: str) -> None:
    async with browser(web_app) as http:
        answer = await http.post("/auth/login", data={"username": alice, "password": PASSWORD},
                                 headers={"Origin": "https://evil.test"})
    assert answer.status_code == 403
    assert COOKIE not in answer.headers.get("set-cookie", "")


async def test_a_page_without_a_session_asks_for_a_sign_in(web_app: FastAPI) -> None:
    async with browser(web_app) as http:
        answer = await http.get("/runs/some-run/charts")
        assert (answer.status_code, answer.headers["location"]) == (
            303, "/login?next=/runs/some-run/charts")
        login = await http.get("/login", params={"next": "/runs/some-run/charts"})
    assert login.status_code == 200
    assert 'value="/runs/some-run/charts"' in login.text
    assert login.headers["content-security-policy"].startswith("default-src 'none'")


async def test_a_new_password_ends_the_sessions_of_the_old_one(web_app: FastAPI, alice: str,
                                                               db: asyncpg.Connection) -> None:
    async with browser(web_app) as http:
        await sign_in(http, alice)
        assert (await http.get("/api/v1/runs")).status_code == 200
        await passwords.set_password(db, alice, "another long password")
        ended = await http.get("/api/v1/runs")
        assert ended.status_code == 401
        assert "the session was ended" in ended.json()["detail"]
        assert (await sign_in(http, alice, "another long password")).status_code == 303


async def test_the_login_page_says_nothing_a_link_asks_it_to(web_app: FastAPI) -> None:
    async with browser(web_app) as http:
        page = await http.get("/login", params={"error": "Call +1 555 0100 to unlock",
                                                "notice": "x"})
    assert "555" not in page.text
    assert 'class="error"' not in page.text
