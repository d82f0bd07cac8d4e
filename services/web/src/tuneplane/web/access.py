"""Who is calling and what they may do: the user behind a bearer token (401 otherwise), and
the admin check the routers share (403). A caller whose token verifies holds one of the
replica's query slots from then until its answer (``admission.query_slot``); one whose token
does not never takes one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tuneplane.common.tokens import TokenError, TokenKind
from tuneplane.controlplane import users
from tuneplane.web.admission import query_slot
from tuneplane.web.dependencies import Now, Pool, Signer, State

bearer = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def unauthorised(detail: str) -> HTTPException:
    return HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


async def user(credentials: Credentials, signer: Signer, pool: Pool, web: State,
               now: Now) -> AsyncIterator[str]:
    """The calling user's name, from a valid user token of a user who still exists."""
    if credentials is None:
        raise unauthorised("a user token is required")
    try:
        claims = signer.verify(credentials.credentials, TokenKind.USER, now=now.timestamp())
    except TokenError as exc:
        raise unauthorised(f"user token refused: {exc}") from None
    async with query_slot(web.slots):
        async with pool.acquire() as conn:
            if not await users.exists(conn, str(claims["sub"])):
                raise unauthorised("the token's user no longer exists")
        yield str(claims["sub"])


User = Annotated[str, Depends(user)]


def admin_only(what: str) -> Callable[..., Awaitable[str]]:
    """A dependency giving the calling user's name when it is an admin (403 otherwise);
    ``what`` says what is reserved to admins."""
    async def admin(who: User, pool: Pool) -> str:
        async with pool.acquire() as conn:
            if not await users.is_admin(conn, who):
                raise HTTPException(403, f"user {who!r} is not an admin; {what} are for admins")
        return who
    return admin
