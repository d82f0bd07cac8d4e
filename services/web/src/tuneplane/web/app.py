"""The web application assembled: ``create_app`` builds it from ``WebSettings`` (its
state opened in the lifespan, the admission middleware, the exception handlers and one
router per resource, in ``tuneplane.web.routes``).

(No ``from __future__ import annotations``: ``WebSettings``' field types stay real types.)
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI

from tuneplane.common.tokens import TokenSigner
from tuneplane.web import admission, exceptions, state
from tuneplane.web.routes import destinations, launches, pages, reporting, rich, runs, series


@dataclass(frozen=True, slots=True)
class WebSettings:
    database_url: str
    jwt_secret: str
    s3_endpoint: str | None = None
    s3_bucket: str | None = None
    max_points_cap: int = 10_000
    max_series_cap: int = 100
    unpack_budget: int = 200_000
    concurrent_queries: int = 16
    pool_size: int = 8
    #: uPlot's dist folder, installed by ``npm ci --prefix services/web/ui``.
    uplot_dir: Path = Path(__file__).resolve().parents[3] / "ui" / "node_modules" / "uplot" / "dist"


def create_app(settings: WebSettings) -> FastAPI:
    signer = TokenSigner(settings.jwt_secret)  # a bad secret fails here, not at startup

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with state.opened(settings, signer) as web:
            app.state.web = web
            yield

    app = FastAPI(title="Tuneplane telemetry", version="1", lifespan=lifespan,
                  exception_handlers=exceptions.HANDLERS,
                  description="Bounded queries over training telemetry. Every call but "
                              "/healthz needs a user token: `Authorization: Bearer <token>`.")
    app.middleware("http")(admission.admit)
    app.include_router(reporting.router)
    app.include_router(destinations.router)
    app.include_router(launches.router)
    app.include_router(pages.router(settings.uplot_dir))
    app.include_router(runs.router)
    app.include_router(series.router(max_points_cap=settings.max_points_cap,
                                     max_series_cap=settings.max_series_cap))
    app.include_router(rich.router)
    return app
