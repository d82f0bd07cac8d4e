"""Users over HTTP, for admins: list them, and disable one (its tokens are refused from
that moment, on every replica: each request looks its user up)."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from tuneplane.controlplane import users
from tuneplane.web.auth.access import Caller, admin_only
from tuneplane.web.dependencies import Pool

router = APIRouter(prefix="/api/v1", tags=["users"])

Admin = Annotated[Caller, Depends(admin_only("users"))]


@router.get("/users")
async def listing(_: Admin, pool: Pool) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await users.listing(conn)


@router.post("/users/{username}/disable")
async def disable(_: Admin, pool: Pool, username: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        changed = await users.disable(conn, username)
    return {"username": username, "disabled": True, "changed": changed}
