"""TelemetryDestinations over HTTP: apply (PUT), get, list, delete, and the composed
OpenTelemetry Collector configuration. Reading needs a user token; changing needs an
admin's.

No ``from __future__ import annotations`` here: FastAPI must see the dependency types
defined inside ``router``.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Body, Depends, HTTPException

from tuneplane.controlplane.destinations import store
from tuneplane.controlplane.destinations.compose import render
from tuneplane.controlplane.destinations.resource import DestinationError
from tuneplane.web.access import admin_only


def router(user: Callable[..., Awaitable[str]], pool: Callable[[], asyncpg.Pool]) -> APIRouter:
    api = APIRouter(prefix="/api/v1", tags=["destinations"])
    User = Annotated[str, Depends(user)]

    Admin = Annotated[str, Depends(admin_only(user, pool, "changes to destinations"))]

    @api.get("/destinations")
    async def listing(_: User) -> list[dict[str, Any]]:
        async with pool().acquire() as conn:
            return await store.listing(conn)

    @api.get("/destinations/{name}")
    async def get(_: User, name: str) -> dict[str, Any]:
        async with pool().acquire() as conn:
            found = await store.get(conn, name)
        if found is None:
            raise HTTPException(404, f"no destination {name!r}")
        return found

    @api.put("/destinations/{name}")
    async def apply(_: Admin, name: str,
                    document: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        given = document.get("metadata", {}).get("name") if isinstance(
            document.get("metadata"), dict) else None
        if given is not None and given != name:
            raise HTTPException(400, f"metadata.name {given!r} differs from the path's {name!r}")
        async with pool().acquire() as conn:
            try:
                applied = await store.apply(conn, document, f"destination {name}")
            except DestinationError as exc:
                raise HTTPException(422, str(exc)) from None
        return {"name": applied.name, "generation": applied.generation,
                "result": applied.result}

    @api.delete("/destinations/{name}")
    async def delete(_: Admin, name: str) -> dict[str, Any]:
        async with pool().acquire() as conn:
            if not await store.delete(conn, name):
                raise HTTPException(404, f"no destination {name!r}")
        return {"name": name, "result": "deleted"}

    @api.get("/telemetry-collector/config")
    async def composed(_: User) -> dict[str, Any]:
        """The OpenTelemetry Collector configuration composed from every destination;
        ``config`` is null when there is none (export is off)."""
        async with pool().acquire() as conn, conn.transaction(isolation="repeatable_read"):
            generation = await store.fleet_generation(conn)
            destinations = await store.load_all(conn)
        return {"generation": generation, "config": render(destinations)}

    return api
