"""Kubernetes launches over the web API (in this process): a run's editors queue its next
attempt as an Indexed Job; the namespace is never the request's, and a malformed image or
quantity is refused with nothing queued."""

from __future__ import annotations

import json

import asyncpg
import httpx

from tests.web.test_slurm_launches import new_run

JOB = {"indexes": 4, "image": "registry.local/trainer:1", "command": ["python", "train.py"],
       "environment": {"LR": "0.1"}, "requests": {"cpu": "2"},
       "limits": {"nvidia.com/gpu": "1"}}


async def test_an_editor_queues_an_indexed_job_whose_pods_are_the_members(
        client: httpx.AsyncClient, db: asyncpg.Connection) -> None:
    run_id = await new_run(client)
    queued = await client.post(f"/api/v1/runs/{run_id}/kubernetes-launches", json=JOB)
    assert queued.status_code == 201, queued.text
    body = queued.json()
    assert (body["attempt"], body["members"]) == (1, ["rank-0", "rank-1", "rank-2", "rank-3"])
    (listed,) = (await client.get(f"/api/v1/runs/{run_id}/launches")).json()
    assert (listed["backend"], listed["launch_id"], listed["state"], listed["nodes"],
            listed["attempt_state"]) == ("kubernetes", body["kubernetes_launch"], "queued", 4,
                                         "pending")
    row = await db.fetchrow("SELECT options FROM slurm_launches WHERE launch_id = $1",
                            body["kubernetes_launch"])
    assert row is not None
    assert json.loads(row["options"]) == {"image": "registry.local/trainer:1",
                                          "requests": {"cpu": "2"},
                                          "limits": {"nvidia.com/gpu": "1"}, "requeue": True}


async def test_a_namespace_in_the_request_and_malformed_values_are_refused(
        client: httpx.AsyncClient, db: asyncpg.Connection) -> None:
    run_id = await new_run(client)
    url = f"/api/v1/runs/{run_id}/kubernetes-launches"
    for wrong, said in (({"image": "Bad Image"}, "not an image reference"),
                        ({"limits": {"memory": "a lot"}}, "resource limits memory"),
                        ({"indexes": 2}, "rank-3 are not members")):
        refused = await client.post(url, json={**JOB, **wrong})
        assert refused.status_code == 422, refused.text
        assert said in refused.text
    ignored = await client.post(url, json={**JOB, "namespace": "kube-system"})
    assert ignored.status_code == 201  # an unknown field: the namespace stays the operator's
    assert await db.fetchval("SELECT count(*) FROM slurm_launches WHERE run_id = $1",
                             run_id) == 1
