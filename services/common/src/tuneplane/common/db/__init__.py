"""What database code is handed (a connection, or one borrowed from a pool), and which of
its errors pass."""

from __future__ import annotations

import asyncpg
from asyncpg.pool import PoolConnectionProxy

Connection = asyncpg.Connection | PoolConnectionProxy

#: PostgreSQL restarting or unreachable: the same work may succeed later.
TRANSIENT_ERRORS = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
                    asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError)


def starting_with(prefix: str) -> str:
    """A LIKE pattern of the strings that start with ``prefix``, its ``%``, ``_`` and ``\\``
    matched as themselves (PostgreSQL's default escape)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
