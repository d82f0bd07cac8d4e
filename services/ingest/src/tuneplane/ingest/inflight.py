"""PushBatch calls in flight per member (what one workload token is bound to), so one member
cannot hold all of ingest's call slots: past ``limit``, a call is refused at once and the
collector retries it (RESOURCE_EXHAUSTED is backpressure, never a refusal of the batch).

Counted per member rather than per token string: a renewed token is the same member.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tuneplane.telemetry.v1.identity import MemberKey


class TooManyCalls(Exception):
    """The member already has ``limit`` calls in flight; the message names it."""


class CallsInFlight:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"calls in flight per member must be 1 or more, not {limit}")
        self.limit = limit
        self._counts: dict[MemberKey, int] = {}

    def busy(self, member: MemberKey) -> str | None:
        """Why one more call of ``member`` is turned away now, or None."""
        count = self._counts.get(member, 0)
        if count < self.limit:
            return None
        return (f"member {member} already has {count} PushBatch calls in flight (at most "
                f"{self.limit} per workload token); retry when one is answered")

    def of(self, member: MemberKey) -> int:
        return self._counts.get(member, 0)

    @contextmanager
    def held(self, member: MemberKey) -> Iterator[None]:
        """One call of ``member`` for the block; raises TooManyCalls without waiting."""
        busy = self.busy(member)
        if busy is not None:
            raise TooManyCalls(busy)
        self._counts[member] = self._counts.get(member, 0) + 1
        try:
            yield
        finally:
            left = self._counts[member] - 1
            if left:
                self._counts[member] = left
            else:
                del self._counts[member]
