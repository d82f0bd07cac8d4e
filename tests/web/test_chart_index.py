"""The Charts grid's index (``/charts/sections``, ``/charts``) over the real PostgreSQL, on
series the projector's own writer stored: pages go through every chart exactly once, in the
grid's order, each section's counts are right, the regular expression and the section
filter in SQL as the metric mapping resolves (``mapping.resolve`` is the reference), and a
parameter the index cannot take is refused saying which."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import asyncpg
import httpx
import pytest

from tests.support.environment import Endpoints
from tuneplane.controlplane.mapping import SeriesRef, freeze, resolve
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.integration import MetricMapping
from tuneplane.web.read import chart_index

#: (source, tag) of each member's series: a section of 130 tags (more than a page), one of
#: names that differ in case, names without a section (and one starting with '/'), and
#: "a/loss" of two sources, the mapping taking only tb's.
TAGS = [*(("tb", f"a/m{i:03d}") for i in range(130)), ("tb", "a/loss"), ("jsonl", "a/loss"),
        ("tb", "B/Acc"), ("tb", "b/acc"), ("tb", "b/x"), ("tb", "lr"), ("tb", "/abs"),
        ("jsonl", "a-b/sits-between")]
MAPPINGS = [MetricMapping(tag="a/loss", name="loss", source="tb", goal="minimize"),
            MetricMapping(tag="b/x", name="b/x-curve"),
            MetricMapping(tag="absent", name="a/never-logged")]


#: An integration artifact with one source, to create a run with no series.
ARTIFACT = {"version": 1, "sources": [{"id": "train", "kind": "jsonl", "path": "m.jsonl",
                                       "owner": "rank-0"}]}


def section(name: str) -> str:
    return name[:name.index("/")] if name.find("/") > 0 else ""


def expected(filter: str | None = None) -> list[str]:
    """The grid's order: sections by name ('' last), in each the curves in the mapping's
    order, then tags by name; as mapping.resolve decides what is unmapped."""
    refs = [SeriesRef(m, source, "", tag) for m in ("rank-0", "rank-1") for source, tag in TAGS]
    resolution = resolve(MAPPINGS, refs)
    curves = [c.name for c in resolution.curves]
    tags = sorted({r.tag for r in resolution.unmapped})
    keys = [("curve", n, i) for i, n in enumerate(curves)] + [("tag", t, 0) for t in tags]
    kept = [k for k in keys if filter is None or re.search(filter, k[1], re.IGNORECASE)]
    kept.sort(key=lambda k: (section(k[1]) == "", section(k[1]), k[0], k[2], k[1]))
    return [f"{kind}:{name}" for kind, name, _ in kept]


@pytest.fixture
async def indexed(db: asyncpg.Connection, initialised: Endpoints, run_id: str) -> str:
    batches = [pb.Batch(
        identity=pb.BatchIdentity(run_id=run_id, attempt=1, member=member, spool_epoch="e",
                                  sequence=1),
        sealed_at=1.7e9,
        chunks=[pb.SeriesChunk(source=source, tag=tag, steps=[0, 1], wall_times=[1.7e9] * 2,
                               values=[1.0, 2.0]) for source, tag in TAGS])
        for member in ("rank-0", "rank-1")]
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write_group([project(b.SerializeToString(),
                                                        RecordMeta(0, i, None))
                                                for i, b in enumerate(batches)])
    await freeze(db, run_id, 1, MAPPINGS)
    return f"/api/v1/runs/{run_id}/attempts/1/charts"


async def every_chart(client: httpx.AsyncClient, url: str, limit: int,
                      **params: Any) -> list[str]:
    """Every chart, section after section, page after page."""
    sections = (await client.get(f"{url}/sections", params=params)).json()["sections"]
    keys = []
    for s in sections:
        after = None
        while True:
            answer = await client.get(url, params={**params, "section": s["name"],
                                                   "limit": limit,
                                                   **({"after": after} if after else {})})
            assert answer.status_code == 200, answer.text
            page = answer.json()
            assert len(page["charts"]) <= limit
            keys += [c["key"] for c in page["charts"]]
            assert all(c["key"] == f"{c['kind']}:{c['name']}" for c in page["charts"])
            after = page["next"]
            if after is None:
                break
            assert after == keys[-1]
    return keys


@pytest.mark.parametrize("limit", [1, 7, 60, 500])
async def test_pages_go_through_every_chart_once_in_the_grids_order(
        client: httpx.AsyncClient, indexed: str, limit: int) -> None:
    keys = await every_chart(client, indexed, limit)
    assert [k for k, n in Counter(keys).items() if n > 1] == []
    assert keys == expected()
    assert "tag:a/loss" in keys  # jsonl's a/loss is no mapping's
    assert "curve:a/never-logged" in keys  # a mapping's curve, as the grid showed it


async def test_sections_count_their_charts_by_prefix_the_unnamed_last(
        client: httpx.AsyncClient, indexed: str) -> None:
    answer = (await client.get(f"{indexed}/sections")).json()
    want = Counter(section(k.split(":", 1)[1]) for k in expected())
    assert [s["name"] for s in answer["sections"]] == ["B", "a", "a-b", "b", ""]
    assert {s["name"]: s["charts"] for s in answer["sections"]} == want
    assert all(s["charts"] == s["total"] for s in answer["sections"])
    assert (answer["charts"], answer["total"]) == (len(expected()), len(expected()))
    assert answer["mapping_frozen"] is True
    assert answer["next"] is None
    names, after = [], None  # a section at a time: the same, with a cursor
    while True:
        page = (await client.get(f"{indexed}/sections",
                                 params={"limit": 1, **({"after": after} if after else {})})
                ).json()
        names += [s["name"] for s in page["sections"]]
        after = page["next"]
        if after is None:
            break
    assert names == ["B", "a", "a-b", "b", ""]


@pytest.mark.parametrize("filter", [r"^a/m0[0-4]", r"ACC$", r"loss|^lr$", r"curve",
                                    r"^/", r"\d{3}$", r"nothing-matches"])
async def test_the_regular_expression_filters_in_postgresql_case_insensitively(
        client: httpx.AsyncClient, indexed: str, filter: str) -> None:
    answer = (await client.get(f"{indexed}/sections", params={"filter": filter})).json()
    want = expected(filter)
    counts = Counter(section(k.split(":", 1)[1]) for k in want)
    assert {s["name"]: s["charts"] for s in answer["sections"]} == counts
    assert answer["charts"] == len(want)
    assert answer["total"] == len(expected())
    assert await every_chart(client, indexed, 9, filter=filter) == want


@pytest.mark.parametrize("filter", [None, r"^a/m0[0-4]", r"ACC$|^lr$", r"nothing-matches"])
async def test_a_small_index_comes_whole_with_its_sections(
        client: httpx.AsyncClient, indexed: str, filter: str | None) -> None:
    params: dict[str, str | int] = {"whole": 60, **({"filter": filter} if filter else {})}
    answer = (await client.get(f"{indexed}/sections", params=params)).json()
    want = expected(filter)
    if len(want) > 60:  # too many: counts alone, as without whole
        assert all(s["entries"] is None for s in answer["sections"])
        return
    assert [c["key"] for s in answer["sections"] for c in s["entries"]] == want
    assert all(len(s["entries"]) == s["charts"] for s in answer["sections"])


async def test_an_empty_filter_keeps_every_chart(client: httpx.AsyncClient,
                                                 indexed: str) -> None:
    answer = (await client.get(f"{indexed}/sections", params={"filter": ""})).json()
    assert answer["charts"] == answer["total"] == len(expected())


async def test_a_section_pages_alone(client: httpx.AsyncClient, indexed: str) -> None:
    page = (await client.get(indexed, params={"section": "b", "limit": 1})).json()
    assert [c["key"] for c in page["charts"]] == ["curve:b/x-curve"]
    assert page["next"] == "curve:b/x-curve"
    rest = (await client.get(indexed, params={"section": "b", "after": page["next"]})).json()
    assert [c["key"] for c in rest["charts"]] == ["tag:b/acc"]  # b/x's chart is the curve
    assert rest["next"] is None  # the page was the last: no empty one to ask for
    assert (await client.get(indexed, params={"section": "nowhere"})).json() == {
        "charts": [], "next": None}


async def test_an_attempt_without_series_has_no_sections(client: httpx.AsyncClient,
                                                         run_id: str) -> None:
    made = await client.post("/api/v1/runs", json={"run_id": run_id, "project": "default",
                                                   "integration": ARTIFACT})
    assert made.status_code == 201, made.text
    assert (await client.post(f"/api/v1/runs/{run_id}/attempts")).status_code == 201
    url = f"/api/v1/runs/{run_id}/attempts/1/charts"
    answer = (await client.get(f"{url}/sections", params={"filter": "x"})).json()
    assert {k: v for k, v in answer.items() if k != "mapping_frozen"} == {
        "sections": [], "charts": 0, "total": 0, "next": None}
    assert (await client.get(url, params={"section": ""})).json() == {"charts": [],
                                                                       "next": None}
    assert (await client.get(f"{url}/sections", params={"filter": "("})).status_code == 422


@pytest.mark.parametrize(("path", "params", "named"), [
    ("/sections", {"filter": "train/("}, "filter"),
    ("", {"section": "a", "filter": "[z-a]"}, "filter"),
    ("", {"section": "a", "after": "loss"}, "after"),
    ("", {"section": "a", "after": "curve:not-in-the-mapping"}, "after"),
    # a backreference: exponential to match (PostgreSQL would take it)
    ("/sections", {"filter": "(.*)(.*)\\2\\1$"}, "filter"),
    ("", {"section": "a", "filter": "^(a)\\\\\\1"}, "filter"),
])
async def test_what_the_index_cannot_take_is_refused_naming_it(
        client: httpx.AsyncClient, indexed: str, path: str, params: dict[str, str],
        named: str) -> None:
    answer = await client.get(f"{indexed}{path}", params=params)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith(f"{named}: "), answer.text


@pytest.mark.parametrize(("path", "params"), [
    ("/sections", {"limit": 0}), ("/sections", {"limit": 1001}), ("", {"limit": 1}),
    ("/sections", {"whole": 501}), ("/sections", {"whole": -1}),
    ("", {"section": "a", "limit": 501}), ("", {"section": "a", "filter": "x" * 513}),
])
async def test_the_bounds_are_checked(client: httpx.AsyncClient, indexed: str, path: str,
                                      params: dict[str, Any]) -> None:
    answer = await client.get(f"{indexed}{path}", params=params)
    assert answer.status_code == 422, answer.text


async def test_an_escaped_backslash_before_a_digit_is_no_backreference(
        client: httpx.AsyncClient, indexed: str) -> None:
    answer = await client.get(f"{indexed}/sections", params={"filter": "x\\\\1"})
    assert answer.status_code == 200, answer.text


async def test_a_pattern_too_slow_to_match_is_cut_short_and_refused(
        client: httpx.AsyncClient, indexed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart_index, "FILTER_SECONDS", 1e-6)  # anything takes longer
    answer = await client.get(f"{indexed}/sections", params={"filter": "a|b"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith("filter: "), answer.text
    assert "simpler" in answer.json()["detail"]
