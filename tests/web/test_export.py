"""One series as a file: every stored point in the step range, as CSV or JSON Lines,
non-finite values spelled out, or as an Arrow stream, bit for bit; a range past the bound
is cut before a step with a ``Link`` to the rest, and following the links gives every
point once, in order, however the chunks of restarts overlap."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import struct
from urllib.parse import quote

import asyncpg
import httpx
import pyarrow as pa
import pytest

from tests.support.environment import Endpoints
from tests.support.truth import member_batch
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.web.routes import export

URL = "/api/v1/runs/{run}/attempts/1/scalars/export"
KEY = {"member": "rank-0", "source": "train", "tag": "tag0"}


@pytest.fixture
async def stored(initialised: Endpoints, run_id: str) -> list[tuple[int, float, float]]:
    """Ten batches of one member (tag0: 10 points each; two values not finite); the
    stored points of tag0 in read order."""
    batches = [member_batch(MemberKey(run_id, 1, "rank-0"), s, 20) for s in range(10)]
    batches[3].chunks[0].values[2] = math.nan
    batches[4].chunks[0].values[0] = -math.inf
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write_group(
            [project(b.SerializeToString(), RecordMeta(0, i, None))
             for i, b in enumerate(batches)])
    return [(s, w, v) for b in batches for c in b.chunks if c.tag == "tag0"
            for s, w, v in zip(c.steps, c.wall_times, c.values, strict=True)]


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


async def test_csv_and_json_lines_hold_every_point(client: httpx.AsyncClient, run_id: str,
                                                   stored: list[tuple[int, float, float]]
                                                   ) -> None:
    url = URL.format(run=run_id)
    answer = await client.get(url, params=KEY)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    assert f'filename="{run_id}-1-rank-0-tag0.csv"' in answer.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert rows[0] == ["step", "wall_time", "value"]
    got = [(int(s), float(w), float(v)) for s, w, v in rows[1:]]
    assert len(got) == len(stored) == 100
    assert all(g[:2] == t[:2] and same(g[2], t[2]) for g, t in zip(got, stored, strict=True))
    assert [r[2] for r in rows[1:] if r[2] in ("NaN", "-Infinity")] == ["NaN", "-Infinity"]
    lines = (await client.get(url, params={**KEY, "format": "jsonl"})).text.splitlines()
    parsed = [json.loads(line) for line in lines]
    assert [p["step"] for p in parsed] == [t[0] for t in stored]
    assert {p["value"] for p in parsed if isinstance(p["value"], str)} == {"NaN", "-Infinity"}
    arrow = await client.get(url, params={**KEY, "format": "arrow"})
    assert arrow.headers["content-type"] == "application/vnd.apache.arrow.stream"
    table = pa.ipc.open_stream(arrow.content).read_all()
    assert table.schema.names == ["step", "wall_time", "value"]
    columns = [table.column(k).to_pylist() for k in table.schema.names]
    assert columns[:2] == [[t[0] for t in stored], [t[1] for t in stored]]
    assert [struct.pack("<d", v) for v in columns[2]] == [struct.pack("<d", t[2])
                                                          for t in stored]  # NaN's bits too
    narrow = await client.get(url, params={**KEY, "step_min": stored[10][0],
                                           "step_max": stored[19][0]})
    assert len(narrow.text.splitlines()) == 11
    missing = await client.get(url, params={**KEY, "tag": "absent"})
    assert missing.status_code == 404


async def test_past_the_bound_the_links_lead_through_every_point_once(
        client: httpx.AsyncClient, run_id: str, stored: list[tuple[int, float, float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "MAX_POINTS", 25)  # 10 points a chunk, cut inside them
    pages = await every_page(client, URL.format(run=run_id), KEY)
    assert [len(p) for p in pages] == [25, 25, 25, 25]
    assert [int(r[0]) for p in pages for r in p] == [t[0] for t in stored]


async def every_page(client: httpx.AsyncClient, url: str,
                     params: dict[str, str]) -> list[list[list[str]]]:
    """The CSV rows of each page, following the links from the first."""
    link: str | None = url + "?" + "&".join(f"{k}={v}" for k, v in params.items())
    pages: list[list[list[str]]] = []
    while link is not None:
        answer = await client.get(link)
        assert answer.status_code == 200, answer.text
        pages.append(list(csv.reader(io.StringIO(answer.text)))[1:])
        found = re.match(r"<([^>]+)>; rel=\"next\"", answer.headers.get("link", ""))
        link = found.group(1) if found else None
    return pages


def test_a_download_is_named_in_ascii_and_in_utf8() -> None:
    """A tag of any printable text names its download: the header stays Latin-1, and
    quotes or separators never add parameters to it."""
    header = export.attachment('run-1-rank-0-loss/损失"; x=1.csv')
    header.encode("latin-1")
    assert header == ('attachment; filename="run-1-rank-0-loss_____ x=1.csv"; '
                      "filename*=UTF-8''run-1-rank-0-loss%2F%E6%8D%9F%E5%A4%B1%22%3B%20x%3D1.csv")



async def write(database_url: str, batches: list[pb.Batch]) -> None:
    async with asyncpg.create_pool(database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write_group(
            [project(b.SerializeToString(), RecordMeta(0, i, None))
             for i, b in enumerate(batches)])


async def test_a_restarts_points_come_after_those_they_repeat(
        client: httpx.AsyncClient, initialised: Endpoints, run_id: str) -> None:
    """Points come in the order they were read, not by their chunks' first steps: a job
    restarted at step 15 (a later spool epoch) wrote 15..24 again, so those come after the
    first 15..24, and the last point of each step is the restart's (what a reader keeping
    a step's last value, as the client's ``history``, shows); batch 10 comes after 9."""
    member = MemberKey(run_id, 1, "rank-0")
    restart = member_batch(member, 1, 20, epoch="f")
    restart.sealed_at = 1.7e9 + 100  # its epoch began after the first one's last batch
    for chunk in restart.chunks:
        chunk.steps[:] = range(15, 25)
        chunk.values[:] = [1000.0 + s for s in range(15, 25)]
    await write(initialised.database_url,
                [restart, *(member_batch(member, s, 20) for s in range(12))])
    answer = await client.get(URL.format(run=run_id), params={**KEY, "format": "arrow"})
    table = pa.ipc.open_stream(answer.content).read_all()
    steps, values = table.column("step").to_pylist(), table.column("value").to_pylist()
    assert steps == [*range(120), *range(15, 25)]
    last = dict(zip(steps, values, strict=True))
    assert [last[s] for s in range(14, 26)] == [14 * 0.25, *(1000.0 + s for s in range(15, 25)),
                                                25 * 0.25]


async def test_the_next_pages_link_names_a_run_of_any_printable_id(
        client: httpx.AsyncClient, initialised: Endpoints, run_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run id may be any printable text but "/" (a workload token's run): its pages'
    links name that very run, and a header stays Latin-1."""
    odd = f"{run_id}-实验#1?a=%25"
    member = MemberKey(odd, 1, "rank-0")
    await write(initialised.database_url, [member_batch(member, s, 20) for s in range(3)])
    monkeypatch.setattr(export, "MAX_POINTS", 15)
    first = await client.get(f"/api/v1/runs/{quote(odd, safe='')}/attempts/1/scalars/export",
                             params=KEY)
    assert first.status_code == 200, first.text
    link = re.match(r"<([^>]+)>; rel=\"next\"", first.headers["link"])
    assert link is not None, first.headers
    second = await client.get(link.group(1))
    assert second.status_code == 200, second.text
    assert [int(r[0]) for r in list(csv.reader(io.StringIO(second.text)))[1:]] == list(
        range(15, 30))


async def test_restarts_overlapping_chunks_are_cut_inside_and_every_point_comes_once(
        client: httpx.AsyncClient, initialised: Endpoints, run_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job restarted 25 times from step 0 wrote steps 0..9 each time: every chunk starts
    at step 0, so no page can end at a chunk's edge. Pages end before a step instead, two
    steps of 25 points each a page, in read order; a bound below one step's points is a
    422 that names the step."""
    member = MemberKey(run_id, 1, "rank-0")
    restarts = [member_batch(member, s, 20) for s in range(25)]
    for sequence, batch in enumerate(restarts):
        for chunk in batch.chunks:
            chunk.steps[:] = range(10)
            chunk.values[:] = [sequence * 100.0 + s for s in range(10)]
    await write(initialised.database_url, restarts)
    monkeypatch.setattr(export, "MAX_POINTS", 70)
    pages = await every_page(client, URL.format(run=run_id), KEY)
    assert [[(int(r[0]), float(r[2])) for r in p] for p in pages] == [
        [(s, q * 100.0 + s) for q in range(25) for s in (first, first + 1)]
        for first in range(0, 10, 2)]
    monkeypatch.setattr(export, "MAX_POINTS", 24)
    refused = await client.get(URL.format(run=run_id), params=KEY)
    assert refused.status_code == 422
    assert "step 0" in refused.json()["detail"], refused.text
