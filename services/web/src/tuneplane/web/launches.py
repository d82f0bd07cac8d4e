"""Nodes and launches over HTTP, for platforms that drive Tuneplane from their own
scheduler: enrollment tokens for new nodes, and launches (the run's next attempt, one
launch per member on an enrolled node). Reading needs a user token; enrolling and
launching, which run commands on execution hosts, need an admin's.

No ``from __future__ import annotations`` here: FastAPI must see the dependency types
defined inside ``router``.
"""

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from tuneplane.controlplane import errors, launches, nodes
from tuneplane.web.access import admin_only

Word = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00]+$")]


class LaunchCreate(BaseModel):
    node: Word = Field(description="an enrolled node's name")
    members: Annotated[list[Word], Field(min_length=1, max_length=1024)]
    command: Annotated[list[Annotated[str, Field(max_length=65_536)]],
                       Field(min_length=1, max_length=4096)]
    environment: dict[str, Annotated[str, Field(max_length=65_536)]] = Field(
        default_factory=dict)


class EnrollmentTokenCreate(BaseModel):
    ttl_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] = 3600


def router(user: Callable[..., Awaitable[str]], pool: Callable[[], asyncpg.Pool]) -> APIRouter:
    api = APIRouter(prefix="/api/v1", tags=["nodes and launches"])
    User = Annotated[str, Depends(user)]

    Admin = Annotated[str, Depends(admin_only(user, pool, "enrolling nodes and launching"))]

    @api.post("/nodes/{name}/enrollment-token", status_code=201)
    async def enrollment_token(who: Admin, name: str,
                               body: EnrollmentTokenCreate) -> dict[str, Any]:
        now = dt.datetime.now(dt.UTC)
        async with pool().acquire() as conn:
            try:
                token = await nodes.new_enrollment_token(
                    conn, name, created_by=who, now=now,
                    ttl=dt.timedelta(seconds=body.ttl_seconds))
            except errors.EnrollmentError as exc:
                raise HTTPException(422, str(exc)) from None
        return {"node": name, "enrollment_token": token,
                "expires_at": (now + dt.timedelta(seconds=body.ttl_seconds)).isoformat()}

    @api.get("/nodes")
    async def node_list(_: User) -> list[dict[str, Any]]:
        async with pool().acquire() as conn:
            return await nodes.listing(conn)

    @api.post("/runs/{run_id}/launches", status_code=201)
    async def launch(_: Admin, run_id: str, body: LaunchCreate) -> dict[str, Any]:
        async with pool().acquire() as conn:
            try:
                attempt, ids = await launches.create(conn, run_id, body.node, body.members,
                                                     body.command, body.environment)
            except errors.LaunchError as exc:
                raise HTTPException(422, str(exc)) from None
            except errors.RunError as exc:
                raise HTTPException(409, str(exc)) from None
        return {"run_id": run_id, "attempt": attempt, "launches": ids}

    @api.get("/runs/{run_id}/launches")
    async def launch_list(_: User, run_id: str) -> list[dict[str, Any]]:
        async with pool().acquire() as conn:
            return await launches.listing(conn, run_id)

    return api
