"""TelemetryDestinations in PostgreSQL: apply (create or change, with generations), get,
list and delete. Changes are serialised and checked together with every other
destination, so the fleet's composition is always valid."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tuneplane.common.db import Connection
from tuneplane.destinations.compose import check_together
from tuneplane.destinations.resource import Destination, parse

LOCK = 0x7470_6465_7374  # "tpdest"


@dataclass(frozen=True, slots=True)
class Applied:
    name: str
    generation: int
    result: str  # created | configured | unchanged


def as_stored(document: dict[str, Any], generation: int) -> dict[str, Any]:
    """The document as kept, with metadata.generation set (never part of what is compared)."""
    metadata = {**document["metadata"], "generation": generation}
    return {**document, "metadata": metadata}


def comparable(document: dict[str, Any]) -> str:
    metadata = {k: v for k, v in document["metadata"].items() if k != "generation"}
    return json.dumps({**document, "metadata": metadata})


async def apply(conn: Connection, document: Any, origin: str = "destination") -> Applied:
    destination = parse(document, origin)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK)
        others = [d for d in await load_all(conn) if d.name != destination.name]
        check_together([*others, destination])
        row = await conn.fetchrow("SELECT document::text, generation FROM destinations "
                                  "WHERE name = $1", destination.name)
        if row is not None and comparable(json.loads(row["document"])) == comparable(document):
            return Applied(destination.name, int(row["generation"]), "unchanged")
        generation = 1 if row is None else int(row["generation"]) + 1
        if row is None and not others:  # export turns on for the fleet: a new epoch
            await conn.execute("UPDATE destinations_state SET export_epoch = export_epoch + 1")
        stored = json.dumps(as_stored(document, generation))
        await conn.execute(
            "INSERT INTO destinations (name, document, generation) VALUES ($1, $2::json, $3) "
            "ON CONFLICT (name) DO UPDATE SET document = excluded.document, "
            "generation = excluded.generation, updated_at = now()",
            destination.name, stored, generation)
        await conn.execute("UPDATE destinations_state SET generation = generation + 1")
    return Applied(destination.name, generation, "created" if row is None else "configured")


async def get(conn: Connection, name: str) -> dict[str, Any] | None:
    text = await conn.fetchval("SELECT document::text FROM destinations WHERE name = $1", name)
    return None if text is None else dict(json.loads(text))


async def listing(conn: Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch("SELECT document::text FROM destinations ORDER BY name")
    return [json.loads(row["document"]) for row in rows]


async def load_all(conn: Connection) -> list[Destination]:
    return [parse(document, f"stored destination {document['metadata']['name']}")
            for document in await listing(conn)]


async def delete(conn: Connection, name: str) -> bool:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK)
        gone = await conn.fetchval("DELETE FROM destinations WHERE name = $1 RETURNING 1", name)
        if gone:
            await conn.execute("UPDATE destinations_state SET generation = generation + 1")
    return bool(gone)


async def fleet_generation(conn: Connection) -> int:
    """Changes whenever any destination is applied or deleted (what exporters watch)."""
    return int(await conn.fetchval("SELECT generation FROM destinations_state WHERE id = 1"))


async def export_epoch(conn: Connection) -> int:
    """Counts the times export turned on (the first destination created)."""
    return int(await conn.fetchval("SELECT export_epoch FROM destinations_state WHERE id = 1"))


async def observe(conn: Connection, on: bool) -> int:
    """The export epoch for destinations kept elsewhere (Kubernetes), told whether any is
    composed now: bumped when they appear after none was seen."""
    return int(await conn.fetchval(
        "UPDATE destinations_state SET kubernetes_on = $1, export_epoch = export_epoch + "
        "CASE WHEN $1 AND NOT kubernetes_on THEN 1 ELSE 0 END WHERE id = 1 "
        "RETURNING export_epoch", on))


class PostgresDestinations:
    """The PostgreSQL backend of ``fleet.DestinationStore``."""

    #: ``secretRef`` is not checked: the Secrets the exporter mounts are the deployment's
    #: (Helm: ``exporter.sinkSecrets``), not chosen by the resource.
    secret_prefix: str | None = None

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def documents(self) -> list[dict[str, Any]]:
        return await listing(self._conn)

    async def export_epoch(self, on: bool) -> int:
        return await export_epoch(self._conn)  # bumped by apply() itself


async def group_epoch(conn: Connection, group: str) -> int | None:
    """The export epoch an exporter group started consuming at, if it has."""
    found = await conn.fetchval("SELECT export_epoch FROM exporter_groups WHERE group_id = $1",
                                group)
    return None if found is None else int(found)


async def set_group_epoch(conn: Connection, group: str, epoch: int) -> None:
    await conn.execute("INSERT INTO exporter_groups (group_id, export_epoch) VALUES ($1, $2) "
                       "ON CONFLICT (group_id) DO UPDATE SET export_epoch = excluded.export_epoch",
                       group, epoch)
