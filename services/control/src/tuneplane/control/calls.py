"""What every call control serves shares: its context, the policy it is served under, a
pooled connection that a busy pool or an unreachable database turns into UNAVAILABLE, and
the refusal of a call without a usable credential."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias

import asyncpg
import grpc

from tuneplane.common.db import TRANSIENT_ERRORS, Connection
from tuneplane.control.gate import DEFAULT_RATE, CallRate
from tuneplane.node.v1 import node_pb2 as pb

log = logging.getLogger("tuneplane.control")

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


@dataclass(frozen=True, slots=True)
class Policy:
    """What control hands out: collector configuration and token lifetimes."""

    collector: pb.CollectorConfig
    workload_ttl: int = 900
    #: How long a deliver-only credential for a launch's left batches stands.
    delivery_ttl: int = 86400
    node_ttl: int = 30 * 86400
    heartbeat_seconds: int = 5
    db_wait_seconds: float = 5.0
    #: Each node's calls past this rate are refused before any database work (None: no
    #: limit).
    call_rate: CallRate | None = DEFAULT_RATE
    #: Refusals for the call rate held at once (each holds a call slot); past it they are
    #: answered at once.
    max_held: int = 32


@asynccontextmanager
async def pooled(pool: asyncpg.Pool, policy: Policy, context: Context,
                 ) -> AsyncIterator[Connection]:
    """A pooled connection; a busy pool or an unreachable database is UNAVAILABLE (the
    caller backs off and retries), never an internal error."""
    try:
        conn = await pool.acquire(timeout=policy.db_wait_seconds)
    except TimeoutError:
        await context.abort(grpc.StatusCode.UNAVAILABLE,
                            "control database pool busy; retry with backoff")
    except TRANSIENT_ERRORS as exc:
        log.warning("control database unreachable: %s", exc)
        await context.abort(grpc.StatusCode.UNAVAILABLE,
                            "control database unavailable; retry with backoff")
    try:
        yield conn
    except TRANSIENT_ERRORS as exc:
        log.warning("control database connection lost: %s", exc)
        await context.abort(grpc.StatusCode.UNAVAILABLE,
                            "control database unavailable; retry with backoff")
    finally:
        await pool.release(conn)


async def abort_unauthenticated(context: Context, message: str) -> NoReturn:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
    raise AssertionError("unreachable")  # abort raises
