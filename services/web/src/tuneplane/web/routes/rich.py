"""Rich records over HTTP: an attempt's images, audio, text and other non-scalar records
listed from PostgreSQL, and one record's bytes downloaded from the object store.

A download names the object key a listing gave; keys no rich record has are refused (404)
before the object store is asked, so the API never serves other objects of its bucket.
"""

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response

from tuneplane.controlplane import projects
from tuneplane.web import models, queries
from tuneplane.web.access import Viewer, Who
from tuneplane.web.dependencies import Objects, Pool
from tuneplane.web.routes.params import AttemptNo, Step

router = APIRouter(prefix="/api/v1")

#: Where a listing starts when no ``from_step`` is given: the smallest step there is.
FIRST_STEP = -(2**63)


@router.get("/runs/{run_id}/attempts/{attempt}/rich", response_model=list[models.RichRecord])
async def rich(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo, member: str | None = None,
               source: str | None = None, tag: str | None = None, from_step: Step = None,
               limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await queries.records(conn, queries.RICH, run_id, attempt, member, source, tag,
                                     FIRST_STEP if from_step is None else from_step, limit)


@router.get("/rich/{object_key:path}", response_class=Response,
            responses={200: {"content": {"application/octet-stream": {}}}})
async def download(who: Who, pool: Pool, bucket: Objects, object_key: str) -> Response:
    """The object's bytes, to a caller who may view a run holding it (404 otherwise, as
    for an object nobody holds)."""
    async with pool.acquire() as conn:
        holders = await projects.of_object(conn, object_key)
    if not any(who.role_in(project) is not None for project in holders):
        raise HTTPException(404, f"no rich record stored as {object_key!r}")
    if bucket is None:
        raise HTTPException(503, "no object store configured (TUNEPLANE_S3_ENDPOINT)")
    return Response(await bucket.read(object_key), media_type="application/octet-stream")
