"""The ports the consumer pipeline sees: where records come from, where poison goes.

Adapters: ``adapter`` (aiokafka: a consumer group, or a replay of offset ranges),
``tuneplane.projector.faust_consumer`` (the projector's faust-streaming agent) and
``memory`` (an in-memory broker for tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tuneplane.common.kafka.message import Message


class Consumer(Protocol):
    async def poll(self, max_records: int, within: float) -> Sequence[Message]:
        """The next records (at most ``max_records``), in partition order; empty when none
        came within ``within`` seconds (a faust stream: waits until a group is due)."""
        ...

    async def commit(self) -> None:
        """Every record polled so far is processed: a restart resumes after them.

        Called only after their effects are written; a crash before it redelivers them.
        """
        ...


class DeadLetters(Protocol):
    async def send(self, message: Message, reason: str) -> None:
        """Keep ``message`` with ``reason`` where a person can look; returns once kept."""
        ...
