"""A renewed TLS identity reaches new connections while the listener keeps running."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import grpc
import pytest

from tests.support.credentials import served_certificate
from tuneplane.common.gateway.renewal import LiveIdentity
from tuneplane.common.gateway.tls import Authority, TlsIdentity, issue_server, new_authority

NOW = dt.datetime.now(dt.UTC) - dt.timedelta(days=380)  # so the first certificate is due


@pytest.fixture(scope="module")
def authority() -> Authority:
    return new_authority(now=NOW)


def issue(authority: Authority, days_later: int) -> TlsIdentity:
    return issue_server(authority, ["localhost"], now=NOW + dt.timedelta(days=days_later))


@pytest.fixture
async def serving(authority: Authority) -> AsyncIterator[tuple[LiveIdentity, int]]:
    live = LiveIdentity(issue(authority, 0))
    server = grpc.aio.server()
    port = server.add_secure_port("127.0.0.1:0", live.credentials())
    await server.start()
    yield live, port
    await server.stop(0)


async def test_an_update_is_served_to_new_connections(
        serving: tuple[LiveIdentity, int], authority: Authority) -> None:
    live, port = serving
    first = live.current
    assert await asyncio.to_thread(served_certificate, port, authority.certificate_pem) == \
        first.certificate_pem
    renewed = issue(authority, 370)
    assert live.update(renewed)
    assert not live.update(renewed)  # the same certificate again changes nothing
    for _ in range(2):  # handed over once, then kept
        assert await asyncio.to_thread(served_certificate, port,
                                       authority.certificate_pem) == renewed.certificate_pem


async def test_keep_renewed_rereads_and_survives_a_failed_read(
        serving: tuple[LiveIdentity, int], authority: Authority) -> None:
    live, port = serving
    renewed = issue(authority, 371)
    reads = 0

    async def load() -> TlsIdentity:
        nonlocal reads
        reads += 1
        if reads == 1:
            raise ConnectionError("database restarting")
        return renewed

    task = asyncio.create_task(live.keep_renewed(load, every_seconds=0.05))
    try:
        for _ in range(100):
            if live.current == renewed:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
    assert reads >= 2
    assert await asyncio.to_thread(served_certificate, port, authority.certificate_pem) == \
        renewed.certificate_pem
