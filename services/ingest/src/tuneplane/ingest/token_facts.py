"""Whether a pushing workload token still stands (the rule: ``tuneplane.controlplane
.standing``), from facts kept ``CACHE_SECONDS`` per (run, attempt) and per node, so a push
does not cost a query and a revocation or an attempt's end takes effect within seconds.

The facts are read through ingest's own small pool (``TUNEPLANE_INGEST_DB_POOL``), waiting
at most ``wait_seconds`` for a connection and an answer. When PostgreSQL cannot answer, the
last known facts are used, and with none known the push is accepted (fail open) and logged:
a database outage never refuses or loses telemetry of running attempts. What fails open is
bounded by the token's expiry: Node control, which renews workload tokens, needs the
database too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TypeVar

import asyncpg

from tuneplane.common.db import TRANSIENT_ERRORS, Connection
from tuneplane.common.tokens import DeliveryClaims, WorkloadClaims
from tuneplane.controlplane import standing
from tuneplane.controlplane.standing import UNKNOWN, AttemptFacts, NodeFacts
from tuneplane.ingest.cache import FactCache, Known, LookupFailed
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tuneplane.ingest")

#: Seconds facts are kept: revocations and ends take effect this much later at most.
CACHE_SECONDS: Final = 5.0
#: Keys kept per kind of fact; each comes from a verified token, so only real members count.
CAPACITY: Final = 100_000

K = TypeVar("K")
T = TypeVar("T")

#: What makes a lookup fail rather than the push: PostgreSQL away, out of connections or
#: cancelling queries. Anything else (a missing table) is a deployment error, said loudly.
UNANSWERED = (*TRANSIENT_ERRORS, asyncpg.InsufficientResourcesError,
              asyncpg.QueryCanceledError)


SERIES_COUNT = "SELECT count(*) FROM series WHERE run_id = $1 AND attempt = $2"
EXISTING_SERIES = """
    SELECT s.source, s.run_path, s.tag FROM series s
    JOIN unnest($4::text[], $5::text[], $6::text[]) AS b(source, run_path, tag)
         USING (source, run_path, tag)
    WHERE s.run_id = $1 AND s.attempt = $2 AND s.member = $3"""


class Facts(Protocol):
    """Where the facts come from; raises ``LookupFailed`` when it cannot answer now."""

    async def attempt(self, key: tuple[str, int]) -> AttemptFacts | None: ...

    async def node(self, node_id: str) -> NodeFacts | None: ...


class PostgresFacts:
    """The facts ingest looks up (a token's standing, an attempt's series) from PostgreSQL,
    through ``pool`` (ingest's own, with its own limit)."""

    def __init__(self, pool: asyncpg.Pool, *, wait_seconds: float = 2.0) -> None:
        self._pool = pool
        self._wait = wait_seconds
        #: Series lookups take all of the pool's connections but one. An attempt at its
        #: series bound makes each of its batches an exact check, as many at once as its
        #: calls in flight: were they to hold every connection, every other token's standing
        #: lookup would wait behind them, and past ``wait_seconds`` fail open.
        self._series_slots = asyncio.Semaphore(max(pool.get_max_size() - 1, 1))

    async def _read(self, query: Callable[[Connection], Awaitable[T]], what: str,
                    slots: asyncio.Semaphore | None = None) -> T:
        """``query``'s answer within ``wait_seconds``, holding one of ``slots`` (if given)
        while it waits for a connection and runs; LookupFailed otherwise."""
        try:
            async with (asyncio.timeout(self._wait), slots or contextlib.nullcontext(),
                        self._pool.acquire() as conn):
                return await query(conn)
        except TimeoutError:
            raise LookupFailed(f"{what}: no answer from PostgreSQL within {self._wait} s "
                               "(pool busy or database slow)") from None
        except UNANSWERED as exc:
            raise LookupFailed(f"{what}: PostgreSQL did not answer: {exc!r}") from None

    async def attempt(self, key: tuple[str, int]) -> AttemptFacts | None:
        run_id, attempt = key
        return await self._read(lambda conn: standing.attempt_facts(conn, run_id, attempt),
                                f"run {run_id!r} attempt {attempt}")

    async def node(self, node_id: str) -> NodeFacts | None:
        return await self._read(lambda conn: standing.node_facts(conn, node_id),
                                f"node {node_id}")

    async def series_count(self, key: tuple[str, int]) -> int:
        run_id, attempt = key
        count = await self._read(lambda conn: conn.fetchval(SERIES_COUNT, run_id, attempt),
                                 f"series of run {run_id!r} attempt {attempt}",
                                 self._series_slots)
        return int(count)

    async def series_of(self, member: MemberKey, pairs: list[tuple[str, str, str]],
                        ) -> tuple[int, set[tuple[str, str, str]]]:
        """``pairs`` as (source, run path, tag)."""
        sources, run_paths, tags = ([p[i] for p in pairs] for i in range(3))

        async def query(conn: Connection) -> tuple[int, set[tuple[str, str, str]]]:
            count = await conn.fetchval(SERIES_COUNT, member.run_id, member.attempt)
            rows = await conn.fetch(EXISTING_SERIES, member.run_id, member.attempt,
                                    member.member, sources, run_paths, tags)
            return int(count), {(row["source"], row["run_path"], row["tag"]) for row in rows}
        return await self._read(query, f"series of {member}", self._series_slots)


class Standing:
    def __init__(self, facts: Facts, *, drain_seconds: float, ttl: float = CACHE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._drain = drain_seconds
        self._attempts: FactCache[tuple[str, int], AttemptFacts | None] = FactCache(
            self._logged(facts.attempt), ttl=ttl, capacity=CAPACITY, clock=clock)
        self._nodes: FactCache[str, NodeFacts | None] = FactCache(
            self._logged(facts.node), ttl=ttl, capacity=CAPACITY, clock=clock)
        self._failing = False

    @property
    def failed_lookups(self) -> int:
        return self._attempts.failures + self._nodes.failures

    def _logged(self, fetch: Callable[[K], Awaitable[T]]) -> Callable[[K], Awaitable[T]]:
        """``fetch`` saying once when lookups start failing (and when they pass again)."""
        async def logged(key: K) -> T:
            try:
                found = await fetch(key)
            except LookupFailed as exc:
                if not self._failing:
                    log.warning("token standing unknown, accepting on the last known facts "
                                "(or none) until PostgreSQL answers: %s", exc)
                self._failing = True
                raise
            if self._failing:
                log.info("token standing lookups answer again")
            self._failing = False
            return found
        return logged

    async def refusal(self, claims: WorkloadClaims) -> str | None:
        """Why the token's pushes are refused now, or None."""
        member = claims.member
        if claims.node is None:
            known_attempt = await self._attempts.get((member.run_id, member.attempt))
            known_node: Known[NodeFacts | None] | None = None
        else:
            known_attempt, known_node = await asyncio.gather(
                self._attempts.get((member.run_id, member.attempt)),
                self._nodes.get(claims.node))
        attempt: standing.Attempt = UNKNOWN
        if known_attempt is not None:
            found = known_attempt.value
            attempt = None if found is None else found.aged(known_attempt.age)
        node: standing.Node = UNKNOWN if known_node is None else known_node.value
        return standing.refusal(claims, attempt, node, drain_seconds=self._drain)

    async def node_refusal(self, claims: DeliveryClaims) -> str | None:
        """Why a delivery token no longer stands, or None: its attempt was deleted, or the
        node it was issued through no longer stands (an admin's stands until it expires)."""
        known_attempt = await self._attempts.get((claims.member.run_id, claims.member.attempt))
        found = None if known_attempt is None else known_attempt.value
        if found is not None and found.deleted:
            return f"{claims.member} was deleted; its delivery tokens are refused"
        if claims.node is None:
            return None
        known = await self._nodes.get(claims.node)
        node: standing.Node = UNKNOWN if known is None else known.value
        through = (f"delivery token of {claims.member} was issued through node "
                   f"{claims.node}")
        return standing.node_refusal(through, claims.issued_at, node)
