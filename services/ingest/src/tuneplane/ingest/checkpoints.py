"""GetCheckpoints: where a collector beginning a new spool for a member resumes its sources.

The read models keep each member's highest source position per file (the projector, from
the position each batch carries). They are an answer only once they hold every batch of
the member that Kafka holds: a member's batches are on one partition, so the first page
waits until the projectors' group has committed past that partition's end as it was when
asked (``GroupPosition.passed``), within ``wait`` seconds; else the call is UNAVAILABLE
and the collector asks again. A checkpoint older than what was made durable would have the
new spool read again, as new batch identities, what is already stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final, Protocol

import asyncpg
from aiokafka import TopicPartition

from tuneplane.common.kafka import topics
from tuneplane.common.kafka.committed import GroupPosition
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

#: Positions of one page at most, and the bytes they may take together (the reply stays
#: well within the 4 MiB a collector decodes).
PAGE_POSITIONS: Final = 500
PAGE_BYTES: Final = 2 * 1024 * 1024
#: What a position takes on the wire beside its strings, at most.
POSITION_OVERHEAD: Final = 64

#: The next page's keys and sizes first: a page's rows are read only once it is cut.
SIZES = """
SELECT source, file, octet_length(source) + octet_length(file) + octet_length(fingerprint)
                     + octet_length(state) AS size
FROM source_checkpoints
WHERE run_id = $1 AND attempt = $2 AND member = $3 AND (source, file) > ($4, $5)
ORDER BY source, file LIMIT $6
"""

PAGE = """
SELECT source, file, fingerprint, generation, "offset", line, state FROM source_checkpoints
WHERE run_id = $1 AND attempt = $2 AND member = $3 AND (source, file) > ($4, $5)
  AND (source, file) <= ($6, $7)
ORDER BY source, file
"""

#: The spool epochs the member's checkpoints come from.
EPOCHS = """
SELECT DISTINCT spool_epoch FROM source_checkpoints
WHERE run_id = $1 AND attempt = $2 AND member = $3 ORDER BY 1
"""


#: Seconds past the wait a look at Kafka may still take (the last poll of the group's
#: committed offsets) before the answer is UNAVAILABLE.
ANSWER_MARGIN: Final = 1.0


class Behind(Exception):
    """The read models do not hold every batch of the member yet; ask again."""


class Partitioner(Protocol):
    def partition_of(self, member: MemberKey) -> int: ...


def cut(sizes: Sequence[int]) -> tuple[int, bool]:
    """How many of the next positions (their sizes in order) one page takes, and whether
    more follow: at least one, within PAGE_BYTES and PAGE_POSITIONS."""
    taken, total = 0, 0
    for size in sizes[:PAGE_POSITIONS]:
        total += size + POSITION_OVERHEAD
        if total > PAGE_BYTES and taken:
            return taken, True
        taken += 1
    return taken, len(sizes) > taken


class Checkpoints:
    def __init__(self, pool: asyncpg.Pool, projected: GroupPosition, partitioner: Partitioner,
                 *, wait: float) -> None:
        self._pool = pool
        self._projected = projected
        self._partitioner = partitioner
        self._wait = wait
        #: Every connection of the pool but one: a token's standing lookup never waits
        #: behind checkpoints (ingest's pool is small).
        self._slots = asyncio.Semaphore(max(pool.get_max_size() - 1, 1))

    async def page(self, member: MemberKey,
                   request: pb.GetCheckpointsRequest) -> pb.GetCheckpointsReply:
        first = not (request.after_source or request.after_file)
        if first:
            partition = self._partitioner.partition_of(member)
            try:  # the whole look within the wait: Kafka down, its calls would hang longer
                async with asyncio.timeout(self._wait + ANSWER_MARGIN):
                    behind = await self._projected.passed(
                        [TopicPartition(topics.BATCHES, partition)], within=self._wait)
            except TimeoutError:
                raise Behind(f"Kafka did not say where partition {partition} ends within "
                             f"{self._wait:g} s; ask again") from None
            if behind:
                committed, end = behind[partition]
                raise Behind(f"the read models are behind Kafka on partition {partition} "
                             f"(group {self._projected.group} committed {committed} of {end}); "
                             "ask again")
        ids = (member.run_id, member.attempt, member.member)
        after = (request.after_source, request.after_file)
        async with self._slots, self._pool.acquire() as conn:
            sizes = await conn.fetch(SIZES, *ids, *after, PAGE_POSITIONS + 1)
            taken, more = cut([row["size"] for row in sizes])
            rows = []
            if taken:
                last = sizes[taken - 1]
                rows = await conn.fetch(PAGE, *ids, *after, last["source"], last["file"])
            epochs = [r["spool_epoch"] for r in await conn.fetch(EPOCHS, *ids)] if first else []
        return pb.GetCheckpointsReply(
            spool_epochs=epochs, more=more,
            positions=[pb.SourcePosition(
                source=r["source"], file=r["file"], fingerprint=r["fingerprint"],
                generation=r["generation"], offset=r["offset"], line=r["line"],
                state=r["state"]) for r in rows])
