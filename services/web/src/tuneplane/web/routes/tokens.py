"""The caller's personal API tokens, for scripts: list them, make one (shown once, 90 days
by default, optionally scoped to some of the caller's projects), revoke one (admins may
revoke anyone's). A scoped token makes only tokens within its own scope: no token widens
the reach of the one that made it."""

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from tuneplane.controlplane import api_tokens
from tuneplane.web.auth.access import Who
from tuneplane.web.dependencies import Now, Pool, Signer

router = APIRouter(prefix="/api/v1", tags=["tokens"])


class TokenCreate(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=128, description="what it is for")]
    days: Annotated[int, Field(ge=1, le=api_tokens.MAX_DAYS)] = api_tokens.DEFAULT_DAYS
    projects: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None, description="the projects it reaches (null: all the caller's)")


@router.get("/tokens")
async def listing(who: Who, pool: Pool) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await api_tokens.listing(conn, who.name)


@router.post("/tokens", status_code=201)
async def create(who: Who, pool: Pool, signer: Signer, now: Now,
                 body: TokenCreate) -> dict[str, Any]:
    """A new token of the caller; its value is in this answer only."""
    wanted = body.projects if body.projects is not None else (
        None if who.scope is None else list(who.scope))
    if wanted is not None:
        beyond = sorted(p for p in wanted if who.role_in(p) is None
                        or (who.scope is not None and p not in who.scope))
        if beyond:
            raise HTTPException(403, f"the token cannot reach project(s) {', '.join(beyond)}: "
                                     "the caller holds no role there (through this token)")
    async with pool.acquire() as conn:
        ident, token, expires = await api_tokens.issue(
            conn, signer, who.name, name=body.name, now=now, days=body.days, projects=wanted)
    return {"token_id": ident, "token": token, "expires_at": expires.isoformat(),
            "projects": wanted}


@router.delete("/tokens/{token_id}")
async def revoke(who: Who, pool: Pool, token_id: str) -> dict[str, Any]:
    """Revoke one of the caller's tokens (an admin: anyone's); it is refused at once."""
    async with pool.acquire() as conn:
        changed = await api_tokens.revoke(conn, token_id,
                                          username=None if who.admin else who.name)
    return {"token_id": token_id, "revoked": True, "changed": changed,
            "at": dt.datetime.now(dt.UTC).isoformat()}
