"""The web application's state: what lives from startup to shutdown (settings, token
signer, database pool, object store bucket, query slots, the identity provider's client),
opened in the lifespan and kept
on ``app.state.web``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg
from fastapi import FastAPI

from tuneplane.common.db import fair_pool
from tuneplane.common.tokens import TokenSigner
from tuneplane.web import metrics
from tuneplane.web.auth.oidc import OidcClient
from tuneplane.web.auth.slots import QuerySlots
from tuneplane.web.auth.throttle import Throttle
from tuneplane.web.read.answers import Answers
from tuneplane.web.read.bucket import Bucket
from tuneplane.web.read.series_read import SeriesRead

if TYPE_CHECKING:
    from tuneplane.web.settings import WebSettings

#: No answer holds a pool connection longer: every query is bounded (pages, points,
#: series), so one past this is a plan gone wrong or a request built to be costly, and it is
#: cancelled (the caller gets an error) rather than left to starve the others.
STATEMENT_TIMEOUT = "30s"
#: Authenticated requests that may wait for a query slot, per slot.
QUEUED_PER_SLOT = 4


@dataclass(frozen=True, slots=True)
class WebState:
    settings: WebSettings
    signer: TokenSigner
    pool: asyncpg.Pool
    #: None when no object store is configured (rich-record downloads answer 503).
    bucket: Bucket | None
    #: Authenticated requests in flight at most, and those waiting for one of them
    #: (``admission.QuerySlots``).
    slots: QuerySlots
    #: Series answers given again while their series is unchanged (``read.answers``).
    answers: Answers[SeriesRead]
    #: The team's identity provider; None: local passwords only.
    oidc: OidcClient | None = None
    #: Failed sign-ins, per user name and client address.
    throttle: Throttle = field(default_factory=Throttle)


async def kept_session(conn: asyncpg.Connection) -> None:
    """A connection's reset on its way back to the pool: nothing past what asyncpg always
    does (an open transaction rolled back, listeners dropped). The web sets no session
    state (no SET, LISTEN, session advisory lock or cursor outside a transaction), so
    asyncpg's default reset statement would cost a round trip on every release for
    nothing: two or three a chart request."""


@asynccontextmanager
async def opened(settings: WebSettings, signer: TokenSigner) -> AsyncIterator[WebState]:
    """The state for one run of the application; the pool is closed when it ends."""
    pool = await fair_pool.create_pool(  # (asyncpg's own lets some wait on and on)
        settings.database_url, min_size=1, max_size=settings.pool_size, reset=kept_session,
        server_settings={"statement_timeout": STATEMENT_TIMEOUT})
    metrics.POOL.watch(pool)
    bucket = (Bucket.of(settings.s3_endpoint, settings.s3_bucket)
              if settings.s3_endpoint and settings.s3_bucket else None)
    try:
        yield WebState(settings, signer, pool, bucket,
                       QuerySlots(settings.concurrent_queries,
                                  queue=QUEUED_PER_SLOT * settings.concurrent_queries,
                                  wait=settings.query_wait_seconds,
                                  per_caller=settings.queries_per_caller),
                       Answers(settings.answer_cache_bytes),
                       OidcClient(settings.oidc) if settings.oidc.enabled else None)
    finally:
        metrics.POOL.forget()
        await pool.close()


def of(app: FastAPI) -> WebState:
    """The running application's state."""
    found = getattr(app.state, "web", None)
    if not isinstance(found, WebState):
        raise RuntimeError("the web application's lifespan has not run: no app.state.web "
                           "(serve it with uvicorn, or enter app.router.lifespan_context)")
    return found
