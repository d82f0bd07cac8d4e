"""Signing in through the team's OpenID Connect provider: ``/auth/oidc/login`` sends the
browser there (authorization code with PKCE; what it must bring back rides in a signed,
HttpOnly cookie of ten minutes), ``/auth/callback`` takes it back, makes or updates the user
from its groups (``controlplane.federated``) and starts its session. Not in the OpenAPI
document; 404 while no provider is configured."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import RedirectResponse

from tuneplane.common.tokens import TokenError, TokenKind
from tuneplane.controlplane import federated, sessions
from tuneplane.controlplane.errors import SignInRefused
from tuneplane.web.auth import browser
from tuneplane.web.auth.oidc import OidcClient, Pending, SignInFailed
from tuneplane.web.dependencies import Now, Pool, Signer, State
from tuneplane.web.routes.auth import local_path

router = APIRouter(include_in_schema=False)

#: What the browser brings back, signed as a token of its own kind (``SIGN_IN``): anyone
#: gets one here, so as a session token it would pass for a session cookie wherever only
#: the signature is checked (``admission``, which then reads the request's body).
#: ``__Host-`` (so Path=/): no sibling subdomain can plant a sign-in of its own.
COOKIE = "__Host-tuneplane_sign_in"
PURPOSE = "oidc-login"
SECONDS = 600


def client(web: State) -> OidcClient:
    if web.oidc is None:
        raise HTTPException(404, "no identity provider is configured here")
    return web.oidc


def back_to_login(next_path: str, error: str) -> RedirectResponse:
    """To the login page, which says ``error``: carried in a cookie of its own, never in
    the URL (anyone could send a link to the login page saying anything)."""
    response = RedirectResponse(f"/login?{urlencode({'next': next_path})}", status_code=303)
    response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="lax")
    browser.set_notice(response, error)
    return response


@router.get("/auth/oidc/login")
async def begin(web: State, signer: Signer, now: Now, next: str = "/") -> Response:
    try:
        url, pending = await client(web).begin(local_path(next))
    except SignInFailed as exc:
        return back_to_login(local_path(next), str(exc))
    response = RedirectResponse(url, status_code=303)
    kept = signer.issue(TokenKind.SIGN_IN, PURPOSE, {"purpose": PURPOSE,
                                                     **dataclasses.asdict(pending)},
                        now=now.timestamp(), ttl_seconds=SECONDS)
    response.set_cookie(COOKIE, kept, max_age=SECONDS, path="/", secure=True,
                        httponly=True, samesite="lax")
    return response


@router.get("/auth/callback")
async def callback(request: Request, web: State, pool: Pool, signer: Signer, now: Now,
                   code: str = "", state: str = "", error: str = "") -> Response:
    oidc = client(web)
    try:
        claims = signer.verify(request.cookies.get(COOKIE, ""), TokenKind.SIGN_IN,
                               now=now.timestamp())
        if claims.get("purpose") != PURPOSE:
            raise TokenError("not a sign-in in progress")
        pending = Pending(str(claims["state"]), str(claims["nonce"]), str(claims["verifier"]),
                          local_path(str(claims["next"])))
    except (TokenError, KeyError) as exc:
        return back_to_login("/", f"the sign-in expired or was not started here ({exc}); "
                                  "try again")
    if error:
        return back_to_login(pending.next, f"the identity provider refused: {error}")
    if not state or state != pending.state:
        return back_to_login(pending.next, "the sign-in's state does not match; try again")
    try:
        identity = await oidc.finish(code, pending)
        async with pool.acquire() as conn:
            await federated.sign_in(conn, identity.username, set(identity.groups),
                                    web.settings.oidc.groups)
            cookie = await sessions.start(conn, signer, identity.username, now=now)
    except (SignInFailed, SignInRefused) as exc:
        return back_to_login(pending.next, str(exc))
    response = RedirectResponse(pending.next, status_code=303)
    response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="lax")
    browser.set_cookie(response, cookie, seconds=sessions.HOURS * 3600)
    return response
