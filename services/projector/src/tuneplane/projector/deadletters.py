"""How much may go to the dead-letter topic before the projector stops instead.

A poison batch goes to the DLQ with its reason and the partition keeps flowing. But a
bad deploy that finds every batch "poison" must not empty the topic into the DLQ: past
``limit`` dead letters in ``window`` seconds the guard says stop, and the batch that
crossed the limit is neither dead-lettered nor committed.
"""

from __future__ import annotations

from collections import deque


class DeadLetterLimit(Exception):
    """Too many dead letters too fast: stop, do not commit, let a person look."""


class DeadLetterGuard:
    def __init__(self, limit: int, window: float = 60.0) -> None:
        self._limit = limit
        self._window = window
        self._times: deque[float] = deque()

    def admit(self, now: float) -> None:
        """Record one dead letter at ``now``, or raise DeadLetterLimit."""
        while self._times and self._times[0] <= now - self._window:
            self._times.popleft()
        if len(self._times) >= self._limit:
            raise DeadLetterLimit(f"more than {self._limit} dead letters in "
                                  f"{self._window:.0f} s; stopping rather than sending the "
                                  "topic to the DLQ (a bad deploy?)")
        self._times.append(now)
