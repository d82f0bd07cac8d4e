"""Credentials for tests: workload and user tokens, the served certificate."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
import time
import uuid
from pathlib import Path

import asyncpg
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from tests.support.environment import Endpoints
from tuneplane.common.tokens import TokenSigner
from tuneplane.controlplane import api_tokens, projects, users
from tuneplane.telemetry.v1.identity import MemberKey


def workload_token(endpoints: Endpoints, member: MemberKey, path: Path, ttl: int = 3600) -> Path:
    path.write_text(TokenSigner(endpoints.jwt_secret).issue_workload(
        member, now=time.time(), ttl_seconds=ttl))
    return path


def served_certificate(port: int, ca_pem: bytes) -> bytes:
    """The certificate a new TLS connection to the port is given (PEM), verified by the CA."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock, \
            context.wrap_socket(sock, server_hostname="localhost") as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).public_bytes(Encoding.PEM)


async def add_user(conn: asyncpg.Connection, prefix: str, *, admin: bool = False,
                   roles: dict[str, str] | None = None) -> str:
    """A new user named ``<prefix>-<random>`` holding ``roles`` (project: role name; each
    project made if missing); returns its name."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await users.add_user(conn, name, admin=admin)
    for project, role in (roles or {}).items():
        if not await projects.exists(conn, project):
            await projects.create(conn, project)
        await projects.grant(conn, project, name, projects.Role.named(role))
    return name


async def user_token(conn: asyncpg.Connection, endpoints: Endpoints, prefix: str, *,
                     admin: bool = False, roles: dict[str, str] | None = None) -> str:
    """A token of a new user (``add_user``), from within a running event loop."""
    name = await add_user(conn, prefix, admin=admin, roles=roles)
    _, token, _ = await api_tokens.issue(conn, TokenSigner(endpoints.jwt_secret), name,
                                         name="tests", now=dt.datetime.now(dt.UTC))
    return token


def new_user_token(endpoints: Endpoints, prefix: str, *, admin: bool = False,
                   roles: dict[str, str] | None = None) -> str:
    """``user_token`` from synchronous code (session fixtures)."""
    async def add() -> str:
        conn = await asyncpg.connect(endpoints.database_url)
        try:
            return await user_token(conn, endpoints, prefix, admin=admin, roles=roles)
        finally:
            await conn.close()
    return asyncio.run(add())
