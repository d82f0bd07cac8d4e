"""Redeeming a one-time sign-in link (``tuneplane.controlplane.sign_in_links``):
``GET /auth/link?link=…`` shows a page asking to continue, naming whom the link signs in (and
whom the browser is signed in as now, when someone else: a link sent by another is a
one-click login CSRF), and spends nothing, so a preview or a prefetch cannot use it up; its
button posts the link to ``POST /auth/link``, which spends it and starts a browser session,
then leads to the link's path. Neither is in the OpenAPI document.
"""

import datetime as dt
import html

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from tuneplane.common.tokens import TokenError, TokenSigner
from tuneplane.controlplane import sessions, sign_in_links
from tuneplane.web.auth import browser
from tuneplane.web.dependencies import Now, Pool, Signer
from tuneplane.web.routes.auth import SHELL, local_path, sign_in_form

router = APIRouter(include_in_schema=False)

FORM_FIELDS = 4
#: A link's secret is token_urlsafe(32): 43 characters; anything far longer is not one.
MAX_SECRET = 128

FORM = """<form method="post" action="/auth/link">
<p>This one-time link signs this browser in as <strong>{user}</strong>. It works once, for a
few minutes.</p>
{current}<input type="hidden" name="{parameter}" value="{secret}">
<button type="submit">Continue</button>
</form>"""

#: Said when the browser is signed in as someone else already: whoever sent the link could
#: be swapping this session for one of their own account (login CSRF with one click).
SWAP = """<p class="error" role="alert">This browser is signed in as <strong>{current}</strong>
now: continuing signs it in as {user} instead. Continue only if you asked for this link.</p>
"""


def answer(body: str, status: int = 200) -> HTMLResponse:
    # The secret is in this page's address: the service's own Referrer-Policy (same-origin)
    # keeps it from other sites; no-referrer would make the form's Origin "null".
    return HTMLResponse(SHELL.format(body=body), status_code=status,
                        headers={"Cache-Control": "no-store"})


def refused(reason: str, status: int) -> HTMLResponse:
    return answer(f'<p class="error" role="alert">{html.escape(reason)}</p>'
                  '<p><a href="/login">Sign in with a password</a></p>', status)


def signed_in_as(request: Request, signer: TokenSigner, now: dt.datetime) -> str | None:
    """Who the browser's session cookie names (signature and expiry only), or None."""
    try:
        found = browser.session_of(request, signer, now=now.timestamp())
    except TokenError:
        return None
    return None if found is None else found[0]


@router.get("/auth/link")
async def link_page(request: Request, pool: Pool, signer: Signer, now: Now) -> HTMLResponse:
    """Asks to continue, naming whom the link signs in (and whom the browser is signed in
    as now, when someone else); spends nothing."""
    secret = request.query_params.get(sign_in_links.PARAMETER, "")
    if not secret or len(secret) > MAX_SECRET:
        return refused("This address carries no sign-in link.", 400)
    async with pool.acquire() as conn:
        user = await sign_in_links.holder(conn, secret, now=now)
    if user is None:
        return refused(sign_in_links.REFUSED, 410)
    current = signed_in_as(request, signer, now)
    swap = (SWAP.format(current=html.escape(current), user=html.escape(user))
            if current is not None and current != user else "")
    return answer(FORM.format(parameter=sign_in_links.PARAMETER, secret=html.escape(secret),
                              user=html.escape(user), current=swap))


@router.post("/auth/link")
async def redeem(request: Request, pool: Pool, signer: Signer, now: Now) -> Response:
    form = await sign_in_form(request, FORM_FIELDS, sign_in_links.PARAMETER)
    secret = form.get(sign_in_links.PARAMETER, "")
    if not secret or len(secret) > MAX_SECRET:
        return refused("The form carries no sign-in link.", 400)
    async with pool.acquire() as conn, conn.transaction():
        try:
            link = await sign_in_links.redeem(conn, secret, now=now)
        except sign_in_links.LinkRefused as exc:
            return refused(str(exc), 410)
        cookie = await sessions.start(conn, signer, link.username, now=now)
    response = RedirectResponse(local_path(link.next_path), status_code=303)
    browser.set_cookie(response, cookie, seconds=sessions.HOURS * 3600)
    return response
