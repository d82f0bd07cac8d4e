"""The web application assembled: ``create_app`` builds it from ``WebSettings`` (its
state opened in the lifespan, the admission middleware bounding bodies, security headers
on every answer, the exception handlers and one router per resource, in
``tuneplane.web.routes``)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from tuneplane.common.tokens import TokenSigner
from tuneplane.web import exceptions, metrics, openapi, state
from tuneplane.web.auth import admission, headers
from tuneplane.web.routes import (
    auth,
    charts,
    deletions,
    destinations,
    export,
    launches,
    links,
    media,
    oidc,
    pages,
    projects,
    reporting,
    rich,
    rich_data,
    runs,
    series,
    tokens,
    users,
)
from tuneplane.web.settings import WebSettings


def create_app(settings: WebSettings) -> FastAPI:
    signer = TokenSigner(settings.jwt_secret)  # a bad secret fails here, not at startup

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with state.opened(settings, signer) as web:
            app.state.web = web
            yield

    # No /docs or /redoc: their assets come from a CDN, which the policy (and a machine
    # without the internet) refuses. The document itself is served at /openapi.json.
    app = FastAPI(title="Tuneplane telemetry", version="1", lifespan=lifespan,
                  exception_handlers=exceptions.HANDLERS, docs_url=None, redoc_url=None,
                  description="Bounded queries over training telemetry. Every call but "
                              "/healthz needs a user token: `Authorization: Bearer <token>`.")
    app.add_middleware(admission.Admission, max_body=settings.max_body_bytes,
                       limits=reporting.BODY_LIMITS, signer=signer)
    app.add_middleware(headers.SecurityHeaders)  # on every answer, refusals too
    app.add_middleware(metrics.RouteTimer)  # outermost: every request counted and timed
    # Routes are matched in the order they are included: the charts' own first (every chart
    # drawn asks them; no path of theirs is another route's too).
    app.include_router(series.router(max_points_cap=settings.max_points_cap,
                                     max_series_cap=settings.max_series_cap))
    app.include_router(charts.router)
    app.include_router(reporting.router)
    app.include_router(destinations.router)
    app.include_router(launches.router)
    app.include_router(pages.router(settings.uplot_dir))
    pages.mount(app, settings.uplot_dir)
    app.include_router(runs.router)
    app.include_router(deletions.router)
    app.include_router(rich.router)
    app.include_router(rich_data.router)
    app.include_router(media.router)
    app.include_router(export.router)
    app.include_router(projects.router)
    app.include_router(users.router)
    app.include_router(tokens.router)
    app.include_router(auth.router)
    app.include_router(links.router)
    app.include_router(oidc.router)
    openapi.install(app)
    return app
