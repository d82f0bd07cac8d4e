"""A real tuneplane-web process over the real PostgreSQL, and a user token for it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.support import BIN, Endpoints, Process, free_port
from tuneplane.common import users
from tuneplane.common.tokens import TokenSigner


@pytest.fixture(scope="session")
def web(initialised: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    port = free_port()
    process = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                      tmp_path_factory.mktemp("web") / "web.log", ready="Uvicorn running on",
                      port=port)
    yield process
    process.stop()


@pytest.fixture(scope="session")
def user_token(initialised: Endpoints) -> str:
    name = f"tester-{uuid.uuid4().hex[:8]}"

    async def add() -> None:
        conn = await asyncpg.connect(initialised.database_url)
        try:
            await users.add_user(conn, name)
        finally:
            await conn.close()
    asyncio.run(add())
    return users.issue(TokenSigner(initialised.jwt_secret), name, now=time.time(),
                       ttl_seconds=3600)


@pytest.fixture
def base_url(web: Process) -> str:
    return f"http://127.0.0.1:{web.port}"


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    return tmp_path
