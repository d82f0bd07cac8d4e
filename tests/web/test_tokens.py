"""Personal API tokens over the web API: made (shown once, 90 days by default), listed,
used, revoked (refused at once); scoped to projects (a scoped token reaches only those, has
no admin rights and makes no token reaching further)."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tests.support.web import Connect

ARTIFACT = {"version": 1,
            "sources": [{"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}


async def test_a_token_is_made_listed_used_and_revoked_at_once(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints) -> None:
    mine = await user_token(db, initialised, "scripter", roles={"default": "viewer"})
    async with api(mine) as me:
        made = await me.post("/api/v1/tokens", json={"name": "nightly report"})
        assert made.status_code == 201, made.text
        body = made.json()
        expires = dt.datetime.fromisoformat(body["expires_at"])
        assert 89 <= (expires - dt.datetime.now(dt.UTC)).days <= 90
        listed = (await me.get("/api/v1/tokens")).json()
        assert [t["name"] for t in listed] == ["tests", "nightly report"]
        assert all("token" not in t for t in listed)  # the value is shown once
        async with api(body["token"]) as script:
            assert (await script.get("/api/v1/runs")).status_code == 200
            done = await me.delete(f"/api/v1/tokens/{body['token_id']}")
            assert done.json()["changed"] is True
            refused = await script.get("/api/v1/runs")
        assert refused.status_code == 401
        assert refused.json()["detail"] == "user token refused: the token was revoked"
        assert (await me.post("/api/v1/tokens", json={"name": "x", "days": 366})
                ).status_code == 422


async def test_a_scoped_token_reaches_its_projects_only(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints) -> None:
    a, b = (f"{x}-{uuid.uuid4().hex[:6]}" for x in ("tok-a", "tok-b"))
    owner = await user_token(db, initialised, "two-teams", roles={a: "editor", b: "editor"})
    runs = {}
    async with api(owner) as full:
        for project in (a, b):
            made = await full.post("/api/v1/runs", json={"project": project,
                                                         "integration": ARTIFACT})
            runs[project] = made.json()["run_id"]
        scoped = (await full.post("/api/v1/tokens", json={"name": "a only",
                                                          "projects": [a]})).json()
    assert scoped["projects"] == [a]
    async with api(scoped["token"]) as narrow:
        assert (await narrow.get(f"/api/v1/runs/{runs[a]}")).status_code == 200
        assert (await narrow.get(f"/api/v1/runs/{runs[b]}")).status_code == 404
        wider = await narrow.post("/api/v1/tokens", json={"name": "b", "projects": [b]})
        assert wider.status_code == 403
        assert f"cannot reach project(s) {b}" in wider.json()["detail"]
        inherited = (await narrow.post("/api/v1/tokens", json={"name": "again"})).json()
        assert inherited["projects"] == [a]


async def test_an_admin_s_scoped_token_has_no_admin_rights_and_admins_revoke_any(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints) -> None:
    boss = await user_token(db, initialised, "boss", admin=True)
    other = await user_token(db, initialised, "someone", roles={"default": "viewer"})
    async with api(boss) as admin, api(other) as someone:
        scoped = (await admin.post("/api/v1/tokens", json={"name": "ro",
                                                           "projects": ["default"]})).json()
        async with api(scoped["token"]) as narrow:
            assert (await narrow.get("/api/v1/users")).status_code == 403
        theirs = (await someone.post("/api/v1/tokens", json={"name": "mine"})).json()
        assert (await someone.delete(f"/api/v1/tokens/{scoped['token_id']}")
                ).status_code == 404  # not theirs: as if absent
        assert (await admin.delete(f"/api/v1/tokens/{theirs['token_id']}")).status_code == 200
