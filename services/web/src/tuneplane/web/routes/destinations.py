"""TelemetryDestinations over HTTP: apply (PUT), get, list, delete, and the composed
OpenTelemetry Collector configuration. Reading and changing them both need an admin's
token (they say where the fleet's telemetry goes and with which credentials); answers
show secret values redacted (``redaction``). A destination refused (``DestinationError``,
an ``Invalid``) is answered 422 by ``tuneplane.web.exceptions``.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException

from tuneplane.controlplane.destinations import store
from tuneplane.destinations import redaction
from tuneplane.destinations.compose import render
from tuneplane.web.auth.access import Caller, admin_only
from tuneplane.web.dependencies import Pool

router = APIRouter(prefix="/api/v1", tags=["destinations"])

Admin = Annotated[Caller, Depends(admin_only(
    "destinations and the collector configuration composed from them"))]


@router.get("/destinations")
async def listing(_: Admin, pool: Pool) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return [redaction.document(d) for d in await store.listing(conn)]


@router.get("/destinations/{name}")
async def get(_: Admin, pool: Pool, name: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        found = await store.get(conn, name)
    if found is None:
        raise HTTPException(404, f"no destination {name!r}")
    return redaction.document(found)


@router.put("/destinations/{name}")
async def apply(_: Admin, pool: Pool, name: str,
                document: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    given = document.get("metadata", {}).get("name") if isinstance(
        document.get("metadata"), dict) else None
    if given is not None and given != name:
        raise HTTPException(400, f"metadata.name {given!r} differs from the path's {name!r}")
    async with pool.acquire() as conn:
        applied = await store.apply(conn, document, f"destination {name}")
    return {"name": applied.name, "generation": applied.generation, "result": applied.result}


@router.delete("/destinations/{name}")
async def delete(_: Admin, pool: Pool, name: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        if not await store.delete(conn, name):
            raise HTTPException(404, f"no destination {name!r}")
    return {"name": name, "result": "deleted"}


@router.get("/telemetry-collector/config")
async def composed(_: Admin, pool: Pool) -> dict[str, Any]:
    """The OpenTelemetry Collector configuration composed from every destination, secret
    values redacted; ``config`` is null when there is none (export is off)."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
        generation = await store.fleet_generation(conn)
        destinations = await store.load_all(conn)
    return {"generation": generation, "config": redaction.config(render(destinations))}
