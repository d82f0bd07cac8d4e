"""The one poison policy every consumer shares.

A poison record goes to the consumer's dead letters with its reason and the partition
keeps flowing. But a bad deploy that finds every record "poison" must not empty the topic
into the DLQ: past ``limit`` poison records in ``window`` seconds the policy raises
``DeadLetterLimit``, the record that crossed the limit is neither dead-lettered nor
committed, and the consumer stops for a person to look.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from tuneplane.common.kafka.message import InvalidMessage, Message
from tuneplane.common.kafka.port import DeadLetters

log = logging.getLogger("tuneplane.poison")


class DeadLetterLimit(Exception):
    """Too many poison records too fast: stop, do not commit, let a person look."""


class DeadLetterGuard:
    """Counts dead letters in a sliding window; ``admit`` refuses the one over the limit."""

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


class StepOver:
    """Dead letters of a consumer that is not the record's keeper: the live projector
    dead-letters every poison record of the batches topic, so replays and the exporter
    log it and step over it."""

    def __init__(self, consumer: str) -> None:
        self._consumer = consumer

    async def send(self, message: Message, reason: str) -> None:
        log.warning("%s: stepping over poison record %s (the projector dead-letters it): %s",
                    self._consumer, message, reason)


class PoisonPolicy:
    """What a consumer does with a record a step raised ``InvalidMessage`` for."""

    def __init__(self, dead_letters: DeadLetters, limit: int | None, *, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._dead_letters = dead_letters
        self._guard = DeadLetterGuard(limit, window) if limit is not None else None
        self._clock = clock
        self.handled = 0

    async def handle(self, message: Message, error: InvalidMessage) -> None:
        """Dead-letter ``message`` with the reason, or raise DeadLetterLimit."""
        if self._guard is not None:
            self._guard.admit(self._clock())
        await self._dead_letters.send(message, str(error))
        self.handled += 1
