"""Rich records over HTTP: an attempt's images, audio, text and other non-scalar records
listed from PostgreSQL, and one record's bytes downloaded from the object store.

A download names the object key a listing gave; keys no rich record has are refused (404)
before the object store is asked, so the API never serves other objects of its bucket.
"""

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response

from tuneplane.web import models, queries
from tuneplane.web.access import User
from tuneplane.web.dependencies import Objects, Pool
from tuneplane.web.routes.params import AttemptNo, Step

router = APIRouter(prefix="/api/v1")

#: Where a listing starts when no ``from_step`` is given: the smallest step there is.
FIRST_STEP = -(2**63)


@router.get("/runs/{run_id}/attempts/{attempt}/rich", response_model=list[models.RichRecord])
async def rich(_: User, pool: Pool, run_id: str, attempt: AttemptNo, member: str | None = None,
               source: str | None = None, tag: str | None = None, from_step: Step = None,
               limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await queries.records(conn, queries.RICH, run_id, attempt, member, source, tag,
                                     FIRST_STEP if from_step is None else from_step, limit)


@router.get("/rich/{object_key:path}", response_class=Response,
            responses={200: {"content": {"application/octet-stream": {}}}})
async def download(_: User, pool: Pool, bucket: Objects, object_key: str) -> Response:
    async with pool.acquire() as conn:
        known = await queries.rich_record_stored(conn, object_key)
    if not known:
        raise HTTPException(404, f"no rich record stored as {object_key!r}")
    if bucket is None:
        raise HTTPException(503, "no object store configured (TUNEPLANE_S3_ENDPOINT)")
    return Response(await bucket.read(object_key), media_type="application/octet-stream")
