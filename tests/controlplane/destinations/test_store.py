"""The two backends' export epoch: PostgreSQL's is bumped by applying the first destination;
one kept elsewhere (Kubernetes) is bumped when destinations are seen after none, and only
then."""

from __future__ import annotations

import copy

import asyncpg

from tests.destinations.test_resource import VALID
from tuneplane.controlplane.destinations import store


async def test_kubernetes_destinations_bump_the_epoch_when_they_appear(
        db: asyncpg.Connection) -> None:
    await store.observe(db, False)
    start = await store.export_epoch(db)
    seen = [await store.observe(db, on) for on in (False, True, True, False, False, True)]
    assert seen == [start, start + 1, start + 1, start + 1, start + 1, start + 2]
    await store.observe(db, False)


async def test_the_postgresql_backend_gives_the_stored_documents(db: asyncpg.Connection) -> None:
    document = copy.deepcopy(VALID)
    document["metadata"]["name"] = "store-backend-test"
    document["spec"]["sinks"][0]["name"] = "store-backend-sink"
    backend = store.PostgresDestinations(db)
    before = await store.export_epoch(db)
    try:
        await store.apply(db, document)
        names = [d["metadata"]["name"] for d in await backend.documents()]
        assert "store-backend-test" in names
        assert await backend.export_epoch(True) >= before
    finally:
        await store.delete(db, "store-backend-test")
