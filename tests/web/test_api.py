"""The HTTP API over read models the real pipeline filled: auth, bounds, reduction (in
this process), and one smoke test of tuneplane-web served by uvicorn."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import tracemalloc
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import wait_for_points
from tests.support.truth import (
    member_batch,
    tensorboard_purged,
    tensorboard_runs,
    write_add_scalars_logdir,
    write_restart_logdir,
)
from tests.support.web import Connect
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane import api_tokens, users
from tuneplane.controlplane.mapping import freeze
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.integration import MetricMapping
from tuneplane.web.read import series_read


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@pytest.fixture
async def filled(initialised: Endpoints, projector: Process, db: asyncpg.Connection,
                 run_id: str) -> str:
    """A run of 3 members (2 tags, 20 batches of 500 points each), a rich record, a mapping."""
    batches = [member_batch(MemberKey(run_id, 1, f"rank-{m}"), seq, 500)
               for seq in range(1, 21) for m in range(3)]
    batches[0].rich.add(source="tb", tag="img", step=7, wall_time=1.0, payload=b"PNG-bytes",
                        kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f", offset=3)
    await produce(initialised.kafka_bootstrap, batches)
    deadline = time.monotonic() + 120
    while await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1",
                            run_id) < len(batches):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    await freeze(db, run_id, 1, [MetricMapping(tag="tag0", name="loss", goal="minimize")])
    return run_id


async def test_every_api_call_needs_a_user_token(api: Connect, initialised: Endpoints,
                                                 db: asyncpg.Connection) -> None:
    signer = TokenSigner(initialised.jwt_secret)
    async with api() as anonymous:
        response = await anonymous.get("/api/v1/runs")
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        workload = signer.issue_workload(MemberKey("r", 1, "m"), now=time.time(),
                                         ttl_seconds=60)
        node = signer.issue(TokenKind.NODE, "n", {}, now=time.time(), ttl_seconds=60)
        for token in (workload, node, "garbage"):
            refused = await anonymous.get("/api/v1/runs",
                                          headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 401, token
            assert "user token refused" in refused.json()["detail"]
        await users.add_user(db, "leaver")
        _, token, _ = await api_tokens.issue(db, signer, "leaver", name="t", now=utc_now())
        await db.execute("DELETE FROM users WHERE username = 'leaver'")
        gone = await anonymous.get("/api/v1/runs", headers={"Authorization": f"Bearer {token}"})
        assert gone.status_code == 401
        assert "the token is not known here" in gone.json()["detail"]
        legacy = signer.issue(TokenKind.USER, "anyone", {"user": "anyone"}, now=time.time(),
                              ttl_seconds=60)  # from before personal tokens: no jti
        old = await anonymous.get("/api/v1/runs", headers={"Authorization": f"Bearer {legacy}"})
        assert old.status_code == 401
        assert "names no personal token" in old.json()["detail"]
        assert (await anonymous.get("/healthz")).status_code == 200


async def test_runs_attempts_and_series_are_listed(client: httpx.AsyncClient,
                                                   filled: str) -> None:
    attempts = (await client.get(f"/api/v1/runs/{filled}/attempts")).json()
    assert [(a["attempt"], a["members"], a["batches"], a["points"]) for a in attempts] == [
        (1, 3, 60, 30_000)]
    series = (await client.get(f"/api/v1/runs/{filled}/attempts/1/series",
                               params={"member": "rank-1"})).json()
    assert [(s["source"], s["tag"], s["points"], s["step_min"], s["step_max"]) for s in series] \
        == [("train", "tag0", 5000, 250, 5249), ("train", "tag1", 5000, 250, 5249)]
    members = (await client.get(f"/api/v1/runs/{filled}/attempts/1/members")).json()
    assert [{k: v for k, v in m.items() if k != "last_batch_at"} for m in members] == [
        {"member": f"rank-{m}", "sources": ["train"], "series": 2, "points": 10_000,
         "spools": 1} for m in range(3)]
    assert all(m["last_batch_at"] for m in members)
    runs = (await client.get("/api/v1/runs", params={"after": filled[:-1], "limit": 500})).json()
    assert filled in [r["run_id"] for r in runs]
    assert (await client.get("/api/v1/runs/no-such-run/attempts")).status_code == 404


async def test_raw_scalars_small_range_are_exact_and_large_ones_reduced_and_say_so(
        client: httpx.AsyncClient, filled: str) -> None:
    url = f"/api/v1/runs/{filled}/attempts/1/scalars"
    key = {"member": "rank-2", "source": "train", "tag": "tag1"}
    small = (await client.get(url, params={**key, "step_min": 300, "step_max": 309})).json()
    assert small["reduced"] is False
    assert small["method"] is None
    assert [(p[0], p[2]) for p in small["points"]] == [(s, s * 0.25 + 1) for s in range(300, 310)]
    assert small["points_in_range"] == small["points_returned"] == 10
    big = (await client.get(url, params={**key, "max_points": 100})).json()
    assert big["reduced"] is True
    assert big["method"] == "min/max/last per bucket"
    assert big["points_in_range"] == 5000
    assert big["points_returned"] == len(big["buckets"]) <= 100
    assert sum(b["count"] for b in big["buckets"]) == 5000
    assert big["buckets"][0]["min"] == 250 * 0.25 + 1
    assert big["buckets"][-1]["max"] == big["buckets"][-1]["last"] == 5249 * 0.25 + 1
    too_many = await client.get(url, params={**key, "max_points": 10_001})
    assert too_many.status_code == 422
    missing = await client.get(url, params={**key, "tag": "nope"})
    assert missing.status_code == 404


def as_columns(answer: dict[str, Any]) -> dict[str, Any]:
    """A rows answer (``format=rows``, the default) as ``format=columns`` writes it."""
    fields = ("step_lo", "step_hi", "count", "min", "max", "last", "wall")
    return {**answer,
            "points": {k: [p[i] for p in answer["points"]]
                       for i, k in enumerate(("steps", "walls", "values"))},
            "buckets": {k: [b[k] for b in answer["buckets"]] for k in fields}}


async def test_columns_hold_what_rows_hold(client: httpx.AsyncClient, filled: str) -> None:
    """format=columns (what the Charts page reads): one array per field, the same answer."""
    base = f"/api/v1/runs/{filled}/attempts/1"
    key = {"member": "rank-2", "source": "train", "tag": "tag1"}
    cases: list[tuple[str, dict[str, str | int]]] = [
        (f"{base}/scalars", {**key, "step_min": 300, "step_max": 309}),
        (f"{base}/scalars", {**key, "max_points": 100}),
        (f"{base}/scalars", {**key, "semantics": "tensorboard"}),
        (f"{base}/curves/loss", {"max_points": 50}),
        (f"{base}/tag", {"tag": "tag1", "max_points": 2000})]
    for url, params in cases:
        rows = (await client.get(url, params=params)).json()
        columns = (await client.get(url, params={**params, "format": "columns"})).json()
        if "series" in rows:
            rows = {**rows, "series": [as_columns(s) for s in rows["series"]]}
        else:
            rows = as_columns(rows)
        assert columns == rows
    wrong = await client.get(f"{base}/scalars", params={**key, "format": "table"})
    assert wrong.status_code == 422


async def test_canonical_curves_come_through_the_frozen_mapping(client: httpx.AsyncClient,
                                                                filled: str) -> None:
    index = (await client.get(f"/api/v1/runs/{filled}/attempts/1/canonical")).json()
    assert index["mapping_frozen"] is True
    assert [c["name"] for c in index["curves"]] == ["loss"]
    assert {(u["member"], u["tag"]) for u in index["unmapped"]} == {
        (f"rank-{m}", "tag1") for m in range(3)}
    curve = (await client.get(f"/api/v1/runs/{filled}/attempts/1/curves/loss",
                              params={"max_points": 50, "max_series": 2})).json()
    assert curve["goal"] == "minimize"
    assert curve["series_total"] == 3
    assert [s["member"] for s in curve["series"]] == ["rank-0", "rank-1"]
    assert all(s["reduced"] and s["points_returned"] <= 50 for s in curve["series"])
    unknown = await client.get(f"/api/v1/runs/{filled}/attempts/1/curves/accuracy")
    assert unknown.status_code == 404


async def test_a_tags_chart_has_every_members_series_placed_in_time(
        client: httpx.AsyncClient, filled: str) -> None:
    """The chart of a tag no mapping names: one series per member, and every bucket carries
    the wall time of its last value (member_batch writes wall = 1.7e9 + step)."""
    url = f"/api/v1/runs/{filled}/attempts/1/tag"
    chart = (await client.get(url, params={"tag": "tag1", "max_points": 40,
                                           "max_series": 2})).json()
    assert chart["name"] == "tag1"
    assert chart["series_total"] == 3
    assert [s["member"] for s in chart["series"]] == ["rank-0", "rank-1"]
    for series in chart["series"]:
        assert series["semantics"] == "tensorboard"
        assert series["points_purged"] == 0
        assert series["wall_first"] == 1.7e9 + 250
        assert series["reduced"]
        assert series["points_returned"] <= 40
        for b in series["buckets"]:
            step = b["wall"] - 1.7e9
            assert b["step_lo"] <= step <= b["step_hi"]
            assert b["last"] == step * 0.25 + 1
    zoomed = (await client.get(url, params={"tag": "tag1", "step_min": 1000,
                                            "step_max": 1009})).json()
    assert all(s["wall_first"] == 1.7e9 + 250 for s in zoomed["series"])  # the series'
    assert [p[:2] for p in zoomed["series"][0]["points"]] == [
        [s, 1.7e9 + s] for s in range(1000, 1010)]
    missing = await client.get(url, params={"tag": "nope"})
    assert missing.status_code == 404
    assert "no series with tag 'nope'" in missing.json()["detail"]


async def collect(initialised: Endpoints, ingest: Process, tls_dir: Path, tmp_path: Path,
                  db: asyncpg.Connection, member: MemberKey, logdir: Path,
                  max_batch_points: int) -> None:
    """Run the collector over a TensorBoard log directory (source ``tb``) and wait until
    every scalar TensorBoard's loader reads there is projected."""
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector([*collector_args(ingest.port, tls_dir, token, member,
                                          tmp_path / "spool", {}), "--tensorboard",
                          f"tb={logdir}", "--max-batch-points", str(max_batch_points)])
    assert done.returncode == 0, done.stderr
    total = sum(len(points) for points in tensorboard_runs(logdir).values())
    assert await wait_for_points(db, member.run_id, total) == total


async def test_tensorboard_runs_arrive_from_the_collector_as_series_of_their_own(
        client: httpx.AsyncClient, initialised: Endpoints, ingest: Process, projector: Process,
        tls_dir: Path, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """collector → ingest → Kafka → projector → PostgreSQL → API: add_scalars' runs
    lr_group/a and lr_group/b, the root's and a nested run's series of one tag stay apart,
    each equal point for point to TensorBoard's loader."""
    logdir = tmp_path / "logs"
    write_add_scalars_logdir(logdir, steps=1000)
    truth = tensorboard_runs(logdir)
    await collect(initialised, ingest, tls_dir, tmp_path, db, MemberKey(run_id, 1, "rank-0"),
                  logdir, 700)
    url = f"/api/v1/runs/{run_id}/attempts/1"
    listed = (await client.get(f"{url}/series")).json()
    assert [(s["run_path"], s["tag"], s["points"]) for s in listed] == [
        ("", "lr_group", 1000), ("eval/fold_1", "lr_group", 1000),
        ("lr_group/a", "lr_group", 1000), ("lr_group/b", "lr_group", 1000)]
    for (run_path, tag), points in truth.items():
        answer = (await client.get(f"{url}/scalars", params={
            "member": "rank-0", "source": "tb", "run_path": run_path, "tag": tag,
            "max_points": 1000})).json()
        assert answer["run_path"] == run_path
        assert answer["reduced"] is False
        assert [tuple(p) for p in answer["points"]] == points
    missing = await client.get(f"{url}/scalars", params={
        "member": "rank-0", "source": "tb", "run_path": "lr_group/c", "tag": "lr_group"})
    assert missing.status_code == 404


async def test_canonical_curves_purge_restarts_as_tensorboard_serves_them(
        client: httpx.AsyncClient, initialised: Endpoints, ingest: Process, projector: Process,
        tls_dir: Path, tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """collector → ingest → Kafka → projector → PostgreSQL → API on files with restarts:
    each canonical curve equals TensorBoard's multiplexer (purge_orphaned_data=True) on the
    same files, says so, and counts what was purged, and so does the inspector asked for
    ``semantics=tensorboard`` before any mapping; by default it keeps every point."""
    logdir = tmp_path / "logs"
    write_restart_logdir(logdir)
    raw, purged = tensorboard_runs(logdir), tensorboard_purged(logdir)
    await collect(initialised, ingest, tls_dir, tmp_path, db, MemberKey(run_id, 1, "rank-0"),
                  logdir, 37)
    url = f"/api/v1/runs/{run_id}/attempts/1"
    for run in purged:  # unmapped yet: the inspector gives the same view on request
        params: dict[str, str | int] = {"member": "rank-0", "source": "tb",
                                        "run_path": run[0], "tag": run[1], "max_points": 1000}
        inspected = (await client.get(f"{url}/scalars",
                                       params={**params, "semantics": "tensorboard"})).json()
        assert inspected["semantics"] == "tensorboard"
        assert [tuple(p) for p in inspected["points"]] == sorted(purged[run],
                                                                 key=lambda p: p[0]), run
        assert inspected["points_purged"] == len(raw[run]) - len(purged[run]) > 0
        assert inspected["points_in_range"] == len(purged[run])
        unknown = await client.get(f"{url}/scalars", params={**params, "semantics": "tb"})
        assert unknown.status_code == 422
    await freeze(db, run_id, 1, [
        MetricMapping(tag="loss", name="loss", run_path=""),
        MetricMapping(tag="acc", name="acc", run_path=""),
        MetricMapping(tag="loss", name="sub_loss", run_path="sub")])
    for name, run in (("loss", ("", "loss")), ("acc", ("", "acc")),
                      ("sub_loss", ("sub", "loss"))):
        curve = (await client.get(f"{url}/curves/{name}", params={"max_points": 1000})).json()
        [series] = curve["series"]
        assert series["semantics"] == "tensorboard"
        assert series["reduced"] is False
        # TensorBoard keeps read order; an answer is in step order (stable: read order).
        expected = sorted(purged[run], key=lambda p: p[0])
        assert [tuple(p) for p in series["points"]] == expected, name
        assert series["points_purged"] == len(raw[run]) - len(purged[run]) > 0
        inspected = (await client.get(f"{url}/scalars", params={
            "member": "rank-0", "source": "tb", "run_path": run[0], "tag": run[1],
            "max_points": 1000})).json()
        assert inspected["points_in_range"] == len(raw[run])
        assert "semantics" not in inspected
    for tag in ("loss", "acc"):  # a tag's chart: each TensorBoard run's line, purged
        chart = (await client.get(f"{url}/tag", params={"tag": tag,
                                                        "max_points": 1000})).json()
        runs = [(r, t) for r, t in purged if t == tag]
        assert [(s["run_path"], s["tag"]) for s in chart["series"]] == sorted(runs)
        for series in chart["series"]:
            expected = sorted(purged[series["run_path"], tag], key=lambda p: p[0])
            assert [tuple(p) for p in series["points"]] == expected


async def test_rich_records_are_listed_and_downloaded(client: httpx.AsyncClient,
                                                      filled: str) -> None:
    (record,) = (await client.get(f"/api/v1/runs/{filled}/attempts/1/rich")).json()
    assert (record["kind"], record["tag"], record["step"], record["bytes"]) == (
        "image", "img", 7, len(b"PNG-bytes"))
    body = await client.get(f"/api/v1/rich/{record['object_key']}")
    assert body.status_code == 200
    assert body.content == b"PNG-bytes"
    assert (await client.get("/api/v1/rich/rich/sha256/00/nothing")).status_code == 404


async def stored_series(db: asyncpg.Connection, run_id: str, tag: str, chunks: str,
                        *args: object) -> None:
    """rank-0's series ``tag`` of source train, its chunks the rows of ``chunks`` (a SELECT
    of curve_chunks' columns, the series id as $1 and ``args`` after it), made in SQL."""
    series_id = await db.fetchval(
        "INSERT INTO series (run_id, attempt, member, source, tag) "
        "VALUES ($1, 1, 'rank-0', 'train', $2) RETURNING series_id", run_id, tag)
    await db.execute(f"""
        INSERT INTO curve_chunks (series_id, batch_id, chunk_index, n, step_min, step_max,
                                  v_min, v_max, v_first, v_last, w_first, w_last, steps,
                                  wall_times, "values")
        {chunks}""", series_id, *args)


async def test_a_ten_million_point_series_stays_bounded(client: httpx.AsyncClient,
                                                        db: asyncpg.Connection,
                                                        run_id: str) -> None:
    # Ten million points in 1,000 chunks, made in SQL (the pipeline's other tests cover
    # how chunks get there; this one is about the query's bound). The ledger row makes the
    # run known (to the default project), as a projected batch does.
    await db.execute("INSERT INTO batch_ledger (run_id, attempt, member, batch_id, "
                     "kafka_partition, kafka_offset, points, sealed_at) "
                     "VALUES ($1, 1, 'rank-0', 'b', 0, 0, 10000000, 0)", run_id)
    await stored_series(db, run_id, "huge", """
        SELECT $1, 'b' || c, 0, 10000, c * 10000, c * 10000 + 9999, c, c + 0.9999, c,
               c + 0.9999, 0.0, 0.0,
               array(SELECT generate_series(c * 10000, c * 10000 + 9999)::bigint),
               array_fill(0.0::float8, ARRAY[10000]),
               array(SELECT c + i / 10000.0 FROM generate_series(0, 9999) AS i)
        FROM generate_series(0, 999) AS c""")
    url = f"/api/v1/runs/{run_id}/attempts/1/scalars"
    key: dict[str, str | int] = {"member": "rank-0", "source": "train", "tag": "huge",
                                 "max_points": 2000}
    whole = (await client.get(url, params=key)).json()
    assert whole["points_in_range"] == 10_000_000
    assert whole["reduced"] is True
    assert len(whole["buckets"]) <= 2000
    assert (whole["buckets"][0]["min"], whole["buckets"][-1]["max"]) == (0, 999.9999)
    zoom = (await client.get(url, params={**key, "step_min": 5_000_123,
                                          "step_max": 5_001_122})).json()
    assert zoom["reduced"] is False  # 1,000 points fit: every one of them
    assert [p[0] for p in zoom["points"]] == list(range(5_000_123, 5_001_123))


async def peak_bytes(client: httpx.AsyncClient, url: str, params: dict[str, str | int],
                     ) -> tuple[dict[str, Any], int]:
    """The answer, and the most memory Python held while the app made it."""
    tracemalloc.start()
    try:
        answer = await client.get(url, params=params)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data, peak


async def test_chunks_cut_by_restarts_or_straddling_the_range_unpack_within_the_budget(
        client: httpx.AsyncClient, db: asyncpg.Connection, run_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer chooses how its chunks' step ranges fall: here 40 batches each replay steps
    0 to 24,999 after a restart at step 1 (TensorBoard's purge cuts every earlier chunk
    inside its range), so every chunk straddles a purge cut and any step_min above 0. The
    points of such chunks were all unpacked into Python, whatever the unpack budget: a
    million here, a series' every point in general, from one request the Charts grid makes
    by itself. Now what is unpacked stays within the budget, the rest answered from the
    chunks' summaries (a cut chunk's, of what survives the cut, decoded once a
    process and kept: an answer read again decodes none)."""
    chunks, per_chunk = 40, 25_000
    await db.execute("""
        INSERT INTO batch_ledger (run_id, attempt, member, batch_id, kafka_partition,
                                  kafka_offset, points, sealed_at)
        SELECT $1, 1, 'rank-0', 'e-' || c, 0, c, $2, c FROM generate_series(1, $3) AS c""",
                     run_id, per_chunk, chunks)
    await db.execute("""
        INSERT INTO session_starts (run_id, attempt, member, batch_id, marker_index, source,
                                    file, file_offset, step, wall_time)
        SELECT $1, 1, 'rank-0', 'e-' || c, 0, 'train', 'events.out.tfevents.1', c, 1, c
        FROM generate_series(1, $2) AS c""", run_id, chunks)
    await stored_series(db, run_id, "replayed", """
        SELECT $1, 'e-' || c, 0, $2, 0, $2 - 1, c, c + 1, c, c + 1, c, c + 1,
               array(SELECT generate_series(0, $2 - 1)::bigint),
               array(SELECT c + i / $2::float8 FROM generate_series(0, $2 - 1) AS i),
               array(SELECT c + i / $2::float8 FROM generate_series(0, $2 - 1) AS i)
        FROM generate_series(1, $3) AS c""", per_chunk, chunks)
    url = f"/api/v1/runs/{run_id}/attempts/1/scalars"
    key: dict[str, str | int] = {"member": "rank-0", "source": "train", "tag": "replayed"}
    decoded = 0
    really = series_read.left_of_cut

    def counted(*args: Any) -> Any:
        nonlocal decoded
        decoded += 1
        return really(*args)
    monkeypatch.setattr(series_read, "left_of_cut", counted)
    purged, peak = await peak_bytes(client, url, {**key, "semantics": "tensorboard"})
    # What TensorBoard keeps: step 0 of every replay, and the last replay whole.
    assert purged["points_purged"] == (chunks - 1) * (per_chunk - 1)
    assert purged["points_in_range"] == chunks - 1 + per_chunk
    assert peak < 40 * 2**20, f"{peak / 2**20:.0f} MiB for one answer"
    assert decoded == chunks - 1  # each chunk a cut straddles
    again, _ = await peak_bytes(client, url, {**key, "semantics": "tensorboard"})
    assert (again, decoded) == (purged, chunks - 1)  # kept: none decoded again
    zoomed, peak = await peak_bytes(client, url, {**key, "step_min": 1})
    assert zoomed["points_in_range"] >= chunks * (per_chunk - 1)
    assert peak < 40 * 2**20, f"{peak / 2**20:.0f} MiB for one answer"


async def test_values_postgresql_cannot_take_are_a_clear_client_error(
        client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/runs", params={"after": "a\x00b"})
    assert response.status_code == 400
    assert "NUL characters are not allowed" in response.json()["detail"]
    path = await client.get("/api/v1/runs/a%00b/attempts")
    assert path.status_code == 400


async def test_the_served_api_answers_over_http(base_url: str, user_token: str) -> None:
    """End to end: tuneplane-web as deployed answers health, schema, refusals and queries."""
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        assert (await http.get("/healthz")).json() == {"status": "ok"}
        assert "/api/v1/runs" in (await http.get("/openapi.json")).json()["paths"]
        anonymous = await http.get("/api/v1/runs")
        assert anonymous.status_code == 401
        assert anonymous.json() == {"detail": "sign in at /login, or send a user token "
                                              "(Authorization: Bearer <token>)"}
        auth = {"Authorization": f"Bearer {user_token}"}
        assert (await http.get("/api/v1/runs", headers=auth)).status_code == 200
        missing = await http.get("/api/v1/runs/none-such", headers=auth)
        assert missing.status_code == 404
        assert missing.json() == {"detail": "no run 'none-such'"}
        nul = await http.get("/api/v1/runs", params={"after": "a\x00b"}, headers=auth)
        assert nul.status_code == 400
