"""Security headers on every answer: pages, API answers and refusals; HSTS only over TLS;
no API docs page pulling assets from a CDN (no services needed)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI, HTTPException

from tuneplane.web.auth.headers import HEADERS, HSTS, SecurityHeaders


def app() -> FastAPI:
    application = FastAPI(docs_url=None, redoc_url=None)

    @application.get("/ok")
    async def ok() -> dict[str, str]:
        return {"ok": "yes"}

    @application.get("/refused")
    async def refused() -> None:
        raise HTTPException(403, "no")

    application.add_middleware(SecurityHeaders)
    return application


@pytest.mark.parametrize(("path", "status"), [("/ok", 200), ("/refused", 403),
                                              ("/absent", 404)])
@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_every_answer_carries_the_headers(path: str, status: int, scheme: str) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app()),
                                 base_url=f"{scheme}://test") as client:
        response = await client.get(path)
    assert response.status_code == status
    for name, value in HEADERS.items():
        assert response.headers[name] == value
    assert response.headers.get("strict-transport-security") == (
        HSTS if scheme == "https" else None)


def test_the_policy_allows_only_this_origin_and_no_inline_code() -> None:
    policy = dict(part.split(" ", 1) for part in HEADERS["Content-Security-Policy"].split("; "))
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["img-src"] == "'self' data:"  # records' images from here; the empty icon
    assert policy["media-src"] == "'self'"
    assert not any("unsafe" in value or "*" in value or "http" in value
                   for value in policy.values())


async def test_the_web_app_serves_no_cdn_docs_but_its_openapi_document() -> None:
    from tuneplane.web.app import create_app
    from tuneplane.web.settings import WebSettings
    settings = WebSettings.from_environ({
        "TUNEPLANE_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "TUNEPLANE_WEB_JWT_SECRET": "a-secret-of-enough-length"})
    application = create_app(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application),
                                 base_url="http://test") as client:
        for path in ("/docs", "/redoc"):
            assert (await client.get(path)).status_code == 404
        document = await client.get("/openapi.json")
    assert document.status_code == 200
    assert "/api/v1/runs" in document.json()["paths"]
    assert document.headers["x-content-type-options"] == "nosniff"
