"""Security headers on every answer, pages and API alike.

The pages load only their own scripts and styles (uPlot is served from this service), and
images and audio only from this service (the Media page's records, ``routes.media``), so
the policy allows nothing else: no inline script or style, no other origin, no blob: URL,
no framing, no plugins; a data: URL only as an image (the pages' empty icon, which keeps
a browser from asking for /favicon.ico: data: images run nothing). API answers are JSON;
the same headers cost nothing there and keep a browser from sniffing one into a page.
``Strict-Transport-Security`` is added only when the service is reached over TLS
(``https`` in the request's scheme).
"""

from __future__ import annotations

from typing import Final

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY: Final = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",  # data: for the pages' empty icon (href="data:,") alone
    "media-src 'self'",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # not "no-referrer": a form post would say Origin: null
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
}
HSTS: Final = "max-age=31536000; includeSubDomains"


class SecurityHeaders:
    """Pure ASGI middleware: the headers go on at ``http.response.start``, so streamed
    answers and errors raised below get them too."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        secure = scope.get("scheme") == "https"

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
                if secure:
                    headers.setdefault("Strict-Transport-Security", HSTS)
            await send(message)

        await self._app(scope, receive, with_headers)
