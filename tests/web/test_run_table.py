"""The runs table's API (``/api/v1/run-table``): created runs with no telemetry beside runs
with telemetry, search, filters, sorts, pages and bounds, and never another project's runs."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tests.support.web import Connect

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


async def add_run(db: asyncpg.Connection, run_id: str, project: str, created: dt.datetime,
                  states: list[str], batches: dict[tuple[int, str], int]) -> None:
    """A created run with its attempts' states and (attempt, member) → points telemetry."""
    await db.execute("INSERT INTO runs (run_id, artifact, created_by, created_at, project) "
                     "VALUES ($1, $2::jsonb, 'tester', $3, $4)", run_id, json.dumps({}),
                     created, project)
    for number, state in enumerate(states, start=1):
        await db.execute("INSERT INTO attempts (run_id, attempt, state) VALUES ($1, $2, $3)",
                         run_id, number, state)
    await add_batches(db, run_id, created, batches)


async def add_batches(db: asyncpg.Connection, run_id: str, at: dt.datetime,
                      batches: dict[tuple[int, str], int]) -> None:
    """Ledger rows and the member summaries the projector keeps with them, at set times."""
    for i, ((attempt, member), points) in enumerate(batches.items()):
        projected = at + dt.timedelta(hours=1 + i)
        await db.execute("INSERT INTO batch_ledger (run_id, attempt, member, batch_id, "
                         "kafka_partition, kafka_offset, points, sealed_at, projected_at) "
                         "VALUES ($1, $2, $3, $4, 0, 0, $5, 0, $6)", run_id, attempt, member,
                         f"b{i}", points, projected)
        await db.execute(
            "INSERT INTO member_summaries VALUES ($1, $2, $3, $4, 1, $5, $5) "
            "ON CONFLICT (run_id, attempt, member) DO UPDATE SET "
            "points = member_summaries.points + EXCLUDED.points, "
            "batches = member_summaries.batches + 1, last_batch_at = EXCLUDED.last_batch_at",
            run_id, attempt, member, points, projected)


@pytest.fixture
async def projects(db: asyncpg.Connection, initialised: Endpoints) -> dict[str, Any]:
    """Project A with four runs, project B with one, and a viewer of A."""
    tag = uuid.uuid4().hex[:8]
    a, b = f"table-a-{tag}", f"table-b-{tag}"
    for name in (a, b):
        await db.execute("INSERT INTO projects (project) VALUES ($1)", name)
    runs = {"fresh": f"fresh-{tag}", "done": f"done-{tag}", "broken": f"broken-{tag}",
            "live": f"live-{tag}", "other": f"other-{tag}"}
    await add_run(db, runs["fresh"], a, T0 + dt.timedelta(days=3), [], {})
    await add_run(db, runs["done"], a, T0, ["finished"],
                  {(1, "rank-0"): 100, (1, "rank-1"): 100})
    await add_run(db, runs["broken"], a, T0 + dt.timedelta(days=1), ["failed"],
                  {(1, "rank-0"): 5})
    await add_run(db, runs["live"], a, T0 + dt.timedelta(days=2), ["failed", "running"],
                  {(1, "rank-0"): 10, (2, "rank-0"): 20, (2, "rank-1"): 20, (2, "rank-2"): 20})
    await add_run(db, runs["other"], b, T0 + dt.timedelta(days=1), ["running"],
                  {(1, "rank-0"): 1})
    viewer = await user_token(db, initialised, "viewer", roles={a: "viewer"})
    return {"a": a, "b": b, "runs": runs, "viewer": viewer, "tag": tag}


async def listed(api: Connect, token: str, **params: Any) -> dict[str, Any]:
    async with api(token, path="/api/v1") as http:
        answer = await http.get("/run-table", params=params)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def test_the_table_lists_a_projects_runs_with_their_latest_attempt(
        api: Connect, projects: dict[str, Any]) -> None:
    runs = projects["runs"]
    view = await listed(api, projects["viewer"], sort="created", dir="desc")
    assert view["total"] == 4  # B's run is not the viewer's
    rows = {r["run_id"]: r for r in view["runs"]}
    assert [r["run_id"] for r in view["runs"]] == [runs["fresh"], runs["live"], runs["broken"],
                                                   runs["done"]]
    assert rows[runs["fresh"]] | {"created_at": None} == {
        "run_id": runs["fresh"], "project": projects["a"], "created_at": None, "attempt": None,
        "state": "none", "members": 0, "points": 0, "last_batch_at": None, "columns": []}
    live = rows[runs["live"]]
    assert (live["attempt"], live["state"], live["members"], live["points"]) == (
        2, "running", 3, 70)
    assert live["last_batch_at"] == "2024-05-03T04:00:00Z"
    assert (rows[runs["done"]]["state"], rows[runs["done"]]["members"]) == ("finished", 2)


async def test_search_filters_and_sorts(api: Connect, projects: dict[str, Any]) -> None:
    runs, viewer = projects["runs"], projects["viewer"]

    async def ids(**params: Any) -> list[str]:
        return [r["run_id"] for r in (await listed(api, viewer, **params))["runs"]]

    assert await ids(q=f"BROKEN-{projects['tag']}") == [runs["broken"]]  # any case
    assert await ids(q="%") == []  # a search is text, not a pattern
    assert set(await ids(state=["failed", "running"])) == {runs["broken"], runs["live"]}
    assert await ids(state="none") == [runs["fresh"]]
    assert await ids(project=projects["b"]) == []  # not the viewer's: nothing, not an error
    assert len(await ids(project=projects["a"])) == 4
    assert await ids(time="created", since="2024-05-01T12:00:00Z",
                     until="2024-05-03T12:00:00Z") == [runs["live"], runs["broken"]]
    assert set(await ids(time="last_telemetry", since="2024-05-03T00:00:00Z")) == {
        runs["live"]}
    assert await ids(sort="points", dir="desc") == [runs["done"], runs["live"], runs["broken"],
                                                    runs["fresh"]]
    assert await ids(sort="run_id", dir="asc") == sorted(runs[k] for k in
                                                         ("fresh", "done", "broken", "live"))
    assert (await ids(sort="last_telemetry", dir="asc"))[-1] == runs["fresh"]  # nulls last


async def test_pages_are_bounded_and_do_not_overlap(api: Connect,
                                                    projects: dict[str, Any]) -> None:
    viewer = projects["viewer"]
    pages = [await listed(api, viewer, sort="run_id", dir="asc", limit=3, offset=offset)
             for offset in (0, 3, 6)]
    assert [p["total"] for p in pages] == [4, 4, 4]  # past the end the total still answers
    assert [len(p["runs"]) for p in pages] == [3, 1, 0]
    ids = [r["run_id"] for p in pages for r in p["runs"]]
    assert ids == sorted(set(ids))
    async with api(viewer, path="/api/v1") as http:
        for bad in ({"limit": 501}, {"limit": 0}, {"offset": -1}, {"sort": "artifact"},
                    {"dir": "sideways"}, {"state": "lost"}, {"q": "x" * 129},
                    {"since": "yesterday"}):
            assert (await http.get("/run-table", params=bad)).status_code == 422, bad


async def test_another_projects_runs_never_appear(api: Connect, db: asyncpg.Connection,
                                                 initialised: Endpoints,
                                                 projects: dict[str, Any]) -> None:
    stranger = await user_token(db, initialised, "stranger", roles={projects["b"]: "owner"})
    for params in ({}, {"project": projects["a"]}, {"q": projects["tag"]}):
        seen = {r["run_id"] for r in (await listed(api, stranger, limit=500, **params))["runs"]}
        assert seen & {projects["runs"][k] for k in ("fresh", "done", "broken", "live")} == set()
    mine = await listed(api, stranger, q=projects["tag"])
    assert [r["run_id"] for r in mine["runs"]] == [projects["runs"]["other"]]


async def test_a_run_known_only_by_telemetry_is_the_default_projects(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints) -> None:
    run_id = f"telemetry-only-{uuid.uuid4().hex[:8]}"
    await add_batches(db, run_id, T0, {(1, "rank-0"): 7})
    default = await user_token(db, initialised, "viewer", roles={"default": "viewer"})
    [row] = (await listed(api, default, q=run_id))["runs"]
    assert (row["project"], row["attempt"], row["state"], row["points"], row["members"]) == (
        "default", 1, "none", 7, 1)
    assert row["created_at"] == "2024-05-01T01:00:00Z"  # its first batch
