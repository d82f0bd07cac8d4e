"""An in-memory broker: partitions, consumer groups and dead letters, for tests.

Behaves like the batches topic for what the pipeline relies on: records stay in
partition order, a group resumes after its last commit, and what was polled but not
committed is delivered again to the group's next consumer (a restart).
"""

from __future__ import annotations

from collections.abc import Sequence

from tuneplane.common.kafka.message import Message


class MemoryBroker:
    def __init__(self, partitions: int = 1) -> None:
        self.partitions: list[list[Message]] = [[] for _ in range(partitions)]
        self.committed: dict[str, dict[int, int]] = {}  # group → partition → next offset

    def produce(self, value: bytes, key: bytes | None = None, partition: int = 0) -> Message:
        log = self.partitions[partition]
        message = Message(partition, len(log), key, value)
        log.append(message)
        return message

    def consumer(self, group: str) -> MemoryConsumer:
        """A new member of ``group``, starting at the group's committed offsets."""
        return MemoryConsumer(self, group)


class MemoryConsumer:
    """The ``Consumer`` port over a ``MemoryBroker``; ``commit`` commits every poll."""

    def __init__(self, broker: MemoryBroker, group: str) -> None:
        self._broker = broker
        self._group = group
        committed = broker.committed.get(group, {})
        self._positions = [committed.get(p, 0) for p in range(len(broker.partitions))]

    async def poll(self, max_records: int, within: float) -> Sequence[Message]:
        taken: list[Message] = []
        for partition, log in enumerate(self._broker.partitions):
            start = self._positions[partition]
            batch = log[start:start + max_records - len(taken)]
            taken.extend(batch)
            self._positions[partition] = start + len(batch)
        return taken

    async def commit(self) -> None:
        self._broker.committed[self._group] = dict(enumerate(self._positions))


class MemoryDeadLetters:
    def __init__(self) -> None:
        self.kept: list[tuple[Message, str]] = []

    async def send(self, message: Message, reason: str) -> None:
        self.kept.append((message, reason))
