"""The consumer pipeline: poll → decode (pure) → write → commit, one group at a time.

Every consumer of the batches topic (the projector, replay and rebuild, the exporter) is
this loop with its own steps:

- ``decode`` is pure: record → typed value, or ``InvalidMessage`` for poison, which goes
  to the poison policy instead of stopping the partition;
- ``write`` applies the group's values in one go and says, per value, whether it had an
  effect (False: a duplicate the write already held); failures that may pass are retried
  inside it, so when it raises the group is not done. When it raises ``InvalidMessage``
  (one of the values can never be stored, it cannot tell which), the group is written
  again one value at a time and the values that still fail are poison, alone;
- ``commit`` comes last: only after ``write`` returned are the group's records committed,
  so a crash anywhere before redelivers them and the idempotent write drops what it has.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tuneplane.common.kafka.message import InvalidMessage, Message
from tuneplane.common.kafka.poison import PoisonPolicy
from tuneplane.common.kafka.port import Consumer

T = TypeVar("T")
Decode = Callable[[Message], T]
Write = Callable[[Sequence[T]], Awaitable[Sequence[bool]]]


@dataclass(slots=True)
class Group(Generic[T]):
    """What one turn of the pipeline did."""

    messages: Sequence[Message] = ()
    written: list[tuple[T, bool]] = field(default_factory=list)  # (value, applied)
    poison: int = 0

    @property
    def applied(self) -> int:
        return sum(1 for _, fresh in self.written if fresh)

    @property
    def duplicates(self) -> int:
        return len(self.written) - self.applied


class Pipeline(Generic[T]):
    def __init__(self, consumer: Consumer, decode: Decode[T], write: Write[T],
                 poison: PoisonPolicy, *, max_records: int = 256,
                 within: float = 0.5) -> None:
        self.consumer = consumer
        self._decode = decode
        self._write = write
        self._poison = poison
        self._max_records = max_records
        self._within = within

    async def run_once(self) -> Group[T]:
        """Process the next group of records; an empty group when none came in time."""
        messages = await self.consumer.poll(self._max_records, self._within)
        group: Group[T] = Group(messages)
        decoded: list[tuple[Message, T]] = []
        for message in messages:
            try:
                decoded.append((message, self._decode(message)))
            except InvalidMessage as exc:
                await self._poison.handle(message, exc)
                group.poison += 1
        if decoded:
            values = [value for _, value in decoded]
            try:
                applied = await self._write(values)
                group.written = list(zip(values, applied, strict=True))
            except InvalidMessage:
                await self._write_alone(decoded, group)
        if messages:
            await self.consumer.commit()  # last: the group's effects are written
        return group

    async def _write_alone(self, decoded: list[tuple[Message, T]], group: Group[T]) -> None:
        """Each value in a write of its own: poison is one record's problem, never its
        group's."""
        for message, value in decoded:
            try:
                (fresh,) = await self._write([value])
            except InvalidMessage as exc:
                await self._poison.handle(message, exc)
                group.poison += 1
                continue
            group.written.append((value, fresh))
