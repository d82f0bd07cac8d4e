"""Nodes and launches over the web API (in this process): admins hand out enrollment tokens,
list nodes and scope them to projects; a run's editors launch and its viewers list its
launches; mistakes are refused with what and where."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg
import httpx
from fastapi import FastAPI

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tests.support.web import Connect
from tuneplane.controlplane import nodes
from tuneplane.web import dependencies

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"},
    {"id": "eval", "kind": "jsonl", "path": "e.jsonl", "owner": "rank-1"}]}


async def test_an_admin_enrolls_a_node_and_launches_a_run_on_it(
        admin: httpx.AsyncClient, client: httpx.AsyncClient, db: asyncpg.Connection) -> None:
    node = f"host-{uuid.uuid4().hex[:8]}"
    issued = await admin.post(f"/api/v1/nodes/{node}/enrollment-token", json={})
    assert issued.status_code == 201, issued.text
    token = issued.json()["enrollment_token"]
    assert token.startswith("tpe_")
    enrolled = await nodes.enroll(db, token, "gpu-17", now=dt.datetime.now(dt.UTC))
    assert node in [n["name"] for n in (await admin.get("/api/v1/nodes")).json()]
    assert (await client.get("/api/v1/nodes")).status_code == 403
    run_id = f"launched-{uuid.uuid4().hex[:8]}"
    assert (await client.post("/api/v1/runs", json={"run_id": run_id,
                                                    "integration": ARTIFACT})).status_code == 201
    launched = await client.post(f"/api/v1/runs/{run_id}/launches", json={
        "node": node, "members": ["rank-0", "rank-1"], "command": ["python", "train.py"],
        "environment": {"LR": "0.1"}})
    assert launched.status_code == 201, launched.text
    body = launched.json()
    assert body["attempt"] == 1
    assert len(body["launches"]) == 2
    listed = (await client.get(f"/api/v1/runs/{run_id}/launches")).json()
    assert [(x["member"], x["node"], x["state"]) for x in listed] == [
        ("rank-0", node, "pending"), ("rank-1", node, "pending")]
    again = await admin.post(f"/api/v1/runs/{run_id}/launches", json={
        "node": node, "members": ["rank-0"], "command": ["python", "train.py"]})
    assert again.status_code == 409  # attempt 1 is still running
    assert "attempt 1 is still running" in again.json()["detail"]
    assert enrolled.name == node


async def test_launch_mistakes_viewers_and_scoped_nodes_are_refused(
        admin: httpx.AsyncClient, client: httpx.AsyncClient, api: Connect,
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    run_id = f"refused-{uuid.uuid4().hex[:8]}"
    await client.post("/api/v1/runs", json={"run_id": run_id, "integration": ARTIFACT})
    body = {"node": "nowhere", "members": ["rank-0"], "command": ["true"]}
    viewer = await user_token(db, initialised, "viewer", roles={"default": "viewer"})
    async with api(viewer) as reader:
        denied = await reader.post(f"/api/v1/runs/{run_id}/launches", json=body)
        assert denied.status_code == 403
        assert "is a viewer of project 'default'; this needs editor" in denied.json()["detail"]
        assert (await reader.get(f"/api/v1/runs/{run_id}/launches")).status_code == 200
    assert (await client.post("/api/v1/nodes/x/enrollment-token", json={})).status_code == 403
    unknown = await client.post(f"/api/v1/runs/{run_id}/launches", json=body)
    assert unknown.status_code == 422
    assert "no enrolled node 'nowhere'" in unknown.json()["detail"]
    empty = await client.post(f"/api/v1/runs/{run_id}/launches", json={**body, "command": []})
    assert empty.status_code == 422
    assert "command" in str(empty.json()["detail"])
    bad_name = await admin.post("/api/v1/nodes/Bad%20Name/enrollment-token", json={})
    assert bad_name.status_code == 422
    assert "node name 'Bad Name'" in bad_name.json()["detail"]
    node = f"scoped-{uuid.uuid4().hex[:8]}"
    issued = (await admin.post(f"/api/v1/nodes/{node}/enrollment-token", json={})).json()
    await nodes.enroll(db, issued["enrollment_token"], "gpu-1", now=dt.datetime.now(dt.UTC))
    other = f"team-{uuid.uuid4().hex[:8]}"
    assert (await admin.post("/api/v1/projects", json={"name": other})).status_code == 201
    scope = {"projects": [other]}
    assert (await client.put(f"/api/v1/nodes/{node}/projects", json=scope)).status_code == 403
    assert (await admin.put(f"/api/v1/nodes/{node}/projects", json=scope)).status_code == 200
    scoped = await client.post(f"/api/v1/runs/{run_id}/launches", json={**body, "node": node})
    assert scoped.status_code == 422
    assert scoped.json()["detail"] == (f"node {node!r} does not take launches of project "
                                       f"'default' (run {run_id!r}'s)")
    assert other not in scoped.json()["detail"]  # an editor of default holds no role there
    missing = await admin.put(f"/api/v1/nodes/{node}/projects", json={"projects": ["nope-x"]})
    assert (missing.status_code, missing.json()["detail"]) == (404, "no project 'nope-x'")
    assert (await admin.put(f"/api/v1/nodes/{node}/projects",
                            json={"projects": None})).status_code == 200
    launched = await client.post(f"/api/v1/runs/{run_id}/launches", json={**body, "node": node})
    assert launched.status_code == 201, launched.text


async def test_the_clock_is_injected(web_app: FastAPI, admin: httpx.AsyncClient) -> None:
    """Token checks and expiry times read one clock, which tests may set."""
    soon = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(minutes=1)
    later = soon + dt.timedelta(days=100)  # past the admin's user token (90 days)
    url = f"/api/v1/nodes/host-{uuid.uuid4().hex[:8]}/enrollment-token"
    try:
        web_app.dependency_overrides[dependencies.now] = lambda: soon
        issued = await admin.post(url, json={"ttl_seconds": 600})
        web_app.dependency_overrides[dependencies.now] = lambda: later
        expired = await admin.post(url, json={})
    finally:
        del web_app.dependency_overrides[dependencies.now]
    assert issued.status_code == 201, issued.text
    assert issued.json()["expires_at"] == (soon + dt.timedelta(seconds=600)).isoformat()
    assert expired.status_code == 401
    assert expired.json()["detail"] == "user token refused: token expired"
