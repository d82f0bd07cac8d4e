"""The web's state: its pool gives connections back without asyncpg's reset statement
(``kept_session``), and what a request left open still does not reach the next one."""

from __future__ import annotations

import asyncpg
import pytest

from tests.support.environment import Endpoints
from tuneplane.common.tokens import TokenSigner
from tuneplane.web import state
from tuneplane.web.auth.oidc_settings import OidcSettings
from tuneplane.web.settings import WebSettings


async def test_a_connection_comes_back_without_the_reset_statement_or_an_open_transaction(
        initialised: Endpoints, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = WebSettings(database_url=initialised.database_url,
                           jwt_secret=initialised.jwt_secret, oidc=OidcSettings(), pool_size=1)
    sent: list[str] = []
    original = asyncpg.Connection.execute

    async def watched(self: asyncpg.Connection, query: str, *args: object,
                      timeout: float | None = None) -> str:
        sent.append(query)
        return await original(self, query, *args, timeout=timeout)
    monkeypatch.setattr(asyncpg.Connection, "execute", watched)
    async with state.opened(settings, TokenSigner(settings.jwt_secret)) as web:
        async with web.pool.acquire() as conn:  # the pool's one connection
            backend = await conn.fetchval("SELECT pg_backend_pid()")
            await conn.execute("BEGIN")  # as a request cancelled inside its transaction
            await conn.execute("CREATE TEMP TABLE left_open (n int) ON COMMIT DROP")
            assert conn.is_in_transaction()
        assert sent[-1] == "ROLLBACK", sent  # asyncpg's own, always; no reset statement
        assert not any("RESET ALL" in q or "UNLISTEN" in q for q in sent), sent
        async with web.pool.acquire() as conn:
            assert await conn.fetchval("SELECT pg_backend_pid()") == backend
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT to_regclass('pg_temp.left_open')") is None
