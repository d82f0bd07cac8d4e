"""A one-time sign-in link in the browser flow: its page asks to continue and spends
nothing; continuing starts a session (the same cookie a password gives) and leads to the
link's path; a second use, a foreign origin, or no link at all is refused with a reason."""

from __future__ import annotations

import datetime as dt
import gc
import logging
import re
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from tests.support.credentials import add_user
from tuneplane.controlplane import sign_in_links
from tuneplane.web import cli
from tuneplane.web.auth.browser import COOKIE

SITE = "https://tuneplane-web"


def browser(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SITE)


async def new_link(db: asyncpg.Connection, target: str = "/runs/r/charts") -> tuple[str, str]:
    user = await add_user(db, "linked", roles={"default": "viewer"})
    return user, await sign_in_links.issue(db, user, target, now=dt.datetime.now(dt.UTC))


async def test_the_page_spends_nothing_and_continuing_signs_in(web_app: FastAPI,
                                                               db: asyncpg.Connection) -> None:
    user, secret = await new_link(db)
    async with browser(web_app) as http:
        for _ in range(2):  # a preview or a prefetch of the link uses nothing up
            page = await http.get("/auth/link", params={"link": secret})
            assert page.status_code == 200
            assert page.headers["cache-control"] == "no-store"
            assert COOKIE not in page.headers.get("set-cookie", "")
        form = re.search(r'<form method="post" action="/auth/link">', page.text)
        assert form is not None
        assert f'value="{secret}"' in page.text
        answer = await http.post("/auth/link", data={"link": secret},
                                 headers={"Origin": SITE})
        assert (answer.status_code, answer.headers["location"]) == (303, "/runs/r/charts")
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=")
        assert "HttpOnly" in cookie
        assert "Secure" in cookie
        session = (await http.get("/auth/session")).json()
        assert (session["user"], session["projects"]) == (user, {"default": "viewer"})


async def test_a_link_works_once(web_app: FastAPI, db: asyncpg.Connection) -> None:
    _, secret = await new_link(db)
    async with browser(web_app) as http:
        assert (await http.post("/auth/link", data={"link": secret})).status_code == 303
    async with browser(web_app) as other:
        again = await other.post("/auth/link", data={"link": secret})
        assert again.status_code == 410
        assert "was used already" in again.text
        assert COOKIE not in again.headers.get("set-cookie", "")
        assert (await other.get("/api/v1/runs")).status_code == 401


async def test_another_site_cannot_spend_a_link(web_app: FastAPI,
                                                db: asyncpg.Connection) -> None:
    _, secret = await new_link(db)
    async with browser(web_app) as http:
        foreign = await http.post("/auth/link", data={"link": secret},
                                  headers={"Origin": "https://evil.test"})
        assert foreign.status_code == 403
        assert "https://evil.test" in foreign.json()["detail"]
        # Still unspent: the page's own form goes through.
        assert (await http.post("/auth/link", data={"link": secret})).status_code == 303


async def test_no_link_or_a_malformed_one_says_so(web_app: FastAPI) -> None:
    async with browser(web_app) as http:
        bare = await http.get("/auth/link")
        assert bare.status_code == 400
        assert "carries no sign-in link" in bare.text
        huge = await http.get("/auth/link", params={"link": "x" * 500})
        assert huge.status_code == 400
        hostile = await http.get("/auth/link", params={"link": '"><script>x()</script>'})
        assert "<script>x()" not in hostile.text
        empty = await http.post("/auth/link", data={})
        assert empty.status_code == 400
        assert "carries no sign-in link" in empty.text
        many = await http.post("/auth/link", content="&".join(f"f{i}=1" for i in range(20)),
                               headers={"content-type": "application/x-www-form-urlencoded"})
        assert many.status_code == 400
        unknown = await http.post("/auth/link", data={"link": "a" * 43})
        assert unknown.status_code == 410
        assert "unknown" in unknown.text


async def test_the_page_names_whom_it_signs_in_and_out(web_app: FastAPI,
                                                       db: asyncpg.Connection) -> None:
    # Login CSRF with one click: a tenant holding a link of their own account sends its
    # address to someone signed in here; Continue must not swap their session for the
    # tenant's without saying so (what they then upload or set would be the tenant's).
    tenant, secret = await new_link(db)
    victim = await add_user(db, "victim")
    own = await sign_in_links.issue(db, victim, "/", now=dt.datetime.now(dt.UTC))
    async with browser(web_app) as http:
        assert (await http.post("/auth/link", data={"link": own})).status_code == 303
        page = await http.get("/auth/link", params={"link": secret})
        assert page.status_code == 200
        assert f"as <strong>{tenant}</strong>" in page.text
        assert f"signed in as <strong>{victim}</strong>" in page.text
        assert (await http.get("/auth/session")).json()["user"] == victim  # nothing spent
    async with browser(web_app) as fresh:
        page = await fresh.get("/auth/link", params={"link": secret})
        assert f"as <strong>{tenant}</strong>" in page.text
        assert "signed in as" not in page.text
        spent = await fresh.get("/auth/link", params={"link": own})
        assert spent.status_code == 410
        assert victim not in spent.text
        assert "Continue" not in spent.text


@pytest.fixture
def uvicorn_logging() -> Iterator[None]:
    """uvicorn's loggers as they were, once the test configured them as tuneplane-web does."""
    names = ("uvicorn", "uvicorn.error", "uvicorn.access")
    kept = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).filters[:],
                logging.getLogger(n).level, logging.getLogger(n).propagate) for n in names}
    yield
    for name, (handlers, filters, level, propagate) in kept.items():
        logger = logging.getLogger(name)
        logger.handlers[:], logger.filters[:] = handlers, filters
        logger.level, logger.propagate = level, propagate


def test_the_access_log_never_holds_a_link(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str],
                                           uvicorn_logging: None) -> None:
    # The link page spends nothing, so a secret written to the log stays good for minutes:
    # whoever reads the log (a world-readable file, a log collector) could spend it first.
    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: served.update(kwargs))
    monkeypatch.setattr(gc, "freeze", lambda: None)
    monkeypatch.setenv("TUNEPLANE_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    monkeypatch.setenv("TUNEPLANE_WEB_JWT_SECRET", "a-secret-of-enough-length")
    assert cli.main(["--host", "127.0.0.1", "--port", "1"]) == 0
    uvicorn.Config("tuneplane.web.app:create_app", **served)  # logging, as uvicorn sets it
    capsys.readouterr()
    secret = "S3cr3t-" + "x" * 36
    for target in (f"/auth/link?link={secret}", f"/auth/link?a=1&%6Cink={secret}&b=2"):
        # uvicorn's access line (uvicorn.protocols.http.h11_impl / httptools_impl)
        logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5",
                                                 "GET", target, "1.1", 200)
    logged = capsys.readouterr()
    assert "GET /auth/link?" in logged.out
    assert secret not in logged.out + logged.err
