"""Signing in and out in a browser, with a local password (and, when configured, the
team's identity provider: ``oidc``): ``/login`` is the page, ``POST /auth/login`` starts a
session (a cookie, ``browser``), ``POST /auth/logout`` ends it, ``/auth/session`` tells the
page who is signed in and its CSRF token. None of these is in the OpenAPI document.

A failed sign-in says the same for an unknown user, a wrong password and a disabled user,
after the same work; past ``throttle``'s limits it is answered 429 without that work.
``next`` is followed only to a path of this service.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from tuneplane.controlplane import passwords, sessions
from tuneplane.web.auth import browser
from tuneplane.web.auth.access import Who
from tuneplane.web.dependencies import Now, Pool, Signer, State

router = APIRouter(include_in_schema=False)

FORM_FIELDS = 8  # the form's three and room for a browser's extras

#: The sign-in pages' shell; ``body`` is what the page asks.
SHELL = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Sign in · Tuneplane</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/login.css">
</head>
<body>
<main>
<h1>Tuneplane telemetry</h1>
{body}
</main>
</body>
</html>
"""

FORM = """{sso}
<form method="post" action="/auth/login">
{error}
<label>User <input name="username" autocomplete="username" required autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password"
  required></label>
<input type="hidden" name="next" value="{next}">
<button type="submit">Sign in</button>
</form>"""


def local_path(target: str | None) -> str:
    """``target`` when it is a path of this service, else ``/``: never another site."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def page(next_path: str, error: str = "", status: int = 200, *,
         sso: bool = False) -> HTMLResponse:
    target = local_path(next_path)
    shown = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    link = (f'<p><a class="sso" href="/auth/oidc/login?{html.escape(urlencode({"next": target}))}'
            '">Sign in with your organisation</a></p><p class="or">or with a password</p>'
            if sso else "")
    body = FORM.format(error=shown, next=html.escape(target), sso=link)
    return HTMLResponse(SHELL.format(body=body), status_code=status,
                        headers={"Cache-Control": "no-store"})


async def sign_in_form(request: Request, max_fields: int, named: str) -> dict[str, str]:
    """A sign-in form's fields (the first value of each), posted from this service's own
    pages only: 403 from another origin, 400 past ``max_fields`` fields."""
    foreign = browser.foreign_origin(request)
    if foreign is not None:
        raise HTTPException(403, f"{foreign} may not sign in here")
    try:
        fields = parse_qs((await request.body()).decode(errors="replace"),
                          max_num_fields=max_fields)
    except ValueError:  # past max_num_fields
        raise HTTPException(400, f"a sign-in form has at most {max_fields} fields "
                                 f"({named})") from None
    return {k: v[0] for k, v in fields.items()}


@router.get("/login")
async def login_page(request: Request, web: State, next: str = "/") -> HTMLResponse:
    """The login page; it says why a sign-in at the identity provider failed, once."""
    notice = browser.read_notice(request)
    response = page(next, notice, sso=web.oidc is not None)
    if notice:
        browser.clear_notice(response)
    return response


@router.post("/auth/login")
async def login(request: Request, pool: Pool, signer: Signer, now: Now,
                web: State) -> Response:
    form = await sign_in_form(request, FORM_FIELDS, "username, password, next")
    username, password = form.get("username", ""), form.get("password", "")
    target = local_path(form.get("next"))
    address = request.client.host if request.client else ""
    wait = web.throttle.wait(username, address)
    if wait > 0:
        refused = page(target, "Too many failed sign-ins; try again in a few minutes.",
                       status=429, sso=web.oidc is not None)
        refused.headers["Retry-After"] = str(int(wait) + 1)
        return refused
    async with pool.acquire() as conn:
        if not await passwords.verify(conn, username, password):
            web.throttle.failed(username, address)
            return page(target, "Wrong user name or password.", status=401,
                        sso=web.oidc is not None)
        web.throttle.succeeded(username)
        cookie = await sessions.start(conn, signer, username, now=now)
    response = RedirectResponse(target, status_code=303)
    browser.set_cookie(response, cookie, seconds=sessions.HOURS * 3600)
    return response


@router.post("/auth/logout")
async def logout(who: Who, pool: Pool) -> Response:
    """Ends the browser's session (a change: it needs the session's CSRF token)."""
    if who.session is not None:
        async with pool.acquire() as conn:
            await sessions.end(conn, who.session)
    response = RedirectResponse("/login", status_code=303)
    browser.clear_cookie(response)
    return response


@router.get("/auth/session")
async def session(who: Who) -> dict[str, Any]:
    """Who is signed in, its projects, and the CSRF token a page sends with changes."""
    return {"user": who.name, "admin": who.admin, "csrf_token": who.csrf,
            "projects": {p: r.label for p, r in sorted(who.roles.items())}}
