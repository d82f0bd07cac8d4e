"""Runs and their attempts over HTTP: list runs, create one, describe it; start and end its
attempts, list them and the members an attempt's telemetry came from. Reading needs a
viewer of the run's project, creating and starting or ending an editor.

Control-plane refusals propagate as typed errors; ``tuneplane.web.exceptions`` answers them.
"""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from tuneplane.controlplane import projects
from tuneplane.controlplane import runs as run_management
from tuneplane.controlplane.projects import Role
from tuneplane.web import models
from tuneplane.web.auth.access import Editor, Viewer, Who, require
from tuneplane.web.dependencies import Now, Pool
from tuneplane.web.read import listings, run_columns, run_table
from tuneplane.web.routes.params import AttemptNo, ListLimit

router = APIRouter(prefix="/api/v1")


@router.get("/runs", response_model=list[models.Run])
async def runs(who: Who, pool: Pool, after: str | None = None,
               limit: Annotated[int, Query(ge=1, le=500)] = 100) -> list[dict[str, Any]]:
    """Runs with telemetry, of the projects the caller may view."""
    async with pool.acquire() as conn:
        return await listings.runs(conn, after=after, limit=limit, projects=who.projects())


@router.get("/run-table", response_model=models.RunTable)
async def table(who: Who, pool: Pool,
                q: Annotated[str | None, Query(max_length=128,
                                               description="part of the run id")] = None,
                project: Annotated[str | None, Query(max_length=64)] = None,
                state: Annotated[list[run_table.State] | None, Query(max_length=8)] = None,
                time: run_table.TimeField = "created",
                since: datetime | None = None, until: datetime | None = None,
                sort: run_table.Sort = "created", dir: run_table.Direction = "desc",
                limit: Annotated[int, Query(ge=1, le=500)] = 50,
                offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
                col: Annotated[list[str] | None, Query(
                    max_length=run_columns.MAX_COLUMNS,
                    description="added columns of the latest attempt: config:KEY (a "
                                "setting) or metric:TAG:last|min|max (a series' summary, by "
                                "tag or canonical name); sort by the i-th as sort=col<i>")
                ] = None,
                filter: Annotated[list[str] | None, Query(
                    max_length=run_columns.MAX_COLUMNS,
                    description="on added columns: <i><op><value>, op one of "
                                "= != < <= > >= ~ (0>=0.001, 1=adam, 1~res)")] = None,
                ) -> models.RunTable:
    """The runs table of the Runs page: every run of the projects the caller may view,
    created ones without telemetry too; searched, filtered, sorted and paged, with added
    columns of settings and series summaries."""
    try:
        columns = tuple(run_columns.Column.parse(c) for c in col or ())
        filters = tuple(run_columns.Filter.parse(f, len(columns)) for f in filter or ())
        query = run_table.Query(who.projects(), q, project, tuple(state or ()), time, since,
                                until, sort, dir, limit, offset, columns, filters)
        async with pool.acquire() as conn:
            rows, total = await run_table.page(conn, query)
    except run_columns.ColumnError as exc:
        raise HTTPException(422, str(exc)) from None
    return models.RunTable.model_validate({"runs": rows, "total": total,
                                           "columns": [c.spec for c in columns]})


@router.get("/run-columns", response_model=models.RunColumns)
async def columns_offered(who: Who, pool: Pool,
                          project: Annotated[str | None, Query(max_length=64)] = None
                          ) -> models.RunColumns:
    """What the runs table may add as columns, for the runs the caller may view (of
    ``project``): settings' keys, series tags and canonical names, each sorted and bounded."""
    async with pool.acquire() as conn:
        found = await run_columns.offered(conn, who.projects(), project)
    return models.RunColumns(config=found["config"], metrics=found["metric"],
                             names=found["name"])


@router.post("/runs", status_code=201, response_model=models.RunCreated)
async def create_run(who: Who, pool: Pool, now: Now,
                     body: models.RunCreate) -> models.RunCreated:
    """Create a run in a project the caller edits, with its integration artifact (checked
    against its schema)."""
    async with pool.acquire() as conn:
        known = await projects.exists(conn, body.project)
        require(who, body.project if known else None, Role.EDITOR, f"project {body.project!r}")
        run_id = await run_management.create_run(conn, body.integration, created_by=who.name,
                                                  now=now, run_id=body.run_id,
                                                  project=body.project)
    return models.RunCreated(run_id=run_id)


@router.get("/runs/{run_id}", response_model=models.ManagedRun)
async def run_detail(_: Viewer, pool: Pool, run_id: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        found = await run_management.describe(conn, run_id)
    if found is None:
        raise HTTPException(404, f"no run {run_id!r} was created here")
    return found


@router.post("/runs/{run_id}/attempts", status_code=201, response_model=models.AttemptStarted)
async def start_attempt(_: Editor, pool: Pool, run_id: str) -> models.AttemptStarted:
    """Start the run's next attempt; its metric mapping is frozen from the artifact."""
    async with pool.acquire() as conn:
        attempt = await run_management.start_attempt(conn, run_id)
    return models.AttemptStarted(run_id=run_id, attempt=attempt)


@router.post("/runs/{run_id}/attempts/{attempt}/end", response_model=models.Ended)
async def end_attempt(_: Editor, pool: Pool, run_id: str, attempt: AttemptNo,
                      body: models.End) -> models.Ended:
    async with pool.acquire() as conn:
        ended = await run_management.end_attempt(conn, run_id, attempt, body.state)
    return models.Ended(ended=ended)


@router.get("/runs/{run_id}/attempts", response_model=list[models.Attempt])
async def attempts(_: Viewer, pool: Pool, run_id: str) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        found = await listings.attempts(conn, run_id)
    if not found:
        raise HTTPException(404, f"no run {run_id!r}")
    return found


@router.get("/runs/{run_id}/attempts/{attempt}/members", response_model=list[models.Member])
async def members(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo,
                  limit: ListLimit = 1000,
                  ) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await listings.members(conn, run_id, attempt, limit)


@router.get("/runs/{run_id}/attempts/{attempt}/late", response_model=list[models.LateBatch])
async def late(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo,
               limit: ListLimit = 1000,
               ) -> list[dict[str, Any]]:
    """The attempt's batches delivered late (``tuneplane-collector deliver``), by member."""
    async with pool.acquire() as conn:
        return await listings.late(conn, run_id, attempt, limit)
