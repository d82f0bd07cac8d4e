"""Every route of the OpenAPI document against every role, on a run of project A: the
status each caller gets is the one its role allows. A route missing from ``REQUIRED`` fails
the test, so a new route cannot ship without saying who may call it.

Roles: no token, a viewer, an editor and an owner of A, an admin, and a stranger (the owner
of another project). Expected: no token 401; a stranger 404 on A's resources (as for ones
that do not exist) and 403 on admin routes; a role below the route's 403; a role at or
above it neither 401, 403 nor 404 (the resources exist; a deliberately invalid body answers
422, so nothing is changed). Reporting routes take workload tokens only: 401 for every user.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import asyncpg
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from tests.support.credentials import add_user, user_token
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process
from tests.support.truth import member_batch
from tests.support.web import Connect
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import api_tokens, projects
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

ROLES = ["none", "viewer", "editor", "owner", "admin", "stranger"]
RANK = {"viewer": 1, "editor": 2, "owner": 3}

#: (method, path) → who may call it: a role of A ("viewer", "editor", "owner"), "admin",
#: "user" (anyone signed in) or "workload" (a workload token; no user).
REQUIRED = {
    ("POST", "/report/v1/lifecycle"): "workload",
    ("POST", "/report/v1/logs"): "workload",
    ("POST", "/report/v1/reports"): "workload",
    ("GET", "/api/v1/destinations"): "admin",
    ("GET", "/api/v1/destinations/{name}"): "admin",
    ("PUT", "/api/v1/destinations/{name}"): "admin",
    ("DELETE", "/api/v1/destinations/{name}"): "admin",
    ("GET", "/api/v1/telemetry-collector/config"): "admin",
    ("POST", "/api/v1/nodes/{name}/enrollment-token"): "admin",
    ("PUT", "/api/v1/nodes/{name}/projects"): "admin",
    ("GET", "/api/v1/nodes"): "admin",
    ("POST", "/api/v1/runs/{run_id}/launches"): "editor",
    ("POST", "/api/v1/runs/{run_id}/slurm-launches"): "editor",
    ("POST", "/api/v1/runs/{run_id}/kubernetes-launches"): "editor",
    ("GET", "/api/v1/runs/{run_id}/launches"): "viewer",
    ("GET", "/api/v1/runs"): "user",
    ("GET", "/api/v1/run-table"): "user",
    ("GET", "/api/v1/run-columns"): "user",
    ("POST", "/api/v1/runs"): "editor",
    ("GET", "/api/v1/runs/{run_id}"): "viewer",
    ("POST", "/api/v1/runs/{run_id}/attempts"): "editor",
    ("GET", "/api/v1/runs/{run_id}/attempts"): "viewer",
    ("POST", "/api/v1/runs/{run_id}/attempts/{attempt}/end"): "editor",
    ("POST", "/api/v1/runs/{run_id}/deletion"): "owner",
    ("DELETE", "/api/v1/runs/{run_id}/deletion"): "owner",
    ("POST", "/api/v1/runs/{run_id}/attempts/{attempt}/deletion"): "owner",
    ("DELETE", "/api/v1/runs/{run_id}/attempts/{attempt}/deletion"): "owner",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/members"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/late"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/series"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/scalars"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/canonical"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/curves/{name}"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/tag"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/charts/sections"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/charts"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/rich"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/scalars/export"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/rich/tags"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/rich/steps"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/rich/histograms"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/attempts/{attempt}/rich/text"): "viewer",
    ("GET", "/api/v1/rich/{object_key}"): "viewer",
    ("GET", "/api/v1/media/{object_key}"): "viewer",
    ("GET", "/api/v1/projects"): "user",
    ("POST", "/api/v1/projects"): "admin",
    ("GET", "/api/v1/projects/{project}/members"): "owner",
    ("PUT", "/api/v1/projects/{project}/members/{username}"): "owner",
    ("DELETE", "/api/v1/projects/{project}/members/{username}"): "owner",
    ("GET", "/api/v1/users"): "admin",
    ("GET", "/api/v1/tokens"): "user",
    ("POST", "/api/v1/tokens"): "user",
    ("DELETE", "/api/v1/tokens/{token_id}"): "user",
    ("POST", "/api/v1/users/{username}/disable"): "admin",
}

#: Routes outside the OpenAPI document, and who may call them: the sign-in pages and the
#: liveness check anyone; a page anyone (its data comes from the API, checked above); the
#: session's own routes a signed-in caller.
OUTSIDE = {
    ("GET", "/healthz"): "anyone",
    ("GET", "/login"): "anyone",
    ("POST", "/auth/login"): "anyone",
    ("GET", "/auth/link"): "anyone",  # a one-time sign-in link's page; it spends nothing
    ("POST", "/auth/link"): "anyone",  # spends the link the form carries
    ("GET", "/runs/{run_id}"): "anyone",
    ("GET", "/runs/{run_id}/charts"): "anyone",
    ("GET", "/runs/{run_id}/media"): "anyone",
    ("GET", "/runs"): "anyone",
    ("GET", "/"): "anyone",
    ("GET", "/auth/oidc/login"): "anyone",
    ("GET", "/auth/callback"): "anyone",
    ("POST", "/auth/logout"): "user",
    ("GET", "/auth/session"): "user",
}

#: Bodies that pass every check but the body's own: a caller allowed gets 422, so no call
#: changes anything. "{project}" is project A.
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/api/v1/runs"): {"project": "{project}", "integration": {}},
    ("POST", "/api/v1/runs/{run_id}/launches"): {},
    ("POST", "/api/v1/runs/{run_id}/slurm-launches"): {},
    ("POST", "/api/v1/runs/{run_id}/kubernetes-launches"): {},
    ("POST", "/api/v1/runs/{run_id}/attempts/{attempt}/end"): {"state": "bogus"},
    ("POST", "/api/v1/runs/{run_id}/deletion"): {"confirm": ""},
    ("POST", "/api/v1/runs/{run_id}/attempts/{attempt}/deletion"): {"confirm": ""},
    ("PUT", "/api/v1/destinations/{name}"): {},
    ("PUT", "/api/v1/nodes/{name}/projects"): {},
    ("POST", "/api/v1/nodes/{name}/enrollment-token"): {"ttl_seconds": 1},
    ("POST", "/api/v1/projects"): {"name": ""},
    ("PUT", "/api/v1/projects/{project}/members/{username}"): {"role": "king"},
    ("POST", "/api/v1/tokens"): {"name": ""},
    ("POST", "/report/v1/lifecycle"): {},
    ("POST", "/report/v1/logs"): {},
    ("POST", "/report/v1/reports"): {},
}
QUERIES = {"/api/v1/runs/{run_id}/attempts/{attempt}/scalars":
           {"member": "rank-0", "source": "train", "tag": "tag0"},
           "/api/v1/runs/{run_id}/attempts/{attempt}/scalars/export":
           {"member": "rank-0", "source": "train", "tag": "tag0"},
           "/api/v1/runs/{run_id}/attempts/{attempt}/tag": {"tag": "tag0"},
           "/api/v1/runs/{run_id}/attempts/{attempt}/charts": {"section": ""},
           **{f"/api/v1/runs/{{run_id}}/attempts/{{attempt}}/rich/{what}":
              {"member": "rank-0", "source": "train", "tag": "img"}
              for what in ("steps", "histograms", "text")}}


def handled(routes: Iterable[object], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(method, path) of every route the app answers, the document's or not (this FastAPI
    keeps an included router whole: ``original_router``, under its include's prefix)."""
    for route in routes:
        if isinstance(route, APIRoute):
            path = re.sub(r"\{(\w+):\w+\}", r"{\1}", prefix + route.path)  # {k:path}: {k}
            yield from ((method, path) for method in route.methods or ())
        elif (inner := getattr(route, "original_router", None)) is not None:
            context = getattr(route, "include_context", None)
            yield from handled(inner.routes, prefix + getattr(context, "prefix", ""))


def expected(level: str, role: str) -> str:
    """What ``role`` gets from a route needing ``level``: a status, or "allowed"."""
    if role == "none" or level == "workload":
        return "401"
    if level == "user" or role == "admin":
        return "allowed"
    if level == "admin":
        return "403"
    if role == "stranger":
        return "404"
    return "allowed" if RANK[role] >= RANK[level] else "403"


def seen(status: int, level: str) -> str:
    """A status as the matrix counts it: on an admin's or any user's route, a 404 is an
    absent name (any will do there), so those are allowed unless 401 or 403."""
    refused = (401, 403) if level in ("admin", "user") else (401, 403, 404)
    return str(status) if status in refused else "allowed"


def body(method: str, path: str, a: dict[str, Any]) -> Any:
    if method not in ("POST", "PUT"):
        return None
    given = BODIES.get((method, path))
    if isinstance(given, dict):
        return {k: a["project"] if v == "{project}" else v for k, v in given.items()}
    return given


@pytest.fixture
async def project_a(initialised: Endpoints, projector: Process, db: asyncpg.Connection,
                    api: Connect, run_id: str) -> dict[str, Any]:
    """Project A with a run holding telemetry (curve "loss", a rich record), the callers,
    a spare member to revoke and a user to disable."""
    a = f"authz-{uuid.uuid4().hex[:8]}"
    tokens = {role: await user_token(db, initialised, role, roles={a: role})
              for role in ("viewer", "editor", "owner")}
    tokens["admin"] = await user_token(db, initialised, "admin", admin=True)
    tokens["stranger"] = await user_token(db, initialised, "stranger",
                                          roles={f"other-{a}": "owner"})
    spare = await add_user(db, "spare", roles={a: "viewer"})
    artifact = {"version": 1, "mappings": [{"tag": "tag0", "name": "loss", "goal": "minimize"}],
                "sources": [{"id": "train", "kind": "jsonl", "path": "m.jsonl",
                             "owner": "rank-0"}]}
    async with api(tokens["owner"]) as owner:
        made = await owner.post("/api/v1/runs", json={"run_id": run_id, "project": a,
                                                      "integration": artifact})
        assert made.status_code == 201, made.text
        assert (await owner.post(f"/api/v1/runs/{run_id}/attempts")).status_code == 201
    batch = member_batch(MemberKey(run_id, 1, "rank-0"), 1, 20)
    batch.rich.add(source="train", tag="img", step=1, wall_time=1.0, payload=b"PNG-a",
                   kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=0)
    await produce(initialised.kafka_bootstrap, [batch])
    deadline = time.monotonic() + 60
    while not await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1", run_id):
        assert time.monotonic() < deadline, "the run's batch was not projected"
        await asyncio.sleep(0.1)
    key = await db.fetchval("SELECT object_key FROM rich_records WHERE run_id = $1", run_id)
    return {"project": a, "run_id": run_id, "tokens": tokens, "object_key": key,
            "spare": spare, "disable": await add_user(db, "leaver")}


def concrete(path: str, a: dict[str, Any]) -> str:
    name = ("loss" if path.endswith("/curves/{name}") else
            f"absent-{uuid.uuid4().hex[:6]}")  # nodes and destinations: any name will do
    username = a["disable"] if path.endswith("/disable") else a["spare"]
    return path.format(run_id=a["run_id"], attempt=1, name=name, project=a["project"],
                       object_key=a["object_key"], username=username, token_id="tok_absent")


async def test_every_route_answers_every_role_as_its_role_allows(
        web_app: FastAPI, api: Connect, db: asyncpg.Connection,
        project_a: dict[str, Any]) -> None:
    routes = {(method.upper(), path) for path, ops in web_app.openapi()["paths"].items()
              for method in ops}
    assert routes == set(REQUIRED), ("routes without a declared requirement (or gone): "
                                     f"{sorted(routes ^ set(REQUIRED))}")
    every = set(handled(web_app.routes))
    assert every - routes == set(OUTSIDE), ("routes outside the document, undeclared: "
                                            f"{sorted((every - routes) ^ set(OUTSIDE))}")
    restore: dict[str, Callable[[], Any]] = {
        "DELETE": lambda: projects.grant(db, project_a["project"], project_a["spare"],
                                         projects.Role.VIEWER)}
    wrong: list[str] = []
    for method, path in sorted(REQUIRED):
        for role in ROLES:
            token = project_a["tokens"].get(role)
            async with api(token) as http:
                response = await http.request(method, concrete(path, project_a),
                                              params=QUERIES.get(path, {}),
                                              json=body(method, path, project_a))
            level = REQUIRED[(method, path)]
            want, got = expected(level, role), seen(response.status_code, level)
            if want != got:
                wrong.append(f"{method} {path} as {role}: {response.status_code} "
                             f"{response.text[:120]} (want {want})")
            if method in restore and got == "allowed":
                await restore[method]()
    assert not wrong, "\n".join(wrong)


async def test_lists_hold_only_what_the_caller_may_view(
        api: Connect, project_a: dict[str, Any]) -> None:
    run_id, tokens = project_a["run_id"], project_a["tokens"]
    for role, sees in [("viewer", True), ("admin", True), ("stranger", False)]:
        async with api(tokens[role]) as http:
            listed = [r["run_id"] for r in
                      (await http.get("/api/v1/runs", params={"after": run_id[:-1]})).json()]
            mine = {p["project"] for p in (await http.get("/api/v1/projects")).json()}
        assert (run_id in listed) is sees, role
        assert (project_a["project"] in mine) is sees, role


async def test_a_disabled_user_is_refused_at_once(api: Connect, db: asyncpg.Connection,
                                                  initialised: Endpoints,
                                                  project_a: dict[str, Any]) -> None:
    name = await add_user(db, "soon-gone", roles={project_a["project"]: "viewer"})
    _, token, _ = await api_tokens.issue(db, TokenSigner(initialised.jwt_secret), name,
                                         name="t", now=dt.datetime.now(dt.UTC))
    path = f"/api/v1/runs/{project_a['run_id']}"
    async with api(token) as http:
        assert (await http.get(path)).status_code == 200
        async with api(project_a["tokens"]["admin"]) as admin:
            done = await admin.post(f"/api/v1/users/{name}/disable")
        assert done.json() == {"username": name, "disabled": True, "changed": True}
        refused = await http.get(path)
    assert refused.status_code == 401
    assert refused.json()["detail"] == f"user token refused: user {name!r} is disabled"


async def test_the_session_routes_answer_no_one_signed_out(api: Connect) -> None:
    async with api() as anonymous:
        for method, path in [m for m, level in OUTSIDE.items() if level == "user"]:
            answer = await anonymous.request(method, path)
            assert answer.status_code == 401, (method, path)
