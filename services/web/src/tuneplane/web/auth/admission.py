"""Admission of requests: bounded before trusted.

``Admission`` (ASGI middleware, outermost) refuses NUL characters in a path or parameter
(400), a request body under ``/api/`` or ``/report/`` whose bearer token is not signed as a
user or workload token there, or under ``/api/`` whose session cookie is not signed (401:
nothing unauthenticated is read, let alone parsed; its expiry and the rest are the routes'
dependencies' to check), and request bodies over their bound (413) before anything parses
them: by ``Content-Length`` before the body is read, and by counting while it streams in (a
chunked body declares no length). Each path may have its own bound (the reporting path's),
others get the replica's (``TUNEPLANE_WEB_MAX_BODY_BYTES``).

Query slots are taken only after authentication (``slots.QuerySlots``, entered by the
dependencies that authenticate a caller), so no unauthenticated request ever holds or waits
for one.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner
from tuneplane.web.auth.browser import COOKIE

#: Where a request body needs a bearer token signed as which kind before it is read.
SIGNED_BODIES = (("/api/", TokenKind.USER), ("/report/", TokenKind.WORKLOAD))


class BodyTooLarge(HTTPException):
    """The request body streamed past its bound; answered 413."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(413, f"the request body of {path} is over its bound of {limit} bytes")


class Admission:
    def __init__(self, app: ASGIApp, *, max_body: int, limits: Mapping[str, int],
                 signer: TokenSigner) -> None:
        self._app = app
        self._max_body = max_body
        self._limits = dict(limits)
        self._signer = signer

    def unsigned(self, connection: HTTPConnection) -> str | None:
        """Why the request's body must not be read (no token signed as its path's kind)."""
        path = connection.url.path
        kind = next((kind for prefix, kind in SIGNED_BODIES if path.startswith(prefix)), None)
        headers = connection.headers
        if kind is None or ("content-length" not in headers and
                            "transfer-encoding" not in headers):
            return None
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if (scheme.lower() != "bearer" or not token) and kind is TokenKind.USER:
            token, kind = connection.cookies.get(COOKIE, ""), TokenKind.SESSION  # a browser
            if not token:
                return f"a user token or a session is required to send a body to {path}"
        elif scheme.lower() != "bearer" or not token:
            return f"a {kind.value} token is required to send a body to {path}"
        try:  # the signature only: expiry is checked on the route's clock
            self._signer.verify(token.strip(), kind, now=float("-inf"))
        except TokenError as exc:
            return f"{kind.value} token refused: {exc}"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        path = connection.url.path
        if "\x00" in path or any("\x00" in v for v in connection.query_params.values()):
            await refuse(400, "NUL characters are not allowed in a path or parameter",
                         scope, receive, send)
            return
        limit = self._limits.get(path, self._max_body)
        declared = connection.headers.get("content-length")
        if declared is not None and not declared.isdigit():
            await refuse(400, f"malformed Content-Length {declared[:20]!r}", scope, receive,
                         send)
            return
        if declared is not None and int(declared) > limit:
            await refuse(413, f"the request body of {path} declares {declared} bytes; its "
                              f"bound is {limit} bytes", scope, receive, send)
            return
        unsigned = self.unsigned(connection)
        if unsigned is not None:
            await refuse(401, unsigned, scope, receive, send, {"WWW-Authenticate": "Bearer"})
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(path, limit)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, counted, watched)
        except BodyTooLarge as exc:
            if started:
                raise
            await refuse(413, exc.detail, scope, receive, send)


async def refuse(status: int, detail: str, scope: Scope, receive: Receive, send: Send,
                 headers: Mapping[str, str] | None = None) -> None:
    await JSONResponse({"detail": detail}, status_code=status, headers=headers)(
        scope, receive, send)
