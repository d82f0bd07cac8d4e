"""The web application over the real PostgreSQL and S3: in this process (``web_app``, and
clients of it through ``httpx.ASGITransport``) for API tests (the real tuneplane-web
process, ``web`` and ``base_url``, and ``user_token`` are the root conftest's); an admin's
token and clients as a user and as an admin."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from tests.support.credentials import new_user_token
from tests.support.environment import Endpoints
from tests.support.web import Connect
from tuneplane.web.app import create_app
from tuneplane.web.auth.oidc_settings import OidcSettings
from tuneplane.web.settings import WebSettings


@pytest.fixture(scope="session")
async def web_app(initialised: Endpoints) -> AsyncIterator[FastAPI]:
    """The app with its lifespan entered (ASGITransport does not run it), as tuneplane-web
    would build it from the environment."""
    app = create_app(WebSettings(database_url=initialised.database_url,
                                 jwt_secret=initialised.jwt_secret,
                                 s3_endpoint=initialised.s3_endpoint,
                                 s3_bucket=initialised.s3_bucket, oidc=OidcSettings()))
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
def api(web_app: FastAPI) -> Connect:
    """Clients of the in-process app: ``api(token, path="/api/v1")``; no token, anonymous."""
    def connect(token: str | None = None, path: str = "") -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=web_app),
                                 base_url=f"http://tuneplane-web{path}", headers=headers)
    return connect


@pytest.fixture(scope="session")
def admin_token(initialised: Endpoints) -> str:
    return new_user_token(initialised, "admin", admin=True)


@pytest.fixture
async def client(api: Connect, user_token: str) -> AsyncIterator[httpx.AsyncClient]:
    """The in-process API as a (non-admin) user."""
    async with api(user_token) as c:
        yield c


@pytest.fixture
async def admin(api: Connect, admin_token: str) -> AsyncIterator[httpx.AsyncClient]:
    """The in-process API as an admin."""
    async with api(admin_token) as c:
        yield c
