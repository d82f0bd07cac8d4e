"""The pipeline's ports over a faust-streaming agent: its stream, and the DLQ topic.

Faust runs the consumer group (joins, rebalances, a killed worker's partitions moving to
the others) and commits acknowledged offsets in the background. ``commit`` acknowledges
the polled group's events; faust never commits an event before that.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import faust

from tuneplane.common.kafka.message import Message, dead_letter_headers, late_in

log = logging.getLogger("tuneplane.projector")


class FaustConsumer:
    """The ``Consumer`` port over an agent's stream, in groups of up to ``max_records``
    events gathered for at most ``within`` seconds (fixed when the stream is taken, so
    ``poll``'s own bounds are not used: it waits until faust has a group)."""

    def __init__(self, app: faust.App, stream: faust.StreamT[bytes], max_records: int,
                 within: float) -> None:
        self._app = app
        self._stream = stream
        self._groups: AsyncIterator[Sequence[Any]] = stream.take_events(  # type: ignore[attr-defined]
            max_records, within=within).__aiter__()
        self._pending: Sequence[Any] = ()
        self._lag: dict[int, int] = {}

    async def poll(self, max_records: int, within: float) -> Sequence[Message]:
        self._pending = await self._groups.__anext__()
        return [Message(e.message.partition, e.message.offset, e.message.key,
                        e.message.value, int((e.message.timestamp or 0) * 1000),
                        late_in(e.message.headers))
                for e in self._pending]

    async def commit(self) -> None:
        for event in self._pending:
            await self._stream.ack(event)
            highwater = self._app.consumer.highwater(event.message.tp)
            if highwater is not None:
                self._lag[event.message.partition] = max(0, highwater - event.message.offset - 1)
        self._pending = ()

    def lags(self) -> dict[int, int]:
        """Records behind the high watermark, by partition this worker has seen and still
        has (a rebalance may have moved some away)."""
        mine = {tp.partition for tp in self._app.consumer.assignment()}
        return {p: lag for p, lag in self._lag.items() if p in mine}


class FaustDeadLetters:
    """The dead-letter topic through the agent's app: the record as it was, its reason and
    origin in headers, on the same partition number as its source."""

    def __init__(self, topic: faust.TopicT) -> None:
        self._topic = topic

    async def send(self, message: Message, reason: str) -> None:
        log.error("poison batch at %s to the DLQ: %s", message, reason)
        delivered = await self._topic.send(key=message.key, value=message.value,
                                           partition=message.partition,
                                           headers=dead_letter_headers(message, reason))
        await delivered
