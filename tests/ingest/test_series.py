"""The bound on an attempt's distinct series at ingest: batches under it cost no query, a
batch that may pass it is checked against the read model (its member's existing series are
free), a refusal names the first chunk past the bound, and an unanswered lookup passes."""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import Iterable

import asyncpg
import pytest

from tests.support.clock import Clock
from tests.support.environment import Endpoints
from tuneplane.ingest.cache import LookupFailed
from tuneplane.ingest.series import CACHE_SECONDS, Pair, SeriesBound, series_in
from tuneplane.ingest.token_facts import PostgresFacts
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

MEMBER = MemberKey("run-s", 1, "rank-0")
OTHER = MemberKey("run-s", 1, "rank-1")


class Series:
    """The read model's series as a set; ``down`` makes every lookup fail."""

    def __init__(self) -> None:
        self.stored: set[tuple[MemberKey, Pair]] = set()
        self.down = False
        self.asked: collections.Counter[str] = collections.Counter()

    def _answer(self, what: str) -> None:
        self.asked[what] += 1
        if self.down:
            raise LookupFailed("PostgreSQL unreachable (test)")

    def _count(self, attempt: tuple[str, int]) -> int:
        return sum((m.run_id, m.attempt) == attempt for m, _ in self.stored)

    async def series_count(self, attempt: tuple[str, int]) -> int:
        self._answer("count")
        return self._count(attempt)

    async def series_of(self, member: MemberKey, pairs: list[Pair]) -> tuple[int, set[Pair]]:
        self._answer("exact")
        return (self._count((member.run_id, member.attempt)),
                {p for p in pairs if (member, p) in self.stored})

    def project(self, member: MemberKey, tags: Iterable[str]) -> None:
        self.stored |= {(member, ("train", "", tag)) for tag in tags}


def batch(*tags: str) -> pb.Batch:
    b = pb.Batch()
    for tag in tags:
        b.chunks.add(source="train", tag=tag, steps=[1], wall_times=[1.0], values=[1.0])
    return b


def tags(first: int, last: int) -> list[str]:
    return [f"t{i}" for i in range(first, last)]


@pytest.fixture
def series() -> Series:
    return Series()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def bound(series: Series, clock: Clock) -> SeriesBound:
    return SeriesBound(series, 10, clock=clock)


def test_series_in_names_each_distinct_series_at_its_first_chunk() -> None:
    assert series_in(batch("a", "b", "a", "c")) == {("train", "", "a"): 0,
                                                     ("train", "", "b"): 1,
                                                     ("train", "", "c"): 3}


def test_one_tag_in_two_tensorboard_runs_is_two_series() -> None:
    b = batch("lr")
    b.chunks.add(source="train", run_path="lr_group_a", tag="lr", steps=[1], wall_times=[1.0],
                 values=[1.0])
    assert series_in(b) == {("train", "", "lr"): 0, ("train", "lr_group_a", "lr"): 1}


async def test_batches_well_under_the_bound_cost_one_count_per_period(
        bound: SeriesBound, series: Series, clock: Clock) -> None:
    for _ in range(5):
        assert await bound.refusal(MEMBER, batch("a", "b")) is None
    assert series.asked == {"count": 1}
    clock.now += CACHE_SECONDS
    assert await bound.refusal(MEMBER, batch("a", "b")) is None
    assert series.asked == {"count": 2}


async def test_a_new_series_past_the_bound_is_refused_naming_its_chunk(
        bound: SeriesBound, series: Series) -> None:
    series.project(MEMBER, tags(0, 8))
    why = await bound.refusal(MEMBER, batch("t0", "t1", "n0", "t2", "n1", "n2"))
    assert why == ("chunks[5] (train/n2) would be a new series of run 'run-s' attempt 1, "
                   "which has 8 series: over the bound of 10 (TUNEPLANE_TELEMETRY_MAX_SERIES)")


async def test_an_attempt_at_the_bound_still_logs_its_existing_series(
        bound: SeriesBound, series: Series) -> None:
    series.project(MEMBER, tags(0, 10))
    for _ in range(3):
        assert await bound.refusal(MEMBER, batch(*tags(0, 10))) is None
    assert "chunks[0] (train/t0)" in (await bound.refusal(OTHER, batch("t0")) or "")
    assert await bound.refusal(MemberKey("run-s", 2, "rank-0"), batch("t0")) is None


async def test_series_accepted_here_count_before_they_are_projected(
        bound: SeriesBound, series: Series) -> None:
    assert await bound.refusal(MEMBER, batch(*tags(0, 6))) is None
    assert series.asked == {"count": 1}
    assert await bound.refusal(MEMBER, batch(*tags(6, 12))) is None  # checked: 0 stored
    assert series.asked == {"count": 1, "exact": 1}
    series.project(MEMBER, tags(0, 12))
    assert "would be a new series" in (await bound.refusal(MEMBER, batch("n")) or "")


async def test_a_fresher_count_replaces_what_was_added_before_it(
        bound: SeriesBound, series: Series, clock: Clock) -> None:
    assert await bound.refusal(MEMBER, batch(*tags(0, 4))) is None
    series.project(MEMBER, tags(0, 4))
    clock.now += CACHE_SECONDS
    assert await bound.refusal(MEMBER, batch(*tags(0, 4))) is None
    assert series.asked == {"count": 2}  # 4 stored + 4 in the batch: no exact check
    assert await bound.refusal(MEMBER, batch(*tags(0, 4))) is None
    assert series.asked == {"count": 2, "exact": 1}  # 4 stored + 4 added + 4


async def test_an_unanswered_lookup_passes_the_batch(bound: SeriesBound,
                                                     series: Series) -> None:
    series.project(MEMBER, tags(0, 10))
    series.down = True
    assert await bound.refusal(MEMBER, batch("new")) is None
    series.down = False
    assert await bound.refusal(MEMBER, batch("new")) is None  # the failure is kept a period
    assert series.asked["count"] == 1


async def test_postgres_answers_the_count_and_the_member_s_existing_series(
        initialised: Endpoints) -> None:
    run_id = f"series-{uuid.uuid4().hex[:8]}"
    member, other = MemberKey(run_id, 1, "rank-0"), MemberKey(run_id, 1, "rank-1")
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool, \
            pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO series (run_id, attempt, member, source, tag) "
            "VALUES ($1, $2, $3, $4, $5)",
            [(m.run_id, m.attempt, m.member, "train", tag)
             for m, tag in [(member, "a"), (member, "b"), (other, "c")]])
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        facts = PostgresFacts(pool)
        assert await facts.series_count((run_id, 1)) == 3
        assert await facts.series_count((run_id, 2)) == 0
        assert await facts.series_of(
            member, [("train", "", "a"), ("train", "", "c"), ("x", "", "b"),
                     ("train", "lr_group_a", "a")]) == (3, {("train", "", "a")})


async def test_series_checks_leave_token_standing_a_connection(
        initialised: Endpoints) -> None:
    """A job at its attempt's bound makes every batch it sends an exact check, as many at
    once as its calls in flight; those checks must never hold every connection of ingest's
    pool, or other tokens' standing lookups would wait past their bound and fail open. The
    series table is locked meanwhile, so every check stays in flight: the standing lookup
    answers only if a connection was left for it."""
    run_id = f"series-{uuid.uuid4().hex[:8]}"
    member = MemberKey(run_id, 1, "rank-0")
    async with asyncpg.create_pool(initialised.database_url, min_size=2, max_size=2) as pool, \
            asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as other:
        facts = PostgresFacts(pool, wait_seconds=5.0)
        async with other.acquire() as locker, locker.transaction():
            await locker.execute("LOCK TABLE series IN ACCESS EXCLUSIVE MODE")
            checks = [asyncio.create_task(facts.series_of(member, [("train", "", f"t{i}")]))
                      for i in range(8)]
            await asyncio.sleep(0)  # every check asks for a connection first
            found = await facts.attempt((f"other-{uuid.uuid4().hex[:8]}", 1))
            assert found is None  # answered (no such attempt), not LookupFailed
            assert not any(check.done() for check in checks)  # the checks still wait
        assert [await check for check in checks] == [(0, set())] * 8
