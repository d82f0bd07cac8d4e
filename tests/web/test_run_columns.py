"""The runs table's added columns (``col=``): a setting or a series' summary of each run's
latest attempt, as the projector's own writer stored them, sorted (``sort=col<i>``) and
filtered (``filter=``) in SQL across pages; a bad column or filter is refused saying why."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import asyncpg
import pytest

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tests.support.truth import member_batch
from tests.support.web import Connect
from tests.web.test_run_table import T0, add_run, listed
from tuneplane.controlplane.mapping import freeze
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.integration import MetricMapping

#: Each run's learning rate, optimizer and the offset of its tag0 values (its "loss").
RUNS = {"a": (0.1, "adam", 3.0), "b": (0.01, "sgd", 1.0), "c": (0.001, "adam", 2.0),
        "d": (None, None, 0.5)}


@pytest.fixture
async def table(db: asyncpg.Connection, initialised: Endpoints) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    name = f"columns-{tag}"
    await db.execute("INSERT INTO projects (project) VALUES ($1)", name)
    batches = []
    for i, (run, (lr, optimizer, offset)) in enumerate(RUNS.items()):
        run_id = f"{run}-{tag}"
        await add_run(db, run_id, name, T0 + dt.timedelta(days=i), ["finished"], {})
        await freeze(db, run_id, 1, [MetricMapping(tag="tag1", name="accuracy")])
        for sequence in (1, 2):
            batch = member_batch(MemberKey(run_id, 1, "rank-0"), sequence, 20)
            batch.chunks[0].values[:] = [offset + v / 100 for v in batch.chunks[0].values]
            batches.append(batch)
        if lr is not None:  # declared in the first batch, lr declared again in the second
            batches[-2].config.add(source="train", key="lr", number=lr * 10, wall_time=1.7e9,
                                   origin=pb.ConfigEntry.ORIGIN_JSONL)
            batches[-1].config.add(source="train", key="lr", number=lr, wall_time=1.7e9,
                                   origin=pb.ConfigEntry.ORIGIN_JSONL)
            batches[-2].config.add(source="tb", key="optimizer", text=optimizer,
                                   wall_time=1.7e9, origin=pb.ConfigEntry.ORIGIN_HPARAMS)
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write_group(
            [project(b.SerializeToString(), RecordMeta(0, i, None))
             for i, b in enumerate(batches)])
    viewer = await user_token(db, initialised, "viewer", roles={name: "viewer"})
    return {"project": name, "tag": tag, "viewer": viewer, "batches": batches}


def ids(view: dict[str, Any]) -> list[str]:
    return [r["run_id"].split("-")[0] for r in view["runs"]]


async def test_columns_show_the_latest_setting_and_the_series_summary(
        api: Connect, table: dict[str, Any]) -> None:
    view = await listed(api, table["viewer"], project=table["project"], sort="run_id",
                        dir="asc", col=["config:lr", "config:optimizer", "metric:tag0:last",
                                        "metric:tag0:min", "metric:accuracy:max"])
    assert view["columns"] == ["config:lr", "config:optimizer", "metric:tag0:last",
                               "metric:tag0:min", "metric:accuracy:max"]
    by_run = {r["run_id"].split("-")[0]: r["columns"] for r in view["runs"]}
    truth: dict[str, dict[str, list[float]]] = {}
    for batch in table["batches"]:
        run = batch.identity.run_id.split("-")[0]
        loss, accuracy = (list(c.values) for c in batch.chunks)
        seen = truth.setdefault(run, {"loss": [], "accuracy": []})
        seen["loss"] += loss
        seen["accuracy"] += accuracy
    for run, (lr, optimizer, _) in RUNS.items():
        assert by_run[run] == [lr, optimizer, truth[run]["loss"][-1], min(truth[run]["loss"]),
                               max(truth[run]["accuracy"])], run  # accuracy: tag1's name


async def test_columns_sort_and_filter_across_pages(api: Connect,
                                                    table: dict[str, Any]) -> None:
    token, name = table["viewer"], table["project"]
    columns = ["config:lr", "metric:tag0:last", "config:optimizer"]
    by_lr = await listed(api, token, project=name, col=columns, sort="col0", dir="asc")
    assert ids(by_lr) == ["c", "b", "a", "d"]  # a run without the setting comes last
    pages = [await listed(api, token, project=name, col=columns, sort="col1", dir="desc",
                          limit=1, offset=n) for n in range(4)]
    assert [ids(p)[0] for p in pages] == ["a", "c", "b", "d"]
    assert {p["total"] for p in pages} == {4}
    for filters, expected in ((["0>=0.01"], {"a", "b"}), (["0<0.05", "2=adam"], {"c"}),
                              (["2!=adam"], {"b", "d"}), (["2~GD"], {"b"}),
                              (["1>1.5"], {"a", "c"})):
        found = await listed(api, token, project=name, col=columns, filter=filters)
        assert set(ids(found)) == expected, filters
        assert found["total"] == len(expected)


async def test_a_value_that_is_not_a_number_never_breaks_a_numeric_filter(
        api: Connect, db: asyncpg.Connection, table: dict[str, Any]) -> None:
    """A run whose setting is text (or whose last value is NaN, which JSON holds as text)
    is left out by a comparison of numbers, and the others are still compared."""
    await db.execute("UPDATE run_config SET value = '\"auto\"' WHERE run_id = $1 AND key = 'lr'",
                     f"a-{table['tag']}")
    found = await listed(api, table["viewer"], project=table["project"], col=["config:lr"],
                         filter=["0<1"])
    assert set(ids(found)) == {"b", "c"}


async def test_a_deleted_attempts_settings_and_keys_are_not_shown(
        api: Connect, db: asyncpg.Connection, table: dict[str, Any]) -> None:
    run_id = f"c-{table['tag']}"
    await db.execute("INSERT INTO deletions (run_id, project, attempt, deleted_by, purge_after) "
                     "VALUES ($1, $2, 1, 'tester', now() + interval '1 day')", run_id,
                     table["project"])
    view = await listed(api, table["viewer"], project=table["project"], col=["config:lr"],
                        sort="run_id", dir="asc")
    assert {r["run_id"]: r["columns"] for r in view["runs"]}[run_id] == [None]
    await db.execute("UPDATE run_config SET key = 'only.in.c' WHERE run_id = $1 AND key = 'lr'",
                     run_id)
    async with api(table["viewer"], path="/api/v1") as http:
        offered = (await http.get("/run-columns", params={"project": table["project"]})).json()
    assert "only.in.c" not in offered["config"]
    assert offered["config"] == ["lr", "optimizer"]


@pytest.mark.parametrize(("params", "reason"), [
    ({"col": "lr"}, "column 'lr' is not config:KEY or metric:TAG:last|min|max"),
    ({"col": "metric:loss:mean"}, "is not config:KEY or metric:TAG:last|min|max"),
    ({"col": "config:lr", "filter": "1>3"}, "names column 1; the view has 1"),
    ({"col": "config:lr", "filter": "0>big"}, "> compares numbers, and 'big' is not one"),
    ({"col": "config:lr", "filter": "0 is 3"}, "is not COLUMN OPERATOR VALUE"),
    ({"col": "config:lr", "sort": "col3"}, "sort col3: the view has 1 columns"),
    ({"col": [f"config:k{i}" for i in range(9)]}, "List should have at most 8 items")])
async def test_a_bad_column_or_filter_is_refused_saying_why(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints, params: dict[str, Any],
        reason: str) -> None:
    token = await user_token(db, initialised, "viewer")
    async with api(token, path="/api/v1") as http:
        answer = await http.get("/run-table", params=params)
    assert answer.status_code == 422
    assert reason in answer.text


async def test_the_offered_columns_are_the_viewable_runs_keys(
        api: Connect, db: asyncpg.Connection, initialised: Endpoints,
        table: dict[str, Any]) -> None:
    async with api(table["viewer"], path="/api/v1") as http:
        offered = (await http.get("/run-columns", params={"project": table["project"]})).json()
    assert offered == {"config": ["lr", "optimizer"], "metrics": ["tag0", "tag1"],
                       "names": ["accuracy"]}
    stranger = await user_token(db, initialised, "viewer")  # of no project
    async with api(stranger, path="/api/v1") as http:
        answer = await http.get("/run-columns", params={"project": table["project"]})
    assert answer.json() == {"config": [], "metrics": [], "names": []}
