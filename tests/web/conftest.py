"""A real tuneplane-web process over the real PostgreSQL, and a user token for it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.support import BIN, Endpoints, Process, free_port
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import users


@pytest.fixture(scope="session")
def web(initialised: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    port = free_port()
    process = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                      tmp_path_factory.mktemp("web") / "web.log", ready="Uvicorn running on",
                      port=port)
    yield process
    process.stop()


def new_user_token(endpoints: Endpoints, prefix: str, *, admin: bool = False) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"

    async def add() -> None:
        conn = await asyncpg.connect(endpoints.database_url)
        try:
            await users.add_user(conn, name, admin=admin)
        finally:
            await conn.close()
    asyncio.run(add())
    return users.issue(TokenSigner(endpoints.jwt_secret), name, now=time.time(),
                       ttl_seconds=3600)


@pytest.fixture(scope="session")
def user_token(initialised: Endpoints) -> str:
    return new_user_token(initialised, "tester")


@pytest.fixture(scope="session")
def admin_token(initialised: Endpoints) -> str:
    return new_user_token(initialised, "admin", admin=True)


@pytest.fixture
async def client(base_url: str, user_token: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API as a (non-admin) user."""
    async with httpx.AsyncClient(base_url=base_url, timeout=60,
                                 headers={"Authorization": f"Bearer {user_token}"}) as c:
        yield c


@pytest.fixture
async def admin(base_url: str, admin_token: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API as an admin."""
    async with httpx.AsyncClient(base_url=base_url, timeout=60,
                                 headers={"Authorization": f"Bearer {admin_token}"}) as c:
        yield c


@pytest.fixture
def base_url(web: Process) -> str:
    return f"http://127.0.0.1:{web.port}"


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    return tmp_path
