"""Run and attempt management over the web API (and the CLI): create, start, end, retry."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import asyncpg
import httpx

from tests.support.credentials import user_token
from tests.support.environment import BIN, Endpoints
from tests.support.web import Connect
from tuneplane.controlplane.mapping import frozen_mapping

ARTIFACT = {"version": 1,
            "sources": [{"id": "train", "kind": "jsonl", "path": "/d/m.jsonl", "owner": "rank-0"}],
            "mappings": [{"tag": "loss", "name": "loss", "goal": "minimize"}]}


async def test_a_run_is_created_attempted_ended_and_retried(client: httpx.AsyncClient,
                                                            db: asyncpg.Connection) -> None:
    run_id = f"managed-{uuid.uuid4().hex[:8]}"
    created = await client.post("/api/v1/runs", json={"run_id": run_id,
                                                      "integration": ARTIFACT})
    assert created.status_code == 201, created.text
    assert created.json() == {"run_id": run_id}
    again = await client.post("/api/v1/runs", json={"run_id": run_id, "integration": ARTIFACT})
    assert again.status_code == 409
    first = await client.post(f"/api/v1/runs/{run_id}/attempts")
    assert first.json() == {"run_id": run_id, "attempt": 1}
    frozen = await frozen_mapping(db, run_id, 1)
    assert frozen is not None
    assert [m.name for m in frozen] == ["loss"]
    busy = await client.post(f"/api/v1/runs/{run_id}/attempts")
    assert busy.status_code == 409
    assert "still running" in busy.json()["detail"]
    ended = await client.post(f"/api/v1/runs/{run_id}/attempts/1/end", json={"state": "failed"})
    assert ended.json() == {"ended": True}
    repeat = await client.post(f"/api/v1/runs/{run_id}/attempts/1/end", json={"state": "failed"})
    assert repeat.json() == {"ended": False}
    other = await client.post(f"/api/v1/runs/{run_id}/attempts/1/end", json={})
    assert other.status_code == 409
    retry = await client.post(f"/api/v1/runs/{run_id}/attempts")
    assert retry.json()["attempt"] == 2  # a retry is attempt 2
    detail = (await client.get(f"/api/v1/runs/{run_id}")).json()
    assert [(a["attempt"], a["state"]) for a in detail["attempts"]] == [(1, "failed"),
                                                                        (2, "running")]
    assert detail["created_by"].startswith("tester-")


async def test_bad_runs_are_refused_clearly(client: httpx.AsyncClient) -> None:
    broken = {**ARTIFACT, "sources": []}
    bad = await client.post("/api/v1/runs", json={"integration": broken})
    assert bad.status_code == 422
    assert "artifact.sources must contain at least 1 items" in bad.json()["detail"]
    for bad_id in ("bad id!", "run\n", "../run"):
        named = await client.post("/api/v1/runs", json={"run_id": bad_id,
                                                         "integration": ARTIFACT})
        assert named.status_code == 422, bad_id
    escaping = {**ARTIFACT, "sources": [{"id": "train", "kind": "jsonl", "path": "/d/m.jsonl",
                                         "owner": "../../x"}]}
    owner = await client.post("/api/v1/runs", json={"integration": escaping})
    assert owner.status_code == 422
    assert "artifact.sources[0].owner '../../x' is not a name" in owner.json()["detail"]
    for ref in ("http://169.254.169.254/latest", "file:///etc/passwd"):
        fetching = {**ARTIFACT, "channels": [{
            "id": "c", "path": "/d/c.jsonl", "owner": "rank-0", "max_record_bytes": 64,
            "max_bytes_per_minute": 64, "schema": {"items": {"$ref": ref}}}]}
        refused = await client.post("/api/v1/runs", json={"integration": fetching})
        assert refused.status_code == 422
        assert f"channels[0].schema.items.$ref is {ref!r}: only local references" in \
            refused.json()["detail"]
    assert (await client.post("/api/v1/runs/none-such/attempts")).status_code == 404
    assert (await client.get("/api/v1/runs/none-such")).status_code == 404


async def test_a_run_known_by_its_telemetry_cannot_be_created_in_another_project(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints) -> None:
    # A run whose telemetry came first (a token issued by hand) is the default project's:
    # an editor of another project creating it there would take its curves from default's
    # viewers and show them to its own.
    run_id = f"telemetry-first-{uuid.uuid4().hex[:8]}"
    await db.execute("INSERT INTO batch_ledger (run_id, attempt, member, batch_id, "
                     "kafka_partition, kafka_offset, points, sealed_at) "
                     "VALUES ($1, 1, 'rank-0', 'b', 0, 0, 5, 0)", run_id)
    team = f"team-{uuid.uuid4().hex[:6]}"
    editor = await user_token(db, initialised, "editor", roles={team: "editor"})
    async with api(editor, path="/api/v1") as other:
        assert (await other.get(f"/runs/{run_id}/attempts")).status_code == 404
        claimed = await other.post("/runs", json={"run_id": run_id, "project": team,
                                                  "integration": ARTIFACT})
        assert claimed.status_code == 409, claimed.text
        assert claimed.json()["detail"] == f"run {run_id!r} exists"
        assert (await other.get(f"/runs/{run_id}/attempts")).status_code == 404
    assert await db.fetchval("SELECT project FROM runs WHERE run_id = $1", run_id) is None
    default = await user_token(db, initialised, "editor", roles={"default": "editor"})
    async with api(default, path="/api/v1") as own:  # its own project gives it an artifact
        made = await own.post("/runs", json={"run_id": run_id, "integration": ARTIFACT})
        assert made.status_code == 201, made.text
        assert (await own.get(f"/runs/{run_id}/attempts")).status_code == 200


def test_the_cli_manages_runs_too(tmp_path: Path, initialised: object) -> None:
    import json
    artifact = tmp_path / "integration.json"
    artifact.write_text(json.dumps(ARTIFACT))
    admin = str(BIN / "tuneplane-admin")

    def run(*args: str) -> str:
        done = subprocess.run([admin, *args], capture_output=True, text=True, check=False,
                              env=os.environ)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    run_id = run("run-create", "--integration", str(artifact))
    assert run_id.startswith("run-")
    assert run("attempt-start", "--run", run_id) == "1"
    assert run("attempt-end", "--run", run_id, "--attempt", "1") == \
        f"run {run_id} attempt 1: finished"
    assert run("attempt-start", "--run", run_id) == "2"
    assert "attempt 1: finished" in run("run-show", run_id)
