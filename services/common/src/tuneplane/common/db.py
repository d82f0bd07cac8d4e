"""What database code is handed: a connection, or one borrowed from a pool."""

from __future__ import annotations

import asyncpg
from asyncpg.pool import PoolConnectionProxy

Connection = asyncpg.Connection | PoolConnectionProxy
