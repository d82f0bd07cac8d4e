"""The fleet's TelemetryDestinations as one store interface with two backends: PostgreSQL
(the API resource, ``tuneplane destinations apply``; ``store``) and Kubernetes (the
TelemetryDestination custom resource, ``tuneplane.exporter.kube``). Both give documents;
what is composed from them is decided here, the same way for both.

``usable`` takes every document that parses and goes with those before it in name order;
any other is refused with the reason (its status says so in Kubernetes). PostgreSQL's
destinations were all checked together when applied, so none is refused there; a custom
resource stored before the admission webhook ran, or conflicting with one applied since,
can be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tuneplane.controlplane.destinations.compose import check_together
from tuneplane.controlplane.destinations.resource import Destination, DestinationError, parse


class DestinationStore(Protocol):
    """Where the fleet's destinations are kept."""

    async def documents(self) -> list[dict[str, Any]]:
        """Every destination's document (apiVersion, kind, metadata, spec)."""
        ...

    async def export_epoch(self, on: bool) -> int:
        """The export epoch, told whether any destination is composed now: it counts the
        times export turned on, so a consumer group started in an older one starts again
        at the topic's end."""
        ...


@dataclass(frozen=True, slots=True)
class Fleet:
    usable: tuple[Destination, ...]
    #: name → why it is not composed (the field's path first).
    refused: dict[str, str] = field(default_factory=dict)


def name_of(document: Any) -> str:
    metadata = document.get("metadata") if isinstance(document, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else "(no name)"


def usable(documents: Sequence[Any]) -> Fleet:
    """The destinations composed from ``documents``: each parses alone, and goes with those
    of smaller names taken before it."""
    taken: list[Destination] = []
    refused: dict[str, str] = {}
    for document in sorted(documents, key=name_of):
        try:
            destination = parse(document, name_of(document))
            check_together([*taken, destination])
        except DestinationError as exc:
            refused[name_of(document)] = str(exc)
            continue
        taken.append(destination)
    return Fleet(tuple(taken), refused)
