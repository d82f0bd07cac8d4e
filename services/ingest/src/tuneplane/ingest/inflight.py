"""PushBatch calls in flight per member (what one workload token is bound to) and per run
(all of its attempts' members together), so neither one member nor a run of many members
can hold all of ingest's call slots: past either limit, a call is refused at once and the
collector retries it (RESOURCE_EXHAUSTED is backpressure, never a refusal of the batch).

Counted per member rather than per token string: a renewed token is the same member.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from tuneplane.telemetry.v1.identity import MemberKey

K = TypeVar("K")


class TooManyCalls(Exception):
    """The member or its run already has its limit of calls in flight; the message says
    which."""


class CallsInFlight:
    def __init__(self, limit: int, run_limit: int | None = None) -> None:
        """``limit`` calls per member, ``run_limit`` per run (None: no bound per run)."""
        for what, value in (("per member", limit), ("per run", run_limit)):
            if value is not None and value < 1:
                raise ValueError(f"calls in flight {what} must be 1 or more, not {value}")
        self.limit = limit
        self.run_limit = run_limit
        self._members: Counter[MemberKey] = Counter()
        self._runs: Counter[str] = Counter()

    def busy(self, member: MemberKey) -> str | None:
        """Why one more call of ``member`` is turned away now, or None."""
        count = self._members[member]
        if count >= self.limit:
            return (f"member {member} already has {count} PushBatch calls in flight (at most "
                    f"{self.limit} per workload token); retry when one is answered")
        runs = self._runs[member.run_id]
        if self.run_limit is not None and runs >= self.run_limit:
            return (f"run {member.run_id!r} already has {runs} PushBatch calls in flight "
                    f"across its members (at most {self.run_limit} per run); retry when one "
                    "is answered")
        return None

    def of(self, member: MemberKey) -> int:
        return self._members[member]

    def of_run(self, run_id: str) -> int:
        return self._runs[run_id]

    @contextmanager
    def held(self, member: MemberKey) -> Iterator[None]:
        """One call of ``member`` for the block; raises TooManyCalls without waiting."""
        busy = self.busy(member)
        if busy is not None:
            raise TooManyCalls(busy)
        self._members[member] += 1
        self._runs[member.run_id] += 1
        try:
            yield
        finally:
            release(self._members, member)
            release(self._runs, member.run_id)


def release(counter: Counter[K], key: K) -> None:
    """One less of ``key``; a key at zero is dropped, so idle members cost nothing."""
    counter[key] -= 1
    if not counter[key]:
        del counter[key]
