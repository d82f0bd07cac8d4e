"""The projector's pipeline steps: decode (the pure projection) and the group write.

Assembled with a consumer by the live worker (``app``), replays and rebuilds
(``replay``); the loop itself is ``tuneplane.common.kafka.pipeline``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import asyncpg
from botocore.exceptions import BotoCoreError
from tenacity import (
    AsyncRetrying,
    before_sleep_log,
    retry_if_exception_type,
    wait_exponential_jitter,
)

from tuneplane.common.db import TRANSIENT_ERRORS
from tuneplane.common.kafka.message import Message
from tuneplane.common.kafka.pipeline import Pipeline, Write
from tuneplane.common.kafka.poison import PoisonPolicy
from tuneplane.common.kafka.port import Consumer
from tuneplane.projector.projection import Projection, RecordMeta, project
from tuneplane.projector.writer import PostgresWriter

log = logging.getLogger("tuneplane.projector")

#: Failures that pass: PostgreSQL or S3 restarting. The group is retried, never skipped.
TRANSIENT = (*TRANSIENT_ERRORS, BotoCoreError,
             # statements prepared against tables a rebuild swapped out: re-prepared on retry
             asyncpg.InvalidCachedStatementError, asyncpg.UndefinedTableError)


def decode(message: Message) -> Projection:
    """The pure step: a record → its projection, or PoisonBatch (an InvalidMessage)."""
    return project(message.value, RecordMeta(message.partition, message.offset, message.key))


def retrying(writer: PostgresWriter) -> Write[Projection]:
    """The group write, retried until it passes while the failure is transient."""
    async def write(projections: Sequence[Projection]) -> Sequence[bool]:
        async for attempt in AsyncRetrying(retry=retry_if_exception_type(TRANSIENT),
                                           wait=wait_exponential_jitter(initial=0.2, max=5.0),
                                           before_sleep=before_sleep_log(log, logging.WARNING)):
            with attempt:
                return await writer.write_group(projections)
        raise AssertionError("unreachable: retries forever")
    return write


def projector_pipeline(consumer: Consumer, write: Write[Projection], poison: PoisonPolicy,
                       max_records: int) -> Pipeline[Projection]:
    return Pipeline(consumer, decode, write, poison, max_records=max_records, within=1.0)
