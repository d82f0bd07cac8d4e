"""A browser's session: its cookie, and the checks a request made with it passes.

The cookie (``COOKIE``) is a signed session token: HttpOnly (no script reads it), Secure,
SameSite=Lax (not sent with another site's POST), for the whole site, for the session's
life. A request carrying it instead of a bearer token changes something only with the
session's CSRF token in ``CSRF_HEADER`` (the page reads it from ``/auth/session``) and, when
the browser names its origin, from this service's own origin.
"""

from __future__ import annotations

import base64
import hmac
from typing import Final

from fastapi import HTTPException, Request, Response

from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner

#: ``__Host-``: the browser takes it only from this host, Secure, for the whole site, so a
#: sibling subdomain cannot plant a session of its own choosing here.
COOKIE: Final = "__Host-tuneplane_session"
#: What the login page is to say once (a failed sign-in at the identity provider).
NOTICE: Final = "tuneplane_notice"
CSRF_HEADER: Final = "X-CSRF-Token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def session_of(request: Request, signer: TokenSigner, *, now: float,
               ) -> tuple[str, str] | None:
    """(user, session id) of the request's cookie when its signature and expiry hold; None
    without one; raises TokenError for one that does not verify."""
    cookie = request.cookies.get(COOKIE)
    if cookie is None:
        return None
    claims = signer.verify(cookie, TokenKind.SESSION, now=now)
    session_id = claims.get("sid")
    if not isinstance(session_id, str):
        raise TokenError("the session cookie names no session")
    return str(claims["sub"]), session_id


def foreign_origin(request: Request) -> str | None:
    """Why the request's ``Origin`` is not this service's, or None (none given, or ours)."""
    origin = request.headers.get("origin")
    if origin is None:
        return None
    ours = f"{request.url.scheme}://{request.headers.get('host', '')}"
    return None if origin == ours else f"a request from {origin} (not {ours})"


def check_change(request: Request, csrf_token: str) -> None:
    """403 unless a state-changing request carries the session's CSRF token, from here."""
    if request.method in SAFE_METHODS:
        return
    given = request.headers.get(CSRF_HEADER, "")
    if not hmac.compare_digest(given.encode(), csrf_token.encode()):
        raise HTTPException(403, f"a change made with a browser session needs its CSRF token "
                                 f"in {CSRF_HEADER} (from /auth/session)")
    foreign = foreign_origin(request)
    if foreign is not None:
        raise HTTPException(403, f"{foreign} may not change anything here")


def set_cookie(response: Response, value: str, *, seconds: int) -> None:
    response.set_cookie(COOKIE, value, max_age=seconds, path="/", secure=True,
                        httponly=True, samesite="lax")


def clear_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="lax")


def set_notice(response: Response, text: str) -> None:
    """The login page's next visit says ``text`` (once: it clears the cookie)."""
    encoded = base64.urlsafe_b64encode(text[:300].encode()).decode()
    response.set_cookie(NOTICE, encoded, max_age=60, path="/login", secure=True,
                        httponly=True, samesite="lax")


def read_notice(request: Request) -> str:
    """What the login page is to say; empty when nothing (or nothing readable)."""
    raw = request.cookies.get(NOTICE)
    if raw is None:
        return ""
    try:
        return base64.urlsafe_b64decode(raw.encode()).decode()[:300]
    except (ValueError, UnicodeDecodeError):
        return ""


def clear_notice(response: Response) -> None:
    response.delete_cookie(NOTICE, path="/login", secure=True, httponly=True, samesite="lax")
