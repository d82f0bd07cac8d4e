"""Slurm launches over the web API (in this process): a run's editors queue its next attempt
as a Slurm job and its viewers list it; mistakes are refused with what and where, and
nothing is queued for them."""

from __future__ import annotations

import json
import uuid

import asyncpg
import httpx

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tests.support.web import Connect

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"},
    {"id": "eval", "kind": "jsonl", "path": "e.jsonl", "owner": "rank-3"}]}
JOB = {"nodes": 2, "tasks_per_node": 2, "command": ["python", "train.py"],
       "spool_root": "/local/scratch/tuneplane", "environment": {"LR": "0.1"},
       "partition": "gpu", "time_limit": "2:00:00"}


async def new_run(client: httpx.AsyncClient) -> str:
    run_id = f"slurm-{uuid.uuid4().hex[:8]}"
    created = await client.post("/api/v1/runs", json={"run_id": run_id, "integration": ARTIFACT})
    assert created.status_code == 201, created.text
    return run_id


async def test_an_editor_queues_a_slurm_job_whose_tasks_are_the_members(
        client: httpx.AsyncClient, db: asyncpg.Connection) -> None:
    run_id = await new_run(client)
    queued = await client.post(f"/api/v1/runs/{run_id}/slurm-launches", json=JOB)
    assert queued.status_code == 201, queued.text
    body = queued.json()
    assert (body["attempt"], body["members"]) == (1, ["rank-0", "rank-1", "rank-2", "rank-3"])
    (listed,) = (await client.get(f"/api/v1/runs/{run_id}/launches")).json()
    assert (listed["backend"], listed["launch_id"], listed["state"], listed["job_id"],
            listed["attempt_state"], listed["nodes"], listed["tasks_per_node"]) == (
        "slurm", body["slurm_launch"], "queued", None, "pending", 2, 2)
    row = await db.fetchrow("SELECT command, environment, options, spool_root FROM "
                            "slurm_launches WHERE launch_id = $1", body["slurm_launch"])
    assert row is not None
    assert row["spool_root"] == "/local/scratch/tuneplane"
    assert json.loads(row["options"]) == {"partition": "gpu", "time_limit": "2:00:00",
                                          "workdir": "", "requeue": True}
    assert json.loads(row["environment"]) == {"LR": "0.1"}
    again = await client.post(f"/api/v1/runs/{run_id}/slurm-launches", json=JOB)
    assert again.status_code == 409  # attempt 1 waits in the queue
    assert "attempt 1 is still pending" in again.json()["detail"]


async def test_slurm_launch_mistakes_and_viewers_are_refused_and_nothing_is_queued(
        client: httpx.AsyncClient, api: Connect, initialised: Endpoints,
        db: asyncpg.Connection) -> None:
    run_id = await new_run(client)
    url = f"/api/v1/runs/{run_id}/slurm-launches"
    viewer = await user_token(db, initialised, "viewer", roles={"default": "viewer"})
    async with api(viewer) as reader:
        denied = await reader.post(url, json=JOB)
        assert denied.status_code == 403
        assert "this needs editor" in denied.json()["detail"]
    refusals = {
        "owner(s) rank-3 are not members of a job of 1 node(s) x 2 task(s)": {
            **JOB, "nodes": 1},
        "time limit '2 hours' is not Slurm's form": {**JOB, "time_limit": "2 hours"},
        "partition 'gpu;rm' is not a Slurm partition name": {**JOB, "partition": "gpu;rm"},
        "working directory 'relative/dir' must be an absolute path": {
            **JOB, "workdir": "relative/dir"},
        "environment variable SLURM_JOB_ID is set by Slurm or Tuneplane": {
            **JOB, "environment": {"SLURM_JOB_ID": "1"}},
        "environment variable 'A-B' needs a name of letters": {
            **JOB, "environment": {"A-B": "1"}},
    }
    for words, body in refusals.items():
        refused = await client.post(url, json=body)
        assert refused.status_code == 422, (words, refused.text)
        assert words in refused.json()["detail"], refused.text
    for field, value in (("spool_root", "relative/spool"), ("nodes", 0), ("command", [])):
        malformed = await client.post(url, json={**JOB, field: value})
        assert malformed.status_code == 422, (field, malformed.text)
        assert field in str(malformed.json()["detail"])
    missing = await client.post("/api/v1/runs/no-such-run/slurm-launches", json=JOB)
    assert missing.status_code == 404, missing.text
    assert await db.fetchval("SELECT count(*) FROM slurm_launches WHERE run_id = $1",
                             run_id) == 0
    assert await db.fetchval("SELECT count(*) FROM attempts WHERE run_id = $1", run_id) == 0
