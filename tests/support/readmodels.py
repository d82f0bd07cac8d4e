"""Reading and waiting on the PostgreSQL read models."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import asyncpg

from tests.support.kafka import produce
from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Codec
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey


class StoredPoint(NamedTuple):
    member: str
    source: str
    run_path: str
    tag: str
    step: int
    wall_time: float
    value: float
    walls_read: bool


POINTS_OF_RUN = f"""
SELECT s.member, s.source, s.run_path, s.tag, c.walls_read, {stored.SELECTED}
FROM series s JOIN curve_chunks c USING (series_id)
WHERE s.run_id = $1 AND ($2::int IS NULL OR s.attempt = $2)"""


async def stored_points(conn: asyncpg.Connection, run_id: str, attempt: int | None = None,
                        ) -> list[StoredPoint]:
    """Every stored point of a run (of one attempt, if given), duplicates kept, decoded
    from whichever form stores its chunk."""
    codec = Codec()
    found = []
    for row in await conn.fetch(POINTS_OF_RUN, run_id, attempt):
        points = stored.points_of(row, codec)
        found += [StoredPoint(row["member"], row["source"], row["run_path"], row["tag"], step,
                              wall, value, row["walls_read"])
                  for step, wall, value in zip(points.steps.tolist(),
                                               points.wall_times.tolist(),
                                               points.values.tolist(), strict=True)]
    return found


async def curve_points(conn: asyncpg.Connection, run_id: str, attempt: int | None = None,
                       ) -> list[tuple[str, str, str, int, float]]:
    """Every stored point of a run (of one attempt, if given) as (member, source, tag, step,
    value), duplicates kept."""
    return [(p.member, p.source, p.tag, p.step, p.value)
            for p in await stored_points(conn, run_id, attempt)]


async def wait_for_points(conn: asyncpg.Connection, run_id: str, expected: int,
                          timeout: float = 120.0, attempt: int | None = None) -> int:
    """Waits until the run (one attempt of it, if given) has at least ``expected`` points (or
    the timeout); returns the count."""
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        count = await conn.fetchval("""
            SELECT coalesce(sum(c.n), 0) FROM series s JOIN curve_chunks c USING (series_id)
            WHERE s.run_id = $1 AND ($2::int IS NULL OR s.attempt = $2)""", run_id, attempt)
        if count >= expected:
            break
        await asyncio.sleep(0.2)
    return int(count)


class Seen(NamedTuple):
    """When (perf_counter) the first of a count and all of it were seen, and how many the
    first look saw."""
    first: float
    last: float
    at_first: int

    def rate(self, expected: int) -> float:
        """Per second, of what arrived after the first look: a writer that commits in
        groups has a whole group in at the first look, whose time is not in the span."""
        return (expected - self.at_first) / max(self.last - self.first, 1e-6)


async def first_and_last(count: Callable[[], Awaitable[int]], expected: int, what: str,
                         seconds: float = 900.0) -> Seen:
    """Polls ``count`` until it reaches ``expected``; returns when the first and the last
    were seen. For benchmarks: ``Seen.rate`` is the throughput."""
    first, at_first, deadline, seen = 0.0, 0, time.perf_counter() + seconds, 0
    while time.perf_counter() < deadline:
        seen = await count()
        now = time.perf_counter()
        if seen and not first:
            first, at_first = now, seen
        if seen >= expected:
            return Seen(first, now, at_first)
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{seen:,} of {expected:,} {what} after {seconds:.0f} s")


async def projected_behind(conn: asyncpg.Connection, bootstrap: str, member: MemberKey,
                           timeout: float = 120.0) -> None:
    """Returns once every batch of ``member`` already in Kafka is projected: a marker batch
    goes onto the member's partition behind them and is waited for. A member's batches are
    projected in partition order, so no row of an earlier batch can arrive after this."""
    epoch = f"behind-{uuid.uuid4().hex[:8]}"
    marker = pb.Batch(identity=pb.BatchIdentity(run_id=member.run_id, attempt=member.attempt,
                                                member=member.member, spool_epoch=epoch,
                                                sequence=1),
                      sealed_at=time.time(),
                      chunks=[pb.SeriesChunk(source="behind", tag="marker", steps=[0],
                                             wall_times=[0.0], values=[0.0])])
    await produce(bootstrap, [marker])
    deadline = time.monotonic() + timeout
    while not await conn.fetchval(
            "SELECT 1 FROM batch_ledger WHERE run_id = $1 AND attempt = $2 AND member = $3 "
            "AND batch_id = $4", member.run_id, member.attempt, member.member, f"{epoch}-1"):
        assert time.monotonic() < deadline, f"marker batch {epoch}-1 never projected"
        await asyncio.sleep(0.05)
