"""Admission of requests, before any route: NUL characters refused (400), and a bounded
number of requests in flight (503 with Retry-After beyond it, rather than a queue)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tuneplane.web import state


async def admit(request: Request, call_next: Callable[[Request], Awaitable[Response]],
                ) -> Response:
    """HTTP middleware (``app.middleware("http")``)."""
    if "\x00" in request.url.path or any("\x00" in v for v in request.query_params.values()):
        return JSONResponse({"detail": "NUL characters are not allowed in a path or "
                                       "parameter"}, status_code=400)
    slots = state.of(request.app).slots
    if slots.locked():
        return JSONResponse({"detail": "too many queries in flight; retry shortly"},
                            status_code=503, headers={"Retry-After": "1"})
    async with slots:
        return await call_next(request)
