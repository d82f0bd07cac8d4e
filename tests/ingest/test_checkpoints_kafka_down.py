"""GetCheckpoints when Kafka does not answer (no server): the look at where the member's
partition ends is bounded by the checkpoint wait, and the answer is UNAVAILABLE (``Behind``)
with the reason, not a call that hangs past the collector's own timeout."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import asyncpg
import pytest
from aiokafka import TopicPartition

from tuneplane.common.kafka.committed import GroupPosition
from tuneplane.ingest.checkpoints import ANSWER_MARGIN, Behind, Checkpoints
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey


class Pool:
    def get_max_size(self) -> int:
        return 4


class Unanswered:
    """A group position whose Kafka never answers (its broker is down)."""

    group = "projectors"

    async def passed(self, partitions: list[TopicPartition], *, within: float,
                     poll: float = 0.1) -> dict[int, tuple[int, int]]:
        await asyncio.sleep(3600)
        return {}


class OnePartition:
    def partition_of(self, member: MemberKey) -> int:
        return 7


async def test_kafka_that_does_not_answer_is_unavailable_within_the_wait() -> None:
    checkpoints = Checkpoints(cast(asyncpg.Pool, Pool()), cast(GroupPosition, Unanswered()),
                              OnePartition(), wait=0.2)
    started = time.monotonic()
    with pytest.raises(Behind, match=r"^Kafka did not say where partition 7 ends within "
                                     r"0\.2 s; ask again$"):
        await checkpoints.page(MemberKey("r", 1, "rank-0"), pb.GetCheckpointsRequest())
    assert time.monotonic() - started < 0.2 + ANSWER_MARGIN + 1.0
