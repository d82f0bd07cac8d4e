"""Whether a consumer group has passed a point of the topic: each partition's committed
offset at least its end offset as it was when asked. The projectors commit a batch's offset
only once its rows are written, so once their group has passed the end of a partition,
every batch produced onto it before is in the read models. Ingest waits on this before it
answers GetCheckpoints; the tests wait on it before they prove that nothing more arrives."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, TopicPartition

#: partition: (committed, end) of the partitions a group is still behind on.
Behind = dict[int, tuple[int, int]]


class GroupPosition:
    """The committed offsets of ``group`` on the topic, read without joining the group (a
    consumer of that group id that subscribes to nothing takes no partition from it)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.group = group
        self._consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                          enable_auto_commit=False)

    async def start(self) -> None:
        await self._consumer.start()

    async def stop(self) -> None:
        await self._consumer.stop()

    async def passed(self, partitions: list[TopicPartition], *, within: float,
                     poll: float = 0.1) -> Behind:
        """Waits up to ``within`` seconds for the group to commit past the end ``partitions``
        have now; returns where it is still behind (empty: it has passed)."""
        ends = await self._consumer.end_offsets(partitions)
        deadline = asyncio.get_running_loop().time() + within
        while True:
            behind = {tp.partition: (committed, ends[tp]) for tp in partitions
                      if (committed := await self._consumer.committed(tp) or 0) < ends[tp]}
            if not behind or asyncio.get_running_loop().time() >= deadline:
                return behind
            await asyncio.sleep(poll)
