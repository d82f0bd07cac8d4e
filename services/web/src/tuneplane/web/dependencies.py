"""FastAPI dependencies for what routes are handed: the application state and its parts
(database pool, object store bucket, token signer) and the clock.

Routes take the pool, not a request-long connection, and borrow a connection only around
their queries, so no request holds one connection while it waits for another.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import asyncpg
from fastapi import Depends, Request

from tuneplane.common.tokens import TokenSigner
from tuneplane.web import state
from tuneplane.web.read.bucket import Bucket
from tuneplane.web.state import WebState


async def web_state(request: Request) -> WebState:
    return state.of(request.app)


State = Annotated[WebState, Depends(web_state)]


async def pool(web: State) -> asyncpg.Pool:
    return web.pool


async def bucket(web: State) -> Bucket | None:
    return web.bucket


async def signer(web: State) -> TokenSigner:
    return web.signer


async def now() -> dt.datetime:
    """The time a request is decided at (tests override it through dependency_overrides)."""
    return dt.datetime.now(dt.UTC)


Pool = Annotated[asyncpg.Pool, Depends(pool)]
Objects = Annotated[Bucket | None, Depends(bucket)]
Signer = Annotated[TokenSigner, Depends(signer)]
Now = Annotated[dt.datetime, Depends(now)]
