"""The web API: bounded, authenticated queries over the read models.

(No ``from __future__ import annotations`` here: FastAPI reads the route signatures,
whose annotated types are built inside ``create_app`` from the settings' caps.)
"""

import asyncio
import datetime as dt
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import asyncpg
import orjson
from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from tuneplane.common import objectstore
from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner
from tuneplane.controlplane import errors, mapping, users
from tuneplane.controlplane import runs as run_management
from tuneplane.telemetry.v1.integration import IntegrationError
from tuneplane.telemetry.v1.names import json_number
from tuneplane.web import destinations, launches, models, queries, reporting
from tuneplane.web.downsample import METHOD, Answer


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


def series_data(ref: dict[str, Any], result: Answer, lo: int, hi: int) -> dict[str, Any]:
    """A ``models.SeriesData`` as plain data: large answers skip per-bucket model objects."""
    return {
        "member": ref["member"], "source": ref["source"], "tag": ref["tag"], "step_min": lo,
        "step_max": hi, "reduced": result.reduced, "method": METHOD if result.reduced else None,
        "points_in_range": result.points_in_range, "points_returned": result.points_returned,
        "points": [(s, w, json_number(v)) for s, w, v in result.points],
        "buckets": [{"step_lo": b.step_lo, "step_hi": b.step_hi, "count": b.count,
                     "min": b.min, "max": b.max, "last": json_number(b.last)}
                    for b in result.buckets]}


def json_response(data: dict[str, Any]) -> Response:
    """Serialised by orjson, without re-validation: the shapes are the declared models'."""
    return Response(orjson.dumps(data), media_type="application/json")


def series_refs(items: tuple[mapping.SeriesRef, ...]) -> list[models.SeriesRef]:
    return [models.SeriesRef(member=r.member, source=r.source, tag=r.tag) for r in items]


def create_app(settings: WebSettings) -> FastAPI:
    signer = TokenSigner(settings.jwt_secret)
    state: dict[str, Any] = {}
    slots = asyncio.Semaphore(settings.concurrent_queries)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state["pool"] = await asyncpg.create_pool(settings.database_url, min_size=1,
                                                  max_size=settings.pool_size)
        if settings.s3_endpoint and settings.s3_bucket:
            state["s3"] = objectstore.s3_client(settings.s3_endpoint)
        yield
        await state["pool"].close()

    app = FastAPI(title="Tuneplane telemetry", version="1", lifespan=lifespan,
                  description="Bounded queries over training telemetry. Every call but "
                              "/healthz needs a user token: `Authorization: Bearer <token>`.")

    @app.exception_handler(asyncpg.DataError)
    async def bad_value(request: Request, exc: asyncpg.DataError) -> Response:
        return JSONResponse({"detail": f"a parameter PostgreSQL cannot take: {exc}"},
                            status_code=400)

    @app.middleware("http")
    async def bounded(request: Request,
                      call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if "\x00" in request.url.path or any("\x00" in v for v in request.query_params.values()):
            return JSONResponse({"detail": "NUL characters are not allowed in a path or "
                                           "parameter"}, status_code=400)
        if slots.locked():
            return JSONResponse({"detail": "too many queries in flight; retry shortly"},
                                status_code=503, headers={"Retry-After": "1"})
        async with slots:
            return await call_next(request)

    bearer = HTTPBearer(auto_error=False)

    async def user(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                          Depends(bearer)]) -> str:
        if credentials is None:
            raise HTTPException(401, "a user token is required",
                                headers={"WWW-Authenticate": "Bearer"})
        try:
            claims = signer.verify(credentials.credentials, TokenKind.USER, now=time.time())
        except TokenError as exc:
            raise HTTPException(401, f"user token refused: {exc}",
                                headers={"WWW-Authenticate": "Bearer"}) from None
        async with state["pool"].acquire() as conn:
            if not await users.exists(conn, str(claims["sub"])):
                raise HTTPException(401, "the token's user no longer exists",
                                    headers={"WWW-Authenticate": "Bearer"})
        return str(claims["sub"])

    User = Annotated[str, Depends(user)]
    MaxPoints = Annotated[int, Query(ge=2, le=settings.max_points_cap,
                                     description="points or buckets per series at most")]
    Step = Annotated[int | None, Query(ge=-(2**63), le=2**63 - 1)]
    AttemptNo = Annotated[int, PathParam(ge=1, le=2**31 - 1)]

    app.include_router(reporting.router(signer, lambda: state["pool"]))
    app.include_router(destinations.router(user, lambda: state["pool"]))
    app.include_router(launches.router(user, lambda: state["pool"]))

    static = Path(__file__).resolve().parent / "static"
    app.mount("/static", StaticFiles(directory=static), name="static")
    if settings.uplot_dir.is_dir():
        app.mount("/ui/uplot", StaticFiles(directory=settings.uplot_dir), name="uplot")

    @app.get("/runs/{run_id}/charts", include_in_schema=False)
    async def charts(run_id: str) -> Response:
        """The Charts tab (the page asks the API, with the user's token, for its data)."""
        if not settings.uplot_dir.is_dir():
            return JSONResponse({"detail": f"the charting library is not installed at "
                                           f"{settings.uplot_dir}: run `npm ci --prefix "
                                           "services/web/ui`"}, status_code=503)
        return FileResponse(static / "charts.html", media_type="text/html")

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/api/v1/runs", response_model=list[models.Run])
    async def runs(_: User, after: str | None = None,
                   limit: Annotated[int, Query(ge=1, le=500)] = 100) -> list[dict[str, Any]]:
        async with state["pool"].acquire() as conn:
            return await queries.records(conn, queries.RUNS, after, limit)

    @app.post("/api/v1/runs", status_code=201, response_model=models.RunCreated)
    async def create_run(who: User, body: models.RunCreate) -> models.RunCreated:
        """Create a run with its integration artifact (checked against its schema)."""
        async with state["pool"].acquire() as conn:
            try:
                run_id = await run_management.create_run(
                    conn, body.integration, created_by=who, now=dt.datetime.now(dt.UTC),
                    run_id=body.run_id)
            except (errors.RunError, IntegrationError) as exc:
                raise HTTPException(409 if "exists" in str(exc) else 422, str(exc)) from None
        return models.RunCreated(run_id=run_id)

    @app.get("/api/v1/runs/{run_id}", response_model=models.ManagedRun)
    async def run_detail(_: User, run_id: str) -> dict[str, Any]:
        async with state["pool"].acquire() as conn:
            found = await run_management.describe(conn, run_id)
        if found is None:
            raise HTTPException(404, f"no run {run_id!r} was created here")
        return found

    @app.post("/api/v1/runs/{run_id}/attempts", status_code=201,
              response_model=models.AttemptStarted)
    async def start_attempt(_: User, run_id: str) -> models.AttemptStarted:
        """Start the run's next attempt; its metric mapping is frozen from the artifact."""
        async with state["pool"].acquire() as conn:
            try:
                attempt = await run_management.start_attempt(conn, run_id)
            except errors.RunError as exc:
                raise HTTPException(404 if "no run" in str(exc) else 409, str(exc)) from None
        return models.AttemptStarted(run_id=run_id, attempt=attempt)

    @app.post("/api/v1/runs/{run_id}/attempts/{attempt}/end", response_model=models.Ended)
    async def end_attempt(_: User, run_id: str, attempt: AttemptNo,
                          body: models.End) -> models.Ended:
        async with state["pool"].acquire() as conn:
            try:
                ended = await run_management.end_attempt(conn, run_id, attempt, body.state)
            except errors.RunError as exc:
                raise HTTPException(404 if "no attempt" in str(exc) else 409, str(exc)) from None
        return models.Ended(ended=ended)

    @app.get("/api/v1/runs/{run_id}/attempts", response_model=list[models.Attempt])
    async def attempts(_: User, run_id: str) -> list[dict[str, Any]]:
        async with state["pool"].acquire() as conn:
            found = await queries.records(conn, queries.ATTEMPTS, run_id)
        if not found:
            raise HTTPException(404, f"no run {run_id!r}")
        return found

    @app.get("/api/v1/runs/{run_id}/attempts/{attempt}/members",
             response_model=list[models.Member])
    async def members(_: User, run_id: str, attempt: AttemptNo,
                      limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
                      ) -> list[dict[str, Any]]:
        async with state["pool"].acquire() as conn:
            return await queries.records(conn, queries.MEMBERS, run_id, attempt, limit)

    @app.get("/api/v1/runs/{run_id}/attempts/{attempt}/series",
             response_model=list[models.Series])
    async def series(_: User, run_id: str, attempt: AttemptNo,
                     member: str | None = None, source: str | None = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[dict[str, Any]]:
        async with state["pool"].acquire() as conn:
            rows = await queries.records(conn, queries.SERIES, run_id, attempt, member, source,
                                         limit)
        return [{k: v for k, v in r.items() if k != "series_id"} for r in rows]

    @app.get("/api/v1/runs/{run_id}/attempts/{attempt}/scalars",
             response_model=models.SeriesData)
    async def scalars(_: User, run_id: str, attempt: AttemptNo, member: str, source: str, tag: str,
                      step_min: Step = None, step_max: Step = None,
                      max_points: MaxPoints = 2000) -> Response:
        """Raw scalars of one source's tag for one member: the inspector's view."""
        async with state["pool"].acquire() as conn:
            series_id = await conn.fetchval(queries.SERIES_ID, run_id, attempt, member, source,
                                            tag)
            if series_id is None:
                raise HTTPException(404, f"no series {member}/{source}/{tag} in run {run_id!r} "
                                         f"attempt {attempt}")
            result, lo, hi = await queries.series_answer(conn, series_id, step_min, step_max,
                                                         max_points, settings.unpack_budget)
        return json_response(series_data({"member": member, "source": source, "tag": tag},
                                         result, lo, hi))

    @app.get("/api/v1/runs/{run_id}/attempts/{attempt}/canonical",
             response_model=models.CanonicalIndex)
    async def canonical_index(_: User, run_id: str, attempt: AttemptNo) -> models.CanonicalIndex:
        async with state["pool"].acquire() as conn:
            frozen = await mapping.frozen_mapping(conn, run_id, attempt)
            resolution = await mapping.canonical(conn, run_id, attempt)
        return models.CanonicalIndex(
            mapping_frozen=frozen is not None,
            curves=[{"name": c.name, "goal": c.goal, "unit": c.unit, "aggregate": c.aggregate}
                    for c in resolution.curves],
            unmapped=series_refs(resolution.unmapped),
            not_owner=series_refs(resolution.not_owner))

    @app.get("/api/v1/runs/{run_id}/attempts/{attempt}/curves/{name}",
             response_model=models.CanonicalCurve)
    async def curve(_: User, run_id: str, attempt: AttemptNo, name: str, step_min: Step = None,
                    step_max: Step = None, max_points: MaxPoints = 2000,
                    max_series: Annotated[int, Query(ge=1, le=settings.max_series_cap)] = 20,
                    ) -> Response:
        """A canonical curve through the attempt's frozen mapping: one series per member."""
        async with state["pool"].acquire() as conn:
            resolution = await mapping.canonical(conn, run_id, attempt)
            found = [c for c in resolution.curves if c.name == name]
            if not found:
                raise HTTPException(404, f"no canonical curve {name!r} in run {run_id!r} attempt "
                                         f"{attempt} (is its mapping frozen?)")
        chosen = found[0]

        async def one(ref: mapping.SeriesRef) -> dict[str, Any]:
            async with state["pool"].acquire() as conn:  # members read side by side
                series_id = await conn.fetchval(queries.SERIES_ID, run_id, attempt, ref.member,
                                                ref.source, ref.tag)
                result, lo, hi = await queries.series_answer(
                    conn, series_id, step_min, step_max, max_points, settings.unpack_budget)
            return series_data({"member": ref.member, "source": ref.source, "tag": ref.tag},
                               result, lo, hi)

        data = await asyncio.gather(*(one(ref) for ref in chosen.series[:max_series]))
        return json_response({"name": chosen.name, "goal": chosen.goal, "unit": chosen.unit,
                              "aggregate": chosen.aggregate, "series": data,
                              "series_total": len(chosen.series)})

    @app.get("/api/v1/runs/{run_id}/attempts/{attempt}/rich",
             response_model=list[models.RichRecord])
    async def rich(_: User, run_id: str, attempt: AttemptNo, member: str | None = None,
                   source: str | None = None, tag: str | None = None, from_step: Step = None,
                   limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
        async with state["pool"].acquire() as conn:
            return await queries.records(conn, queries.RICH, run_id, attempt, member, source,
                                         tag, from_step if from_step is not None else -(2**63),
                                         limit)

    @app.get("/api/v1/rich/{object_key:path}", response_class=Response,
             responses={200: {"content": {"application/octet-stream": {}}}})
    async def download(_: User, object_key: str) -> Response:
        async with state["pool"].acquire() as conn:
            known = await conn.fetchval("SELECT 1 FROM rich_records WHERE object_key = $1 "
                                        "LIMIT 1", object_key)
        if not known:
            raise HTTPException(404, f"no rich record stored as {object_key!r}")
        if "s3" not in state:
            raise HTTPException(503, "no object store configured (TUNEPLANE_S3_ENDPOINT)")
        body = await asyncio.to_thread(
            lambda: state["s3"].get_object(Bucket=settings.s3_bucket, Key=object_key)["Body"]
            .read())
        return Response(body, media_type="application/octet-stream")

    return app
