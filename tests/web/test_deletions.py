"""Deleting a run or an attempt over HTTP (real PostgreSQL): an owner of the run's project
may, after naming it again; an editor may not. A deleted run is at once no run to anyone
(its page, the lists), its id is never given again, its workload tokens are refused, and
until its purge begins its owner may take the deletion back; the same from the command
line, which deletes only what is named again."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg
import pytest

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tests.support.web import Connect
from tests.web.test_destinations import tool
from tuneplane.common.tokens import WorkloadClaims
from tuneplane.controlplane import deletions, projects, runs, standing
from tuneplane.telemetry.v1.identity import MemberKey

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}


async def test_an_owner_deletes_a_run_after_naming_it_and_may_take_it_back(
        initialised: Endpoints, api: Connect, db: asyncpg.Connection) -> None:
    project = f"del-{uuid.uuid4().hex[:8]}"
    await projects.create(db, project)
    tokens = {role: await user_token(db, initialised, role, roles={project: role})
              for role in ("editor", "owner")}
    run_id = f"{project}-run"
    async with api(tokens["owner"], "/api/v1") as owner, \
            api(tokens["editor"], "/api/v1") as editor:
        made = await owner.post("/runs", json={"run_id": run_id, "project": project,
                                               "integration": ARTIFACT})
        assert made.status_code == 201, made.text
        assert (await owner.post(f"/runs/{run_id}/attempts")).status_code == 201
        listed = (await owner.get("/run-table", params={"project": project})).json()
        assert [r["run_id"] for r in listed["runs"]] == [run_id]
        refused = await editor.post(f"/runs/{run_id}/deletion", json={"confirm": run_id})
        assert refused.status_code == 403, refused.text
        misnamed = await owner.post(f"/runs/{run_id}/deletion", json={"confirm": "other"})
        assert misnamed.status_code == 422
        assert run_id in misnamed.json()["detail"]
        deleted = await owner.post(f"/runs/{run_id}/deletion", json={"confirm": run_id})
        assert deleted.status_code == 201, deleted.text
        purge_after = dt.datetime.fromisoformat(deleted.json()["purge_after"])
        assert purge_after > dt.datetime.now(dt.UTC) + dt.timedelta(hours=23)  # the window
        # At once: no run to anyone, its live attempt ended, its tokens refused.
        assert (await owner.get(f"/runs/{run_id}")).status_code == 404
        table = (await owner.get("/run-table", params={"project": project})).json()
        assert (table["runs"], table["total"]) == ([], 0)
        state = await db.fetchval("SELECT state FROM attempts WHERE run_id = $1", run_id)
        assert state == "cancelled"
        facts = await standing.attempt_facts(db, run_id, 1)
        claims = WorkloadClaims(member=MemberKey(run_id, 1, "rank-0"), expires_at=0, issued_at=0)
        assert standing.refusal(claims, facts, None, drain_seconds=30) == (
            f"run {run_id!r} attempt 1 was deleted; its workload tokens are refused")
        again = await owner.post("/runs", json={"run_id": run_id, "project": project,
                                                "integration": ARTIFACT})
        assert again.status_code == 409
        twice = await owner.post(f"/runs/{run_id}/deletion", json={"confirm": run_id})
        assert twice.status_code == 404  # no run to delete
        # Taken back within the window: the run is there again.
        # Only its owners learn a deleted run is there.
        assert (await editor.delete(f"/runs/{run_id}/deletion")).status_code == 404
        assert (await owner.delete(f"/runs/{run_id}/deletion")).status_code == 204
        assert (await owner.get(f"/runs/{run_id}")).status_code == 200
        assert (await owner.delete(f"/runs/{run_id}/deletion")).status_code == 409
    who = await db.fetchrow("SELECT deleted_by, undone_by FROM deletions WHERE run_id = $1",
                            run_id)
    assert who is not None
    assert (who["deleted_by"].startswith("owner"), who["undone_by"] == who["deleted_by"]) == (
        True, True)


async def owned_run(db: asyncpg.Connection, initialised: Endpoints) -> tuple[str, str]:
    """A run of a new project, its attempt 1 started, and a token of the project's owner."""
    project = f"del-{uuid.uuid4().hex[:8]}"
    await projects.create(db, project)
    token = await user_token(db, initialised, "owner", roles={project: "owner"})
    run_id = f"{project}-run"
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id, project=project)
    await runs.start_attempt(db, run_id)
    return run_id, token


async def test_an_attempt_is_deleted_by_name_its_run_staying(
        initialised: Endpoints, api: Connect, db: asyncpg.Connection) -> None:
    run_id, token = await owned_run(db, initialised)
    async with api(token, "/api/v1") as owner:
        wrong = await owner.post(f"/runs/{run_id}/attempts/1/deletion",
                                 json={"confirm": run_id})
        assert wrong.status_code == 422  # an attempt is named RUN/ATTEMPT
        absent = await owner.post(f"/runs/{run_id}/attempts/2/deletion",
                                  json={"confirm": f"{run_id}/2"})
        assert absent.status_code == 404
        done = await owner.post(f"/runs/{run_id}/attempts/1/deletion",
                                json={"confirm": f"{run_id}/1"})
        assert done.status_code == 201, done.text
        assert (await owner.get(f"/runs/{run_id}")).status_code == 200
        # The attempt is no attempt to read: not listed, its routes 404.
        assert (await owner.get(f"/runs/{run_id}")).json()["attempts"] == []
        assert (await owner.get(f"/runs/{run_id}/attempts/1/members")).status_code == 404
        facts = await standing.attempt_facts(db, run_id, 1)
        assert facts is not None
        assert facts.deleted
        assert (await owner.delete(f"/runs/{run_id}/attempts/1/deletion")).status_code == 204
        facts = await standing.attempt_facts(db, run_id, 1)
        assert facts is not None
        assert not facts.deleted
        assert (await owner.get(f"/runs/{run_id}/attempts/1/members")).status_code == 200


async def test_the_command_line_deletes_only_what_is_named_again_and_takes_it_back(
        initialised: Endpoints, base_url: str, db: asyncpg.Connection) -> None:
    run_id, token = await owned_run(db, initialised)
    unnamed = tool(base_url, token, "runs", "delete", run_id)  # no terminal to ask on
    assert unnamed.returncode == 1
    assert f"give --confirm {run_id}" in unnamed.stderr
    wrong = tool(base_url, token, "runs", "delete", run_id, "--confirm", "another")
    assert (wrong.returncode, "nothing deleted" in wrong.stderr) == (1, True)
    assert not await deletions.deleted(db, run_id)
    done = tool(base_url, token, "runs", "delete", run_id, "--confirm", run_id)
    assert done.returncode == 0, done.stderr
    assert f"tuneplane runs undelete {run_id}" in done.stdout
    assert await deletions.deleted(db, run_id)
    back = tool(base_url, token, "runs", "undelete", run_id)
    assert back.returncode == 0, back.stderr
    assert not await deletions.deleted(db, run_id)


@pytest.mark.parametrize("attempt", [999_999_999, 1_000_000_000, 2**31 - 1])
async def test_a_deleted_attempt_of_any_number_is_no_attempt(
        initialised: Endpoints, api: Connect, db: asyncpg.Connection, attempt: int) -> None:
    """Attempt numbers run to 2**31 - 1 (ten digits): a deleted one is refused however many
    digits it has."""
    run_id, token = await owned_run(db, initialised)
    async with api(token, "/api/v1") as owner:
        url = f"/runs/{run_id}/attempts/{attempt}/members"
        assert (await owner.get(url)).status_code == 200  # known by its run: no members yet
        await db.execute("INSERT INTO deletions (run_id, project, attempt, deleted_by, "
                         "purge_after) SELECT run_id, project, $2, 'test', now() FROM runs "
                         "WHERE run_id = $1", run_id, attempt)
        gone = await owner.get(url)
        assert (gone.status_code, gone.json()["detail"]) == (
            404, f"run {run_id!r} has no attempt {attempt}")
