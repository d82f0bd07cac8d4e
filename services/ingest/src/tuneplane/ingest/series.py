"""Distinct series per attempt, bounded (``TUNEPLANE_TELEMETRY_MAX_SERIES``), so one job
cannot create millions of series.

Ingest learns an attempt's series count from the read model (the ``series`` table), read at
most every ``CACHE_SECONDS`` per attempt, plus the series of batches it accepted since the
count was read (counted as if all new: never under). A batch whose distinct series fit
under the bound on top of that passes without a query. One that may not is checked
against the read model as it is now: the series its member already has cost nothing, and if
its new ones would take the attempt past the bound it is refused, naming the first chunk
past it. The read model lags projection by seconds and replicas do not share what they
accepted, so an attempt racing to the bound can pass it by what is in flight; the projector
holds the bound exactly (it dead-letters such a batch alone). When PostgreSQL cannot answer,
the batch passes: a database outage never refuses telemetry (the same rule as
``standing``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from tuneplane.ingest.cache import FactCache, LookupFailed
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

#: Seconds an attempt's series count is kept.
CACHE_SECONDS = 5.0
#: Attempts whose count is kept.
CAPACITY = 100_000

Attempt = tuple[str, int]
Pair = tuple[str, str, str]  # (source, run path, tag): one series of a member


class SeriesFacts(Protocol):
    """Where the counts come from; raises ``LookupFailed`` when it cannot answer now."""

    async def series_count(self, attempt: Attempt) -> int: ...

    async def series_of(self, member: MemberKey, pairs: list[Pair]) -> tuple[int, set[Pair]]:
        """The attempt's series count now, and which of ``pairs`` its member has."""
        ...


def series_in(batch: pb.Batch) -> dict[Pair, int]:
    """The batch's distinct series, each with the index of its first chunk."""
    found: dict[Pair, int] = {}
    for i, chunk in enumerate(batch.chunks):
        found.setdefault((chunk.source, chunk.run_path, chunk.tag), i)
    return found


class SeriesBound:
    def __init__(self, facts: SeriesFacts, limit: int, *, ttl: float = CACHE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._facts = facts
        self._clock = clock
        self._counts: FactCache[Attempt, int] = FactCache(
            facts.series_count, ttl=ttl, capacity=CAPACITY, clock=clock)
        #: Per attempt: when its count was read, and series accepted here since.
        self._added: dict[Attempt, tuple[float, int]] = {}

    async def refusal(self, member: MemberKey, batch: pb.Batch) -> str | None:
        """Why the batch would take its attempt past the bound, or None; a batch that
        passes counts toward its attempt's series from now on."""
        series = series_in(batch)
        if not series:
            return None
        attempt = (member.run_id, member.attempt)
        known = await self._counts.get(attempt)
        if known is None:
            return None  # nothing known: fail open
        since_read, added = self._added.get(attempt, (known.read_at, 0))
        if since_read != known.read_at:
            added = 0  # a fresher count holds what was added before it
        if known.value + added + len(series) > self.limit:
            try:
                count, existing = await self._facts.series_of(member, list(series))
            except LookupFailed:
                return None
            # Against the read model alone: a series accepted here but not yet projected
            # would count twice, and a job logging it again must not be refused for that.
            new = [(pair, index) for pair, index in series.items() if pair not in existing]
            room = max(self.limit - count, 0)
            if len(new) > room:
                (source, run_path, tag), index = new[room]
                run = f"{run_path}:" if run_path else ""
                return (f"chunks[{index}] ({source}/{run}{tag}) would be a new series of run "
                        f"{member.run_id!r} attempt {member.attempt}, which has {count} "
                        f"series: over the bound of {self.limit} "
                        "(TUNEPLANE_TELEMETRY_MAX_SERIES)")
            series = dict(new)
        self._added[attempt] = (known.read_at, added + len(series))
        if len(self._added) > CAPACITY:
            self._added.pop(next(iter(self._added)))
        return None
