"""Who is calling and what they may do.

``caller`` is the user behind a bearer token (a personal token that stands) or a browser
session (``browser``; a change needs the session's CSRF token) — 401 otherwise: neither, a
bad one, a revoked token, an ended session, a disabled user — with the roles it holds by
project; it holds one of
the replica's query slots from then until its answer (``admission.QuerySlots``), so a
caller whose token does not verify never takes one. Every route names what it needs
through one of the dependencies below, and ``tests/web/test_authorization.py`` checks every
route of the OpenAPI document against every role:

- ``admin_only``: nodes, destinations, users, projects' creation;
- ``on_run(role)``: a run's data and actions, by the role held in the run's project;
- ``on_project(role)``: a project's membership.

A run or project the caller holds no role in answers 404, as one that does not exist: no
existence leaks across projects. A role too low answers 403.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

import asyncpg
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import Field, TypeAdapter, ValidationError

from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner
from tuneplane.controlplane import api_tokens, projects, sessions
from tuneplane.controlplane.projects import Role
from tuneplane.telemetry.v1.limits import MAX_ATTEMPT
from tuneplane.web.auth import browser
from tuneplane.web.dependencies import Now, Pool, State
from tuneplane.web.state import WebState

bearer = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


@dataclass(frozen=True, slots=True)
class Caller:
    name: str
    admin: bool = False
    roles: Mapping[str, Role] = field(default_factory=dict)
    scope: tuple[str, ...] | None = None  # a scoped token's projects; None: unscoped
    session: str | None = None  # the browser session's id
    csrf: str | None = None  # the browser session's CSRF token
    place: projects.Place | None = None  # of the path's run, read with the caller's standing

    def role_in(self, project: str) -> Role | None:
        """The role held in ``project``: every role, for an admin."""
        return Role.OWNER if self.admin else self.roles.get(project)

    def projects(self, least: Role = Role.VIEWER) -> list[str] | None:
        """The projects where the caller holds ``least`` or more; None: every project."""
        if self.admin:
            return None
        return sorted(p for p, role in self.roles.items() if role >= least)


#: An attempt number as a route's path parameter reads it (``routes.params.AttemptNo``).
ATTEMPT = TypeAdapter(Annotated[int, Field(ge=1, le=MAX_ATTEMPT)])


def attempt_number(segment: str) -> int | None:
    """The attempt a path's segment is served as, read as the route reads it (``+1``,
    ``1.0`` and ``01`` are attempt 1), so that the attempt whose deletion is checked is the
    one answered; None when it is no attempt (the route answers 422)."""
    try:
        return ATTEMPT.validate_python(segment)
    except ValidationError:
        return None


def asked(request: Request) -> projects.Asked | None:
    """The run the path names, and its attempt's number (None: none, or not a number that
    could be one); None when the path names no run."""
    run_id = request.path_params.get("run_id")
    if not isinstance(run_id, str):
        return None
    attempt = request.path_params.get("attempt")
    return run_id, None if attempt is None else attempt_number(str(attempt))


def unauthorised(detail: str) -> HTTPException:
    return HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


async def caller(request: Request, credentials: Credentials, web: State,
                 now: Now) -> AsyncIterator[Caller]:
    """The calling user: from a bearer user token (a personal token that stands), or else
    from a browser session (one that stands; a change needs its CSRF token). (Its state's
    parts are taken from ``web``, not as dependencies of their own: every authenticated
    request resolves this, and each dependency costs the request more than a statement.)"""
    signer, pool = web.signer, web.pool
    if credentials is None:
        async for browsing in session_caller(request, signer, pool, web, now):
            yield browsing
        return
    try:
        claims = signer.verify(credentials.credentials, TokenKind.USER, now=now.timestamp())
    except TokenError as exc:
        raise unauthorised(f"user token refused: {exc}") from None
    name, ident = str(claims["sub"]), claims.get("jti")
    if not isinstance(ident, str):
        raise unauthorised("user token refused: it names no personal token (issued before "
                           "tokens could be revoked); issue a new one")
    async with web.slots.held_by(f"user:{name}"):  # a query slot (slots.QuerySlots)
        async with pool.acquire() as conn:
            # with the user's roles, and where the path's run stands (for ``on_run``)
            found = await api_tokens.standing(conn, ident, name, asked(request))
        if found.refusal is not None:
            raise unauthorised(f"user token refused: {found.refusal}")
        roles = {} if found.admin else found.roles
        if found.projects is not None:  # a scoped token: its projects only
            roles = {p: r for p, r in roles.items() if p in found.projects}
        yield Caller(name, found.admin, roles, scope=found.projects, place=found.place)


async def session_caller(request: Request, signer: TokenSigner, pool: asyncpg.Pool,
                         web: WebState, now: dt.datetime) -> AsyncIterator[Caller]:
    try:
        found = browser.session_of(request, signer, now=now.timestamp())
    except TokenError as exc:
        raise unauthorised(f"session refused: {exc}; sign in again at /login") from None
    if found is None:
        raise unauthorised("sign in at /login, or send a user token "
                           "(Authorization: Bearer <token>)")
    name, session_id = found
    async with web.slots.held_by(f"user:{name}"):  # a query slot (slots.QuerySlots)
        async with pool.acquire() as conn:
            session = await sessions.standing(conn, session_id, name, asked(request))
        if session.refusal is not None:
            raise unauthorised(f"session refused: {session.refusal}; sign in again at /login")
        browser.check_change(request, session.csrf_token)
        yield Caller(name, session.admin, {} if session.admin else dict(session.roles),
                     session=session_id, csrf=session.csrf_token, place=session.place)


Who = Annotated[Caller, Depends(caller)]


def require(who: Caller, project: str | None, role: Role, what: str) -> None:
    """404 when the caller holds no role in ``project`` (or there is none), 403 when the
    role it holds is below ``role``."""
    held = None if project is None else who.role_in(project)
    if held is None:
        raise HTTPException(404, f"no {what}")
    if held < role:
        raise HTTPException(403, f"user {who.name!r} is a {held.label} of project "
                                 f"{project!r}; this needs {role.label}")


def admin_only(what: str) -> Callable[..., Awaitable[Caller]]:
    """The caller when it is an admin (403 otherwise); ``what`` says what is reserved."""
    async def admin(who: Who) -> Caller:
        if not who.admin:
            raise HTTPException(403, f"user {who.name!r} is not an admin; {what} are for "
                                     "admins")
        return who
    return admin


def on_run(role: Role) -> Callable[..., Awaitable[Caller]]:
    """The caller when it holds ``role`` in the project of the path's ``run_id``; a path's
    ``attempt`` that was deleted is no attempt (404, as one that never was)."""
    async def check(who: Who, web: State, run_id: str, request: Request) -> Caller:
        place = who.place
        if place is None or place.run_id != run_id:  # (read with the caller's standing)
            number = (asked(request) or (run_id, None))[1]
            async with web.pool.acquire() as conn:
                place = await projects.of_attempt(conn, run_id, number)
        project, gone = place.project, place.gone
        require(who, project, role, f"run {run_id!r}")
        undo = request.scope.get("route") is not None and getattr(
            request.scope["route"], "path", "").endswith("/attempts/{attempt}/deletion")
        if gone and not undo:  # (taking its deletion back asks for it)
            attempt = request.path_params.get("attempt", "")
            raise HTTPException(404, f"run {run_id!r} has no attempt {attempt}")
        return who
    return check


def on_project(role: Role) -> Callable[..., Awaitable[Caller]]:
    """The caller when it holds ``role`` in the path's ``project``."""
    async def check(who: Who, pool: Pool, project: str) -> Caller:
        async with pool.acquire() as conn:
            known = await projects.exists(conn, project)
        require(who, project if known else None, role, f"project {project!r}")
        return who
    return check


Viewer = Annotated[Caller, Depends(on_run(Role.VIEWER))]
Editor = Annotated[Caller, Depends(on_run(Role.EDITOR))]
RunOwner = Annotated[Caller, Depends(on_run(Role.OWNER))]
