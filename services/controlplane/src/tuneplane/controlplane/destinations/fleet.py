"""The fleet's TelemetryDestinations as one store interface with two backends: PostgreSQL
(the API resource, ``tuneplane destinations apply``; ``store``) and Kubernetes (the
TelemetryDestination custom resource, ``tuneplane.exporter.kube``). Both give documents;
what is composed from them is decided here, the same way for both.

``usable`` takes every document that parses, composes alone, and goes with those before
it in name order; any other is refused with the reason (its status says so in
Kubernetes), whatever went wrong with it: one resource never stops the others' export.
PostgreSQL's destinations were all checked together when applied, so none is refused
there; a custom resource stored before the admission webhook ran, or conflicting with one
applied since, can be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tuneplane.destinations.compose import check_together, render
from tuneplane.destinations.resource import (
    SECRETS_ROOT,
    Destination,
    DestinationError,
    parse,
)


class DestinationStore(Protocol):
    """Where the fleet's destinations are kept."""

    @property
    def secret_prefix(self) -> str | None:
        """What every sink's ``secretRef`` name starts with (``parse``), or None."""
        ...

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


def composable(document: Any, taken: Sequence[Destination] = (), *,
               secret_prefix: str | None = None,
               secrets_root: str = SECRETS_ROOT) -> Destination:
    """The destination ``document`` holds: parsed (``secret_prefix``: ``parse``), composed
    alone (under ``secrets_root``) and checked with those ``taken``; DestinationError with
    the reason for whatever goes wrong, not only what ``parse`` refuses."""
    name = name_of(document)
    try:
        destination = parse(document, name, secret_prefix=secret_prefix)
        render([destination], secrets_root=secrets_root)
        check_together([*taken, destination])
    except DestinationError:
        raise
    except Exception as exc:  # whatever it is, it is this resource's alone
        raise DestinationError(f"{name}: not composed: {type(exc).__name__}: {exc}") from None
    return destination


def usable(documents: Sequence[Any], *, secret_prefix: str | None = None,
           secrets_root: str = SECRETS_ROOT) -> Fleet:
    """The destinations composed from ``documents``: each is ``composable`` with those of
    smaller names taken before it (with ``secret_prefix`` and ``secrets_root``)."""
    taken: list[Destination] = []
    refused: dict[str, str] = {}
    for document in sorted(documents, key=name_of):
        try:
            taken.append(composable(document, taken, secret_prefix=secret_prefix,
                                    secrets_root=secrets_root))
        except DestinationError as exc:
            refused[name_of(document)] = str(exc)
    return Fleet(tuple(taken), refused)
