"""Who may change what: the admin check the routers share."""

from collections.abc import Awaitable, Callable
from typing import Annotated

import asyncpg
from fastapi import Depends, HTTPException

from tuneplane.controlplane import users


def admin_only(user: Callable[..., Awaitable[str]], pool: Callable[[], asyncpg.Pool],
               what: str) -> Callable[..., Awaitable[str]]:
    """A dependency giving the calling user's name when it is an admin (403 otherwise);
    ``what`` says what is reserved to admins."""
    async def admin(who: Annotated[str, Depends(user)]) -> str:
        async with pool().acquire() as conn:
            if not await users.is_admin(conn, who):
                raise HTTPException(403, f"user {who!r} is not an admin; {what} are for admins")
        return who
    return admin
