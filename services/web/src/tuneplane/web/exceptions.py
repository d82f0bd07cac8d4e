"""How typed errors become HTTP answers, by kind and never by message text: a control-plane
``NotFound`` is 404, ``Conflict`` 409, ``Invalid`` 422 (and so is a ``DestinationError``); an
integration artifact refused is 422. The error's message is the answer's ``detail``, as with
``HTTPException``. Database errors are answered without their text (it is logged): a
value PostgreSQL cannot take is 400, PostgreSQL away or a query past the statement timeout
503, any other database error 500. The object store away is 503 too; an object missing from
it is a ``NotFound``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

import asyncpg
from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tuneplane.controlplane import errors
from tuneplane.destinations.resource import DestinationError
from tuneplane.telemetry.v1.integration import IntegrationError
from tuneplane.web.read.bucket import ObjectStoreAway

log = logging.getLogger("tuneplane.web")

#: PostgreSQL away: the request may pass when retried.
DATABASE_AWAY = (asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
                 asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError,
                 asyncpg.TooManyConnectionsError)

Handler = Callable[[Request, Any], Coroutine[Any, Any, Response]]


def answer(status: int, headers: dict[str, str] | None = None) -> Handler:
    """A handler answering ``status`` with the error's message."""
    async def handler(request: Request, exc: Exception) -> Response:
        return JSONResponse({"detail": str(exc)}, status_code=status, headers=headers)
    return handler


async def bad_value(request: Request, exc: asyncpg.DataError) -> Response:
    log.info("%s %s: a value PostgreSQL refused: %r", request.method, request.url.path, exc)
    return JSONResponse({"detail": "a parameter is outside what the database can store or "
                                   "compare (too large, or not valid text)"}, status_code=400)


async def database_away(request: Request, exc: Exception) -> Response:
    log.warning("%s %s: PostgreSQL did not answer: %r", request.method, request.url.path, exc)
    return JSONResponse({"detail": "the database is not answering; retry shortly"},
                        status_code=503, headers={"Retry-After": "5"})


async def too_long(request: Request, exc: Exception) -> Response:
    log.warning("%s %s: cancelled by the statement timeout: %r", request.method,
                request.url.path, exc)
    return JSONResponse({"detail": "the query took too long and was cancelled; ask for less "
                                   "(fewer columns, filters or rows)"}, status_code=503)


async def store_away(request: Request, exc: ObjectStoreAway) -> Response:
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    return JSONResponse({"detail": "the object store is not answering; retry shortly"},
                        status_code=503, headers={"Retry-After": "5"})


async def database_error(request: Request, exc: asyncpg.PostgresError) -> Response:
    log.error("%s %s: database error: %r", request.method, request.url.path, exc)
    return JSONResponse({"detail": "internal error (the database refused the request); it "
                                   "is logged"}, status_code=500)


#: For ``FastAPI(exception_handlers=...)``: Starlette picks the nearest class in the error's
#: MRO, so ``RunNotFound(RunError, NotFound)`` is answered by the ``NotFound`` handler.
HANDLERS: dict[int | type[Exception], Handler] = {
    errors.NotFound: answer(404),
    errors.Conflict: answer(409),
    errors.NotYet: answer(503, {"Retry-After": "1"}),  # under way, not shown yet: ask again
    errors.Invalid: answer(422),
    IntegrationError: answer(422),
    DestinationError: answer(422),
    ObjectStoreAway: store_away,
    asyncpg.DataError: bad_value,
    asyncpg.QueryCanceledError: too_long,
    asyncpg.PostgresError: database_error,
    **{error: database_away for error in DATABASE_AWAY},
}
