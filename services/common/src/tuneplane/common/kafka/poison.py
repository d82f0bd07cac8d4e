"""The one poison policy every consumer shares.

A poison record goes to the consumer's dead letters with its reason and the partition
keeps flowing: poison is one batch's problem. A consumer stops only on a failure no single
tenant can cause: past ``limit`` poison records in ``window`` seconds coming from at least
``runs`` distinct runs (every run's batches turning "poison" at once is the signature of a
bad deploy, which must not empty the topic into the DLQ). Then the record that crossed the
limit is neither dead-lettered nor committed, and the consumer stops for a person to look.
One run's poison, however much, never stops a consumer.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable

from tuneplane.common.kafka.message import InvalidMessage, Message
from tuneplane.common.kafka.port import DeadLetters

log = logging.getLogger("tuneplane.poison")

#: Dead letters remembered at most, whatever the window: one run's flood stays bounded.
REMEMBERED = 100_000


class DeadLetterLimit(Exception):
    """Poison from many runs at once: stop, do not commit, let a person look."""


def run_of(message: Message) -> str:
    """The run a record belongs to, from its key (``run/attempt/member/batch``)."""
    if not message.key:
        return "(no key)"
    return message.key.split(b"/", 1)[0].decode(errors="replace")


class DeadLetterGuard:
    """Counts dead letters and their runs in a sliding window."""

    def __init__(self, limit: int, window: float = 60.0, runs: int = 10) -> None:
        self._limit = limit
        self._window = window
        self._runs = runs
        self._seen: deque[tuple[float, str]] = deque()
        self._by_run: Counter[str] = Counter()

    def _forget_oldest(self) -> None:
        _, run = self._seen.popleft()
        self._by_run[run] -= 1
        if not self._by_run[run]:
            del self._by_run[run]

    def admit(self, now: float, run: str) -> None:
        """Record one dead letter of ``run`` at ``now``, or raise DeadLetterLimit."""
        while self._seen and (self._seen[0][0] <= now - self._window or
                              len(self._seen) >= REMEMBERED):
            self._forget_oldest()
        runs = len(self._by_run) + (run not in self._by_run)
        if len(self._seen) >= self._limit and runs >= self._runs:
            raise DeadLetterLimit(f"more than {self._limit} dead letters in "
                                  f"{self._window:.0f} s from {runs} runs; stopping rather than "
                                  "sending the topic to the DLQ (a bad deploy?)")
        self._seen.append((now, run))
        self._by_run[run] += 1


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
                 runs: int = 10, clock: Callable[[], float] = time.monotonic) -> None:
        self._dead_letters = dead_letters
        self._guard = DeadLetterGuard(limit, window, runs) if limit is not None else None
        self._clock = clock

    async def handle(self, message: Message, error: InvalidMessage) -> None:
        """Dead-letter ``message`` with the reason, or raise DeadLetterLimit."""
        if self._guard is not None:
            self._guard.admit(self._clock(), run_of(message))
        await self._dead_letters.send(message, str(error))
