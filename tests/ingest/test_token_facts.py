"""Ingest's view of whether a token still stands, in this process: facts kept per key for a
few seconds (one lookup per key and period, shared by concurrent pushes), aged by an
injected clock, and what happens when PostgreSQL cannot answer: the last known facts, or
none (fail open), each said in the log."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging

import asyncpg
import pytest

from tests.support.clock import Clock
from tests.support.environment import free_port
from tuneplane.common.tokens import DeliveryClaims, WorkloadClaims
from tuneplane.controlplane.standing import DRAIN_MARGIN_SECONDS, AttemptFacts, NodeFacts
from tuneplane.ingest.cache import FactCache, LookupFailed
from tuneplane.ingest.token_facts import CACHE_SECONDS, PostgresFacts, Standing
from tuneplane.telemetry.v1.identity import MemberKey

DRAIN = 30
WINDOW = DRAIN + DRAIN_MARGIN_SECONDS
MEMBER = MemberKey("run-s", 1, "rank-0")
KEY = (MEMBER.run_id, MEMBER.attempt)


class Facts:
    """Facts as a dictionary; ``down`` makes every lookup fail, ``gate`` holds them."""

    def __init__(self) -> None:
        self.attempts: dict[tuple[str, int], AttemptFacts | None] = {}
        self.nodes: dict[str, NodeFacts | None] = {}
        self.down = False
        self.gate: asyncio.Event | None = None
        self.asked: collections.Counter[object] = collections.Counter()

    async def _answer(self, key: object) -> None:
        self.asked[key] += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise LookupFailed(f"{key}: PostgreSQL unreachable (test)")

    async def attempt(self, key: tuple[str, int]) -> AttemptFacts | None:
        await self._answer(key)
        return self.attempts.get(key)

    async def node(self, node_id: str) -> NodeFacts | None:
        await self._answer(node_id)
        return self.nodes.get(node_id)


def claims(node: str | None = None) -> WorkloadClaims:
    return WorkloadClaims(MEMBER, expires_at=10**10, issued_at=2000, node=node)


def delivery(node: str | None) -> DeliveryClaims:
    return DeliveryClaims(MEMBER, "epoch", bytes(32), 3, expires_at=10**10, issued_at=2000,
                          node=node)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def facts() -> Facts:
    return Facts()


@pytest.fixture
def standing(facts: Facts, clock: Clock) -> Standing:
    return Standing(facts, drain_seconds=DRAIN, clock=clock)


async def test_pushes_within_the_cache_period_cost_one_lookup(
        standing: Standing, facts: Facts, clock: Clock) -> None:
    facts.attempts[KEY] = AttemptFacts("running", None)
    for _ in range(5):
        assert await standing.refusal(claims()) is None
    assert facts.asked[KEY] == 1
    clock.now += CACHE_SECONDS
    assert await standing.refusal(claims()) is None
    assert facts.asked[KEY] == 2


async def test_concurrent_pushes_share_one_lookup(standing: Standing, facts: Facts) -> None:
    facts.attempts[KEY] = AttemptFacts("running", None)
    facts.nodes["node-1"] = NodeFacts(1000, revoked=False)
    facts.gate = asyncio.Event()
    waiting = [asyncio.create_task(standing.refusal(claims("node-1"))) for _ in range(20)]
    await asyncio.sleep(0)
    facts.gate.set()
    assert await asyncio.gather(*waiting) == [None] * 20
    assert facts.asked == {KEY: 1, "node-1": 1}


async def test_kept_facts_age_so_the_drain_window_ends_on_time(facts: Facts,
                                                               clock: Clock) -> None:
    long_kept = Standing(facts, drain_seconds=DRAIN, ttl=10 * WINDOW, clock=clock)
    facts.attempts[KEY] = AttemptFacts("finished", 0.0)
    assert await long_kept.refusal(claims()) is None
    clock.now += WINDOW + 1
    refused = await long_kept.refusal(claims())
    assert refused is not None
    assert "attempt 1 ended (finished) 61 s ago" in refused
    assert facts.asked[KEY] == 1  # from the kept facts, aged


async def test_with_nothing_known_a_database_outage_fails_open_and_says_so(
        standing: Standing, facts: Facts, clock: Clock,
        caplog: pytest.LogCaptureFixture) -> None:
    facts.down = True
    facts.attempts[KEY] = AttemptFacts("finished", 10 * WINDOW)  # unseen while down
    with caplog.at_level(logging.WARNING, "tuneplane.ingest"):
        assert await standing.refusal(claims()) is None
        assert await standing.refusal(claims()) is None
    assert standing.failed_lookups == 1  # the outage took effect, once per key and period
    assert "token standing unknown" in caplog.text
    facts.down = False
    clock.now += CACHE_SECONDS
    with caplog.at_level(logging.INFO, "tuneplane.ingest"):
        refused = await standing.refusal(claims())
    assert refused is not None
    assert "ended (finished)" in refused
    assert "token standing lookups answer again" in caplog.text


async def test_during_an_outage_the_last_known_facts_decide(
        standing: Standing, facts: Facts, clock: Clock) -> None:
    running, revoked = MemberKey("run-r", 1, "m"), MemberKey("run-v", 1, "m")
    facts.attempts[(running.run_id, 1)] = AttemptFacts("running", None)
    facts.attempts[(revoked.run_id, 1)] = AttemptFacts("running", None)
    facts.nodes["node-ok"] = NodeFacts(1000, revoked=False)
    facts.nodes["node-gone"] = NodeFacts(1000, revoked=True)
    ok = WorkloadClaims(running, 10**10, 2000, "node-ok")
    gone = WorkloadClaims(revoked, 10**10, 2000, "node-gone")
    assert await standing.refusal(ok) is None
    assert await standing.refusal(gone) is not None
    facts.down = True
    clock.now += 10 * CACHE_SECONDS
    assert await standing.refusal(ok) is None
    refused = await standing.refusal(gone)
    assert refused is not None
    assert "node-gone, which was revoked" in refused
    assert standing.failed_lookups == 4  # both keys of both tokens were asked, and failed


async def test_an_unreachable_database_is_a_failed_lookup_not_an_error() -> None:
    pool = await asyncpg.create_pool(f"postgresql://postgres@127.0.0.1:{free_port()}/none",
                                     min_size=0, max_size=1)
    try:
        standing = Standing(PostgresFacts(pool, wait_seconds=5.0), drain_seconds=DRAIN)
        assert await standing.refusal(claims("node-1")) is None
        assert standing.failed_lookups == 2  # attempt and node: the fault took effect
    finally:
        await pool.close()


async def test_the_cache_keeps_at_most_its_capacity(clock: Clock) -> None:
    asked: list[str] = []

    async def fetch(key: str) -> str:
        asked.append(key)
        return key.upper()

    cache: FactCache[str, str] = FactCache(fetch, ttl=60, capacity=2, clock=clock)
    for key in ("a", "b", "a", "c", "a", "b"):
        found = await cache.get(key)
        assert found is not None
        assert found.value == key.upper()
    assert asked == ["a", "b", "c", "b"]  # b was the least recently used when c came


async def test_a_delivery_token_stands_while_the_node_it_came_through_does(
        standing: Standing, facts: Facts) -> None:
    """Issued through a node, a deliver-only credential ends with the node (revoked, or
    enrolled again after it was issued); an admin's stands whatever the nodes; the attempt
    having ended long ago refuses neither."""
    facts.attempts[KEY] = AttemptFacts("finished", 10 * WINDOW)
    facts.nodes["node-1"] = NodeFacts(1000, revoked=False)
    assert await standing.node_refusal(delivery("node-1")) is None
    assert await standing.node_refusal(delivery(None)) is None
    assert facts.asked == {KEY: 1, "node-1": 1}  # the attempt only for its deletion
    facts.nodes["node-2"] = NodeFacts(1000, revoked=True)
    facts.nodes["node-3"] = NodeFacts(3000, revoked=False)
    assert "node-2, which was revoked" in str(await standing.node_refusal(delivery("node-2")))
    assert "before its latest enrollment" in str(
        await standing.node_refusal(delivery("node-3")))
    assert "not enrolled" in str(await standing.node_refusal(delivery("node-4")))
    deleted = dataclasses.replace(MEMBER, attempt=MEMBER.attempt + 1)
    facts.attempts[(deleted.run_id, deleted.attempt)] = AttemptFacts("finished", None,
                                                                     deleted=True)
    for node in ("node-1", None):  # deleted: refused, whoever issued it
        claims = dataclasses.replace(delivery(node), member=deleted)
        assert "was deleted; its delivery tokens are refused" in str(
            await standing.node_refusal(claims))
