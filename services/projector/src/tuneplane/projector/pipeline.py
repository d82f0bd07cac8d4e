"""The projector's pipeline steps: decode (the pure projection) and the group write.

Assembled with a consumer by the live worker (``app``), replays and rebuilds
(``replay``); the loop itself is ``tuneplane.common.kafka.pipeline``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import asyncpg
from botocore.exceptions import BotoCoreError, ClientError
from tenacity import (
    AsyncRetrying,
    before_sleep_log,
    retry_if_exception_type,
    wait_exponential_jitter,
)

from tuneplane.common.db import TRANSIENT_ERRORS
from tuneplane.common.kafka.message import InvalidMessage, Message
from tuneplane.common.kafka.pipeline import Pipeline, Write
from tuneplane.common.kafka.poison import PoisonPolicy
from tuneplane.common.kafka.port import Consumer
from tuneplane.projector.projection import Projection, RecordMeta, project
from tuneplane.projector.writer import PostgresWriter, TooManySeries

log = logging.getLogger("tuneplane.projector")

#: Data PostgreSQL refuses (a value its types cannot hold, a constraint, a row over a
#: limit) and S3 answers that refuse one object: the batch is poison, alone.
UNSTORABLE_ROWS = (asyncpg.DataError, asyncpg.IntegrityConstraintViolationError,
                   asyncpg.ProgramLimitExceededError,
                   # asyncpg refusing a value before sending it (an InterfaceError, which
                   # would otherwise count as the connection failing)
                   asyncpg.exceptions._base.DataError)
UNSTORABLE_OBJECTS = frozenset({"EntityTooLarge", "InvalidArgument", "KeyTooLongError",
                                "InvalidDigest", "BadDigest"})
#: Failures that pass: PostgreSQL or S3 restarting. The group is retried, never skipped.
TRANSIENT = (*TRANSIENT_ERRORS, BotoCoreError,
             # statements prepared against tables a rebuild swapped out: re-prepared on retry
             asyncpg.InvalidCachedStatementError, asyncpg.UndefinedTableError)


def decode(message: Message) -> Projection:
    """The pure step: a record → its projection, or PoisonBatch (an InvalidMessage)."""
    return project(message.value, RecordMeta(message.partition, message.offset, message.key,
                                             message.late))


def unstorable(exc: BaseException) -> bool:
    """PostgreSQL or S3 refusing the data itself: the same write fails every time."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code") in UNSTORABLE_OBJECTS
    return isinstance(exc, (*UNSTORABLE_ROWS, TooManySeries))


def group_write(writer: PostgresWriter, *, retry: bool) -> Write[Projection]:
    """The group write: data the stores refuse raises InvalidMessage (the pipeline then
    finds the batch that carries it); with ``retry``, transient failures are retried until
    they pass."""
    async def once(projections: Sequence[Projection]) -> Sequence[bool]:
        try:
            return await writer.write_group(projections)
        except Exception as exc:
            if unstorable(exc):
                raise InvalidMessage(f"refused by the store: {type(exc).__name__}: {exc}") \
                    from exc
            raise

    async def retried(projections: Sequence[Projection]) -> Sequence[bool]:
        async for attempt in AsyncRetrying(retry=retry_if_exception_type(TRANSIENT),
                                           wait=wait_exponential_jitter(initial=0.2, max=5.0),
                                           before_sleep=before_sleep_log(log, logging.WARNING)):
            with attempt:
                return await once(projections)
        raise AssertionError("unreachable: retries forever")
    return retried if retry else once


def projector_pipeline(consumer: Consumer, write: Write[Projection], poison: PoisonPolicy,
                       max_records: int) -> Pipeline[Projection]:
    return Pipeline(consumer, decode, write, poison, max_records=max_records, within=1.0)
