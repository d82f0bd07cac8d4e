"""Rich records over HTTP: an attempt's images, audio, text and other non-scalar records
listed from PostgreSQL: the bounded listing, the tags they make (what the Media page draws
a card for) and one tag's records sampled evenly over its steps (a card's step slider).

Their bytes are served by ``routes.media``; histograms and text decoded by
``routes.rich_data``.
"""

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from tuneplane.web import models
from tuneplane.web.auth.access import Viewer
from tuneplane.web.dependencies import Pool
from tuneplane.web.read import rich_records
from tuneplane.web.routes.params import AttemptNo, RunPath, RunPathFilter, Step

router = APIRouter(prefix="/api/v1")

#: Where a listing starts when no ``from_step`` is given: the smallest step there is.
FIRST_STEP = -(2**63)

Sampled = Annotated[int, Query(ge=2, le=1000, description="records at most, spread evenly "
                                                          "over the tag's steps")]


@router.get("/runs/{run_id}/attempts/{attempt}/rich", response_model=list[models.RichRecord])
async def rich(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo, member: str | None = None,
               source: str | None = None, tag: str | None = None,
               run_path: RunPathFilter = None, from_step: Step = None,
               limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await rich_records.listing(
            conn, run_id, attempt, member=member, source=source, tag=tag, run_path=run_path,
            from_step=FIRST_STEP if from_step is None else from_step, limit=limit)


@router.get("/runs/{run_id}/attempts/{attempt}/rich/tags", response_model=list[models.RichTag])
async def tags(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo,
               member: str | None = None, kind: str | None = None,
               limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[dict[str, Any]]:
    """Each (member, source, run path, tag, kind) with records, how many and their steps."""
    async with pool.acquire() as conn:
        return await rich_records.tags(conn, run_id, attempt, member=member, kind=kind,
                                       limit=limit)


def described(member: str, source: str, run_path: str, tag: str) -> str:
    """A tag as a refusal names it: member/source/tag, and its run path when it has one."""
    run = f" of run path {run_path!r}" if run_path else ""
    return f"{member}/{source}/{tag}{run}"


async def sampled(pool: Pool, run_id: str, attempt: int, member: str, source: str,
                  run_path: str, tag: str, limit: int) -> list[dict[str, Any]]:
    """The tag's records sampled (``rich_records.sample``); 404 when it has none."""
    async with pool.acquire() as conn:
        rows = await rich_records.sample(conn, run_id, attempt, member, source, run_path, tag,
                                         limit)
    if not rows:
        raise HTTPException(404, f"no rich records of {described(member, source, run_path, tag)}"
                                 f" in run {run_id!r} attempt {attempt}")
    return rows


@router.get("/runs/{run_id}/attempts/{attempt}/rich/steps", response_model=models.RichSample)
async def steps(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo, member: str,
                source: str, tag: str, run_path: RunPath = "",
                limit: Sampled = 100) -> dict[str, Any]:
    """One tag's records, at most ``limit`` of them spread evenly over its steps, the last
    included (TensorBoard's image and audio cards show a sample, the latest first)."""
    rows = await sampled(pool, run_id, attempt, member, source, run_path, tag, limit)
    return {"member": member, "source": source, "run_path": run_path, "tag": tag,
            "records": rows[0]["records"], "steps": rows}
