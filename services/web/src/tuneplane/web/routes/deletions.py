"""Deleting a run or one of its attempts over HTTP, and taking a deletion back: an owner of
the run's project may (admins are owners of every project). The request names what it
deletes again (``confirm``), as a typed confirmation. The data stays, hidden, for the undo
window (``TUNEPLANE_DELETION_UNDO_SECONDS``); ``tuneplane-projector purge`` removes it then.

Taking back a run's deletion asks the deletion, not the run (a deleted run is no run to
anyone): its project is the one the run had when deleted, and only its owners learn a
deleted run is there (anyone else is answered 404, as for a run that never was).
"""

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException

from tuneplane.controlplane import deletions
from tuneplane.controlplane.projects import Role, of_run
from tuneplane.web.auth.access import RunOwner, Who, require
from tuneplane.web.dependencies import Pool, State
from tuneplane.web.routes.params import AttemptNo

router = APIRouter(prefix="/api/v1")

Confirm = Annotated[str, Body(embed=True, min_length=1, max_length=200,
                              description="the run id again (attempt: RUN/ATTEMPT)")]


async def delete(who: Who, web: State, run_id: str, attempt: int,
                 confirm: str) -> dict[str, Any]:
    named = run_id if attempt == deletions.WHOLE_RUN else f"{run_id}/{attempt}"
    if confirm != named:
        raise HTTPException(422, f"confirm must name what is deleted: {named!r}")
    async with web.pool.acquire() as conn:
        project = await of_run(conn, run_id)
        if project is None:  # deleted since RunOwner found it
            raise HTTPException(404, f"no run {run_id!r}")
        done = await deletions.record(conn, run_id, project, attempt=attempt, by=who.name,
                                      undo_seconds=web.settings.deletion_undo_seconds)
    return {"deletion_id": done.deletion_id, "run_id": run_id, "attempt": attempt or None,
            "purge_after": done.purge_after.isoformat()}


@router.post("/runs/{run_id}/deletion", status_code=201)
async def delete_run(who: RunOwner, web: State, run_id: str,
                     confirm: Confirm) -> dict[str, Any]:
    """Delete the run: hidden at once, its data removed once the undo window ends."""
    return await delete(who, web, run_id, deletions.WHOLE_RUN, confirm)


@router.post("/runs/{run_id}/attempts/{attempt}/deletion", status_code=201)
async def delete_attempt(who: RunOwner, web: State, run_id: str, attempt: AttemptNo,
                         confirm: Confirm) -> dict[str, Any]:
    """Delete one attempt: its workload tokens are refused at once, its data removed once
    the undo window ends."""
    return await delete(who, web, run_id, attempt, confirm)


@router.delete("/runs/{run_id}/deletion", status_code=204)
async def undo_run(who: Who, pool: Pool, run_id: str) -> None:
    """Take the run's deletion back, before its purge begins."""
    async with pool.acquire() as conn:
        deleted_in = await deletions.project_of_deleted(conn, run_id)
        if deleted_in is None:  # a run there is (its deletion none to undo), or none
            require(who, await of_run(conn, run_id), Role.OWNER, f"run {run_id!r}")
        elif (who.role_in(deleted_in) or Role.VIEWER) < Role.OWNER:
            raise HTTPException(404, f"no deleted run {run_id!r}")  # none they may know
        await deletions.undo(conn, run_id, by=who.name)


@router.delete("/runs/{run_id}/attempts/{attempt}/deletion", status_code=204)
async def undo_attempt(who: RunOwner, pool: Pool, run_id: str, attempt: AttemptNo) -> None:
    """Take an attempt's deletion back, before its purge begins."""
    async with pool.acquire() as conn:
        await deletions.undo(conn, run_id, attempt=attempt, by=who.name)
