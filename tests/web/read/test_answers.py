"""Series answers kept by a replica: given again only while the series' version stands
(new points, a purge marker appearing, a purge), never when they depended on purge
markers or held nothing; kept by their bytes and a charge for the rest of an entry, least
recently used out, read-only."""

from __future__ import annotations

from typing import Any

import asyncpg
import httpx
import numpy as np
import pytest
from fastapi import FastAPI

from tests.support.environment import Endpoints
from tests.support.truth import member_batch
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey, SeriesKey
from tuneplane.web import state
from tuneplane.web.read import series_read
from tuneplane.web.read.answers import ENTRY_BYTES, WITH_BODY, Answers, Question, version_of
from tuneplane.web.read.columnar import NO_BUCKETS, ColumnAnswer, Points
from tuneplane.web.read.series_chunks import Version
from tuneplane.web.read.series_read import SeriesRead

URL = "/api/v1/runs/{run}/attempts/1/scalars"


def answer_of(points: int) -> SeriesRead:
    steps = np.arange(points, dtype=np.int64)
    return SeriesRead(ColumnAnswer(False, points, Points(steps, steps.astype(np.float64),
                                                         steps * np.float64(0.5)),
                                   NO_BUCKETS), 0, points, 0, 0.0)


def question(tag: str) -> Question:
    return Question(SeriesKey(MemberKey("r", 1, "m"), "train", "", tag), None, None, 2000,
                    200_000, False)


#: One kept answer of 100 points: its arrays, its entry and its question's strings.
HUNDRED = 24 * 100 * WITH_BODY + ENTRY_BYTES + len("r" "m" "train" "" "a")


def test_answers_are_kept_by_bytes_and_version_least_recently_used_out() -> None:
    one = Version(1, "100", False)
    kept: Answers[SeriesRead] = Answers(max_bytes=3 * HUNDRED)  # three of 100 points
    for tag in "abc":
        kept.put(question(tag), one, answer_of(100))
    assert kept.size == (3, 3 * HUNDRED)
    assert kept.get(question("a"), one) is not None  # now the most recently used
    kept.put(question("d"), one, answer_of(100))
    assert (question("b") in kept, question("a") in kept, kept.size) == (False, True,
                                                                         (3, 3 * HUNDRED))
    assert kept.get(question("a"), Version(1, "101", False)) is None  # written since
    assert question("a") not in kept
    assert kept.size == (2, 2 * HUNDRED)
    kept.put(question("f"), one, answer_of(0))  # even an empty answer is counted
    assert kept.size == (3, 2 * HUNDRED + ENTRY_BYTES + len("rmtrainf"))
    assert kept.get(question("c"), Version(1, "100", True)) is None  # a marker since
    kept.put(question("e"), one, answer_of(1000))  # larger than all it may keep
    assert question("e") not in kept
    found = kept.get(question("d"), one)
    assert found is not None
    with pytest.raises(ValueError, match="read-only"):
        found.answer.points.values[0] = 1.0
    nothing: Answers[SeriesRead] = Answers(max_bytes=0)
    nothing.put(question("a"), one, answer_of(1))
    assert nothing.size == (0, 0)


async def write(pool: asyncpg.Pool, *batches: pb.Batch) -> None:
    await PostgresWriter(pool).write_group(
        [project(b.SerializeToString(), RecordMeta(0, b.identity.sequence, None))
         for b in batches])


async def steps_of(client: httpx.AsyncClient, run_id: str, **params: str) -> list[int]:
    answer = await client.get(URL.format(run=run_id), params={
        "member": "rank-0", "source": "train", "tag": "tag0", "format": "columns", **params})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["points"]["steps"])


async def test_a_kept_answer_is_given_only_while_the_series_is_unchanged(
        client: httpx.AsyncClient, web_app: FastAPI, initialised: Endpoints, run_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    kept, budget = state.of(web_app).answers, state.of(web_app).settings.unpack_budget
    key = SeriesKey(member, "train", "", "tag0")
    raw = Question(key, None, None, 2000, budget, False)
    purged = raw._replace(purge=True)
    reads: list[bool] = []
    unkept = series_read.read

    async def read(*args: Any, purge: bool = False) -> series_read.SeriesRead | None:
        reads.append(purge)
        return await unkept(*args, purge=purge)
    monkeypatch.setattr(series_read, "read", read)  # as answers calls it
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await write(pool, member_batch(member, 0, 20))
        assert await steps_of(client, run_id) == list(range(10))
        assert (raw in kept, reads) == (True, [False])
        assert await steps_of(client, run_id) == list(range(10))
        assert reads == [False]  # given again, not read
        async with pool.acquire() as conn:
            given = kept.get(raw, await version_of(conn, key))
        assert given is not None
        assert given.body  # with the JSON it was given as
        assert await steps_of(client, run_id, step_min="1000000", step_max="0") == []
        assert raw._replace(lo=1_000_000, hi=0) not in kept  # nothing in range: not kept
        del reads[1:]
        await write(pool, member_batch(member, 1, 20))  # new points: a new version
        assert await steps_of(client, run_id) == list(range(20))
        assert await steps_of(client, run_id, semantics="tensorboard") == list(range(20))
        assert await steps_of(client, run_id, semantics="tensorboard") == list(range(20))
        assert (purged in kept, reads) == (True, [False, False, True])  # no marker applies
        restart = member_batch(member, 2, 20)  # a session start: a marker for the member
        restart.session_starts.append(pb.SessionStart(source="train", file="events.2",
                                                      step=5))
        await write(pool, restart)
        async with pool.acquire() as conn:
            fresh = await unkept(conn, key, None, None, 2000, budget, purge=True)
        assert fresh is not None
        assert fresh.version is not None
        assert fresh.version.marked
        expected = fresh.answer.points.steps.tolist()
        for _ in range(2):
            assert await steps_of(client, run_id, semantics="tensorboard") == expected
        assert purged not in kept  # it may depend on the marker: read each time
        assert reads[3:] == [True, True]
        assert await steps_of(client, run_id) == list(range(30))  # raw: read again, once
        assert await steps_of(client, run_id) == list(range(30))
        assert reads[5:] == [False]
