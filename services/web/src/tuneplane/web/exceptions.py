"""How typed errors become HTTP answers, by kind and never by message text: a control-plane
``NotFound`` is 404, ``Conflict`` 409, ``Invalid`` 422 (a ``DestinationError`` is one); an
integration artifact refused is 422; a value PostgreSQL cannot take is 400. The error's
message is the answer's ``detail``, as with ``HTTPException``."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import asyncpg
from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tuneplane.controlplane import errors
from tuneplane.telemetry.v1.integration import IntegrationError

Handler = Callable[[Request, Any], Coroutine[Any, Any, Response]]


def answer(status: int) -> Handler:
    """A handler answering ``status`` with the error's message."""
    async def handler(request: Request, exc: Exception) -> Response:
        return JSONResponse({"detail": str(exc)}, status_code=status)
    return handler


async def bad_value(request: Request, exc: asyncpg.DataError) -> Response:
    return JSONResponse({"detail": f"a parameter PostgreSQL cannot take: {exc}"},
                        status_code=400)


#: For ``FastAPI(exception_handlers=...)``: Starlette picks the nearest class in the error's
#: MRO, so ``RunNotFound(RunError, NotFound)`` is answered by the ``NotFound`` handler.
HANDLERS: dict[int | type[Exception], Handler] = {
    errors.NotFound: answer(404),
    errors.Conflict: answer(409),
    errors.Invalid: answer(422),
    IntegrationError: answer(422),
    asyncpg.DataError: bad_value,
}
