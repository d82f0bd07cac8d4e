"""A rich record's bytes over HTTP: the object as stored (``/rich/{key}``), and the image or
audio clip inside a TensorBoard record (``/media/{key}``, what the Media page's ``<img>``
and ``<audio>`` load).

Both name the object key a listing gave, and answer only a caller who may view a run
holding it; any other key answers 404 before the object store is asked, so the API never
serves other objects of its bucket nor says which exist. Both are typed by their magic
bytes alone (``mediatype``): a tenant's bytes never reach a browser as a type it runs.
"""

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response

from tuneplane.controlplane import projects
from tuneplane.web.auth import mediatype
from tuneplane.web.auth.access import Caller, Who
from tuneplane.web.dependencies import Objects, Pool
from tuneplane.web.read import summaries
from tuneplane.web.read.bucket import Bucket

router = APIRouter(prefix="/api/v1")

SERVED: dict[int | str, dict[str, Any]] = {200: {"content": {
    media_type: {} for media_type in ("application/octet-stream", "image/png", "image/jpeg",
                                      "image/gif", "image/webp", "audio/wav")}}}


async def held_object(who: Caller, pool: Pool, bucket: Bucket | None, object_key: str) -> bytes:
    """The object's bytes, to a caller who may view a run holding it (404 otherwise, as for
    an object nobody holds)."""
    async with pool.acquire() as conn:
        holders = await projects.of_object(conn, object_key)
    if not any(who.role_in(project) is not None for project in holders):
        raise HTTPException(404, f"no rich record stored as {object_key!r}")
    if bucket is None:
        raise HTTPException(503, "no object store configured (TUNEPLANE_S3_ENDPOINT)")
    return await bucket.read(object_key)


@router.get("/rich/{object_key:path}", response_class=Response, responses=SERVED)
async def download(who: Who, pool: Pool, bucket: Objects, object_key: str) -> Response:
    """The object as stored (a TensorBoard record's serialized ``Summary.Value``, a JSONL
    channel's JSON): an image or WAV only when its bytes are one, else an attachment."""
    return mediatype.served(await held_object(who, pool, bucket, object_key))


@router.get("/media/{object_key:path}", response_class=Response, responses=SERVED)
async def media(who: Who, pool: Pool, bucket: Objects, object_key: str,
                sample: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0) -> Response:
    """The encoded image or audio clip ``sample`` of a TensorBoard image or audio record
    (TF1 fields or TF2 tensors), typed by its magic bytes; 422 for any other record."""
    payload = await held_object(who, pool, bucket, object_key)
    try:
        return mediatype.served(summaries.media(payload, sample))
    except summaries.Undecodable as exc:
        raise HTTPException(422, f"rich record {object_key!r} {exc}") from None
